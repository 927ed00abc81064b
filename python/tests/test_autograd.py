# SPDX-License-Identifier: MIT
"""Gradients through gpuops' autograd formulas against torch.autograd on float64 copies of the same
inputs: every op with a backward, odd shapes."""
import pytest

from _common import DEV, TOL, assert_close, generator, gpuops, torch, uniform

F = torch.nn.functional

# name -> (gpuops function, PyTorch function, shapes of the inputs, input range, float32 tolerance)
CASES = {
    "gelu": (lambda x: gpuops.gelu(x), lambda x: F.gelu(x), [(7, 129)], 6),
    "gelu_tanh": (lambda x: gpuops.gelu(x, "tanh"), lambda x: F.gelu(x, approximate="tanh"), [(7, 129)], 6),
    "silu": (gpuops.silu, F.silu, [(1000,)], 10),
    "relu": (gpuops.relu, torch.relu, [(1001,)], 1),
    "sigmoid": (gpuops.sigmoid, torch.sigmoid, [(3, 333)], 12),
    "tanh": (gpuops.tanh, torch.tanh, [(3, 333)], 6),
    "add": (gpuops.add, torch.add, [(5, 17), (5, 17)], 10),
    "add_scalar": (lambda x: gpuops.add_scalar(x, 1.5), lambda x: x + 1.5, [(99,)], 10),
    "add_mul_exp": (lambda x, z: gpuops.add_mul_exp(x, z, 0.75), lambda x, z: torch.exp((x + z) * 0.75),
                    [(3, 100), (3, 100)], 0.5),
    "softmax": (gpuops.softmax, lambda x: torch.softmax(x, -1), [(6, 1000)], 8),
    "log_softmax": (gpuops.log_softmax, lambda x: torch.log_softmax(x, -1), [(6, 1000)], 8),
    "sum": (gpuops.sum, lambda x: x.sum(), [(3, 77)], 1),
    "sum_rows": (lambda x: gpuops.sum(x, dim=-1), lambda x: x.sum(-1), [(3, 77)], 1),
    "cumsum": (gpuops.cumsum, lambda x: torch.cumsum(x, -1), [(3000,)], 1),
    "cumsum_rows_exclusive": (lambda x: gpuops.cumsum(x, exclusive=True),
                              lambda x: torch.cumsum(x, -1) - x, [(4, 300)], 1),
    "transpose": (gpuops.transpose, lambda x: x.t(), [(33, 65)], 1),
    "matmul": (lambda a, b: gpuops.matmul(a, b, alpha=0.5), lambda a, b: 0.5 * a @ b, [(17, 40), (40, 23)], 1),
    "conv2d": (lambda x, w, b: gpuops.conv2d(x, w, b, stride=2, padding=1),
               lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1), [(2, 3, 9, 7), (5, 3, 3, 3), (5,)], 1),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name", list(CASES))
def test_gradient(name, dtype):
    ours, theirs, shapes, r = CASES[name]
    if dtype != torch.float32 and name in ("cumsum", "cumsum_rows_exclusive", "matmul", "transpose", "conv2d"):
        pytest.skip("float32 only")
    gen = generator("grad", name, dtype)
    xs = [uniform(s, dtype, -r, r, gen).requires_grad_() for s in shapes]
    out = ours(*xs)
    g = uniform(out.shape, out.dtype, -1, 1, gen)
    grads = torch.autograd.grad(out, xs, g)
    refs = [x.detach().double().requires_grad_() for x in xs]
    want = torch.autograd.grad(theirs(*refs), refs, g.double())
    atol, rtol = TOL[dtype]
    for i, (got, w) in enumerate(zip(grads, want)):
        assert got.dtype == dtype and got.shape == xs[i].shape
        # the gradient is a product and a sum of a few terms: 4x the type's tolerance, scaled by |g|
        scale = w.abs().max().clamp_min(1.0).expand_as(w)
        if name == "log_softmax":
            # dx = g - exp(y) sum(g) uses the stored y, rounded to the type: |dy| <= u |y| moves dx by
            # exp(y) |sum(g)| u |y| (u: the unit roundoff), which dwarfs the generic bound in 16 bits
            # where exp(y) |sum(g)| is large (a row's largest entries, |sum(g)| ~ 20 for 1000 terms).
            y = out.detach().double()
            u = torch.finfo(dtype).eps / 2
            cond = y.exp() * g.double().sum(-1, keepdim=True).abs() * y.abs() * u
            scale = scale + 2 * cond / (4 * atol)
        assert_close(got, w, 4 * atol, 4 * rtol, scale=scale, what=f"grad {name} input {i} {dtype}")


def test_max_has_no_backward():
    x = torch.randn(10, device=DEV, requires_grad=True)
    with pytest.raises(RuntimeError, match="no backward"):
        gpuops.amax(x).backward()
