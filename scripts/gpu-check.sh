#!/usr/bin/env bash
# The GPU verification run (docs/gpu.md, "Run on a GPU"): on a machine with an NVIDIA GPU, CuPy
# and torch but no Rust toolchain and no network. It uses the extension built here for that
# machine's Python (python/minigrad/_C.cpython-3XX-*.so) and the wheels in wheels/ for missing
# test tools, runs the CUDA tests against torch and the GPU benchmark, and writes everything
# under $OUT (default ./gpu-out).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-$PWD/gpu-out}"
mkdir -p "$OUT"
export PYTHONPATH="$PWD/python" MINIGRAD_TORCH_PIN=any CUPY_CACHE_DIR="${CUPY_CACHE_DIR:-/tmp/minigrad-cupy-cache}"
exec > >(tee "$OUT/log.txt") 2>&1
step() { echo; echo "== $* ($(date +%T))"; }

step machine
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv 2>&1 | head -3
python3 - <<'PY'
import sys, torch, cupy
print("python", sys.version.split()[0], "| torch", torch.__version__, "cuda", torch.version.cuda,
      "| cupy", cupy.__version__, "| runtime", cupy.cuda.runtime.runtimeGetVersion())
PY
if ! python3 -c "import pytest, hypothesis, rich, safetensors" 2>/dev/null && [ -d wheels ]; then
    step "test tools from wheels/ (the machine lacks one of pytest, hypothesis, rich, safetensors)"
    python3 -m pip install --quiet --no-index --find-links wheels pytest hypothesis rich safetensors 2>&1 | tail -2
fi
# several test processes share the GPU when pytest-xdist is there: NVRTC's first compiles of
# each kernel group (a cold CuPy cache) dominate a serial run, and they compile in parallel
XDIST=""
python3 -c "import xdist" 2>/dev/null && XDIST="-n ${TEST_WORKERS:-8}"

step "minigrad on the GPU"
python3 - <<'PY'
import time, minigrad as mg
t = time.perf_counter()
print("available:", mg.cuda.is_available(), mg.cuda.why_unavailable(), "|", mg.cuda.get_device_name())
x = mg.arange(6.0, device="cuda").reshape(2, 3)
print((x * 2 + 1).relu().sum(dim=1).tolist(), "first kernels (compile included): %.2f s" % (time.perf_counter() - t))
PY

step "CUDA tests (tests/test_cuda_*.py that run on the device) against torch ${XDIST:+($XDIST)}"
timeout "${TEST_TIMEOUT:-300}" python3 -m pytest tests/test_cuda_backend*.py tests/test_cuda_random.py tests/test_cuda_launch.py \
    tests/test_cuda_losses.py tests/test_cuda_optim.py tests/test_cuda_small_dtypes.py $XDIST -q -p no:cacheprovider --maxfail=40 -rfs \
    --junitxml="$OUT/junit.xml" --durations=5 > "$OUT/pytest.txt" 2>&1
echo "pytest rc=$?"
grep -E '^(FAILED|ERROR|SKIPPED)|^E  +[A-Z]|passed|failed|^[0-9.]+s ' "$OUT/pytest.txt" | cut -c1-300 | head -80

step "per-op path: c = a + b on one element, minigrad / torch / CuPy, and its parts (scripts/perop.py)"
timeout "${PEROP_TIMEOUT:-90}" python3 scripts/perop.py gpu --ops 20000 --json "$OUT/perop.json" 2>&1 | tail -12
echo "perop rc=${PIPESTATUS[0]}"

step "minigrad bench gpu ${BENCH_ARGS---quick}"
timeout "${BENCH_TIMEOUT:-150}" python3 -m minigrad bench gpu ${BENCH_ARGS---quick} --no-progress --json "$OUT/bench_gpu.json" 2>&1 | tail -40
echo "bench rc=${PIPESTATUS[0]}"
step done
