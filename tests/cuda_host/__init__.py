"""Host build of the CUDA kernels for tests: the g++ shim, the ctypes launcher, shared checks."""
