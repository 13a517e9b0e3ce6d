"""Probe (GPU only): where minigrad's conv2d time goes on the bench's 32x64x56x56 3x3 pad-1 case.

Times, with CUDA events: minigrad's conv2d; torch's with its default numerics (cuDNN, TF32
allowed) and with TF32 off; torch's own im2col (`unfold`) of the same input; and the product
minigrad runs after its im2col (per chunk of 9 images: [64, 576] @ [576, 3136] for each image,
as one batched SGEMM). Usage: python3 scripts/gpu-probe-conv.py
"""


import torch

import minigrad as mg
import minigrad.nn.functional as F
from minigrad.bench.suites.gpu import event_median_us


def time_us(fn, calls=10):
    return event_median_us(fn, calls)


def main():
    n, c, hw, cout = 32, 64, 56, 64
    x = torch.randn(n, c, hw, hw, device="cuda")
    w = torch.randn(cout, c, 3, 3, device="cuda")
    mx, mw = mg.from_dlpack(x), mg.from_dlpack(w)
    cols = torch.randn(9, c * 9, hw * hw, device="cuda")
    wb = w.reshape(cout, -1).expand(9, cout, c * 9)
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = {}
    rows["minigrad conv2d"] = time_us(lambda: F.conv2d(mx, mw, padding=1))
    torch.backends.cudnn.allow_tf32 = True
    rows["torch conv2d (cuDNN, TF32: torch's default)"] = time_us(lambda: torch.nn.functional.conv2d(x, w, padding=1))
    torch.backends.cudnn.allow_tf32 = False
    rows["torch conv2d (cuDNN, TF32 off)"] = time_us(lambda: torch.nn.functional.conv2d(x, w, padding=1))
    rows["torch unfold (im2col) of the batch"] = time_us(lambda: torch.nn.functional.unfold(x, 3, padding=1))
    rows["SGEMM 9 x [64,576]@[576,3136], x4 chunks (minigrad's products)"] = 4 * time_us(lambda: torch.bmm(wb, cols))
    for name, us in rows.items():
        print(f"{name:66s} {us:8.1f} us")


if __name__ == "__main__":
    main()
