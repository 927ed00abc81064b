# SPDX-License-Identifier: MIT
"""Softmax, log-softmax and the softmax backward against PyTorch in float64, along the last
dimension, every float type, odd row lengths, every version, and the special rows (masks, NaN)."""
import pytest

from _common import DEV, FLOATS, assert_close, generator, gpuops, torch, uniform

VERSIONS = ["auto", "three-pass", "online"]
SHAPES = [(1, 1), (3, 7), (5, 1000), (2, 4097), (3, 2, 33), (2, 65537), (64, 1024)]
# tests/test_softmax.cu's tolerances: forward and log-softmax (atol, rtol) per type.
FWD = {torch.float32: (1e-12, 3e-5), torch.float16: (1e-7, 2e-3), torch.bfloat16: (1e-30, 1.6e-2)}
LOG = {torch.float32: (3e-6, 3e-5), torch.float16: (1e-4, 2e-3), torch.bfloat16: (1e-3, 1.6e-2)}


@pytest.mark.parametrize("algo", VERSIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_forward(shape, dtype, algo):
    x = uniform(shape, dtype, -8, 8, generator("softmax", shape, dtype, algo))
    assert_close(gpuops.softmax(x, algo=algo), torch.softmax(x.double(), -1), *FWD[dtype], what=f"softmax {shape}")
    assert_close(gpuops.log_softmax(x, algo=algo), torch.log_softmax(x.double(), -1), *LOG[dtype],
                 what=f"log_softmax {shape}")


@pytest.mark.parametrize("algo", VERSIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_backward(shape, dtype, algo):
    gen = generator("softmax bwd", shape, dtype, algo)
    y = torch.softmax(uniform(shape, torch.float64, -8, 8, gen), -1).to(dtype)
    dy = uniform(shape, dtype, -1, 1, gen)
    yd, dyd = y.double(), dy.double()
    s = (dyd * yd).sum(-1, keepdim=True)
    want = yd * (dyd - s)
    eps = 1e-6 if dtype == torch.float32 else 1e-3
    # s's rounding error scales with sum |dy y|, not |s| (the sum may cancel): dx_i = y_i (dy_i - s)
    bound = yd * (dyd.abs() + (dyd * yd).abs().sum(-1, keepdim=True)) * eps + 1e-30
    rtol = FWD[dtype][1]
    assert_close(gpuops.softmax_backward(dy, y, algo=algo), want, 1.0, rtol, scale=bound, what=f"softmax_bwd {shape}")


def test_special_rows():
    x = torch.randn(4, 300, device=DEV)
    x[0] = float("-inf")  # a fully masked row: zeros (gpuops' choice; PyTorch gives NaN)
    x[1, :100] = float("-inf")
    x[2, 7] = float("nan")
    y = gpuops.softmax(x)
    assert torch.equal(y[0], torch.zeros_like(y[0]))
    assert_close(y[1], torch.softmax(x[1].double(), -1), 1e-12, 3e-5)
    assert torch.isnan(y[2]).all()
    assert_close(y[3], torch.softmax(x[3].double(), -1), 1e-12, 3e-5)
