# SPDX-License-Identifier: MIT
"""The tensor-core GEMM and the linear layer against float64: odd shapes, every operand layout
(transposed views, pitched slices), float16 and bfloat16 operands, float32 or 16-bit output, the
epilogue (bias, each activation, residual, preact, beta C), every version (one the device or
layout cannot run is skipped), the linear layer's gradients, errors."""
import pytest

from _common import DEV, UNSUPPORTED, assert_close, generator, gpuops, torch, uniform

F = torch.nn.functional
ACTS = {None: lambda v: v, "gelu_erf": F.gelu, "gelu_tanh": lambda v: F.gelu(v, approximate="tanh"), "silu": F.silu,
        "relu": F.relu}
HALVES = [torch.bfloat16, torch.float16]


def _unit(dtype):
    return torch.finfo(dtype).eps  # twice the unit roundoff: the output's rounding, with room


def _check(got, want, bound, k, act, what):
    """tests/test_gemm.cu's bound: 1.2 (max(1e-5, (k + 2) 2^-23) + 1e-5 [activation]) sum |a b| + |terms|,
    plus the rounding to the output type."""
    rel = max(1e-5, (k + 2) * 2.0**-23) + (1e-5 if act else 0.0)
    assert_close(got, want, 1.0, _unit(got.dtype), scale=1.2 * rel * bound + 1e-30, what=what)


def _operands(m, n, k, layout, dtype, gen):
    a = uniform((m, k), dtype, -1, 1, gen)
    b = uniform((k, n), dtype, -1, 1, gen)
    if layout[0] == "T":
        a = a.t().contiguous().t()
    if layout[1] == "T":
        b = b.t().contiguous().t()
    return a, b


@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("mnk", [(1, 1, 1), (129, 67, 33), (257, 255, 1023), (1, 4096, 4096), (16, 11008, 4096),
                                 (33, 0, 5), (17, 9, 0)], ids=str)
def test_shapes_and_layouts(mnk, layout, dtype):
    m, n, k = mnk
    a, b = _operands(m, n, k, layout, dtype, generator("gemm", mnk, layout, dtype))
    for out_dtype in (None, torch.float32):
        c = gpuops.gemm(a, b, out_dtype=out_dtype)
        assert c.shape == (m, n) and c.is_contiguous() and c.dtype == (out_dtype or dtype)
        ad, bd = a.double(), b.double()
        _check(c, ad @ bd, ad.abs() @ bd.abs(), k, None, f"gemm {mnk} {layout} {out_dtype}")


@pytest.mark.parametrize("algo", ["auto", "wmma", "mma-sync", "wgmma"])
@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_versions(algo, dtype):
    gen = generator("gemm versions", algo, dtype)
    for layout in ("NN", "NT"):
        a, b = _operands(200, 136, 72, layout, dtype, gen)
        try:
            c = gpuops.gemm(a, b, alpha=0.5, algo=algo)
        except gpuops.GpuopsError as e:
            if e.status in UNSUPPORTED:
                pytest.skip(f"{algo}: {e.status_string}")
            raise
        ad, bd = a.double(), b.double()
        _check(c, 0.5 * (ad @ bd), 0.5 * (ad.abs() @ bd.abs()), 72, None, f"gemm {algo} {layout}")


@pytest.mark.parametrize("out_dtype", [None, torch.float32], ids=str)
@pytest.mark.parametrize("act", list(ACTS), ids=str)
@pytest.mark.parametrize("dtype", HALVES, ids=str)
def test_epilogue(dtype, act, out_dtype):
    gen = generator("gemm epilogue", dtype, act, out_dtype)
    m, n, k = 77, 130, 96
    od = out_dtype or dtype
    a, b = _operands(m, n, k, "NT", dtype, gen)
    c0 = uniform((m, n), od, -1, 1, gen)
    bias = uniform((n,), od, -1, 1, gen)
    big = uniform((m, n + 9), od, -1, 1, gen)
    residual = big[:, 4:4 + n]  # row pitch n + 9
    out, pre = gpuops.gemm(a, b, c0, alpha=0.75, beta=-0.5, bias=bias, activation=act, residual=residual,
                           out_dtype=out_dtype, return_preact=True)
    ad, bd = a.double(), b.double()
    want_pre = 0.75 * (ad @ bd) - 0.5 * c0.double() + bias.double()
    bound = 0.75 * (ad.abs() @ bd.abs()) + 0.5 * c0.double().abs() + bias.double().abs()
    _check(pre, want_pre, bound, k, act, f"preact {act}")
    # the activation of the stored preact's exact value, so that its rounding is not counted twice
    want = ACTS[act](want_pre) + residual.double()
    _check(out, want, bound + residual.double().abs(), k, act, f"gemm epilogue {act}")


def _act_value(act):
    return gpuops._gemm.ACTIVATIONS["none" if act is None else act]


@pytest.mark.parametrize("act", list(ACTS), ids=str)
@pytest.mark.parametrize("dtype", HALVES, ids=str)
@pytest.mark.parametrize("shape", [(5, 33, 17), (2, 3, 64, 96), (129, 72, 200)], ids=str)
def test_linear(shape, dtype, act):
    *lead, fin, fout = shape
    gen = generator("linear", shape, dtype, act)
    x = uniform((*lead, fin), dtype, -1, 1, gen).requires_grad_()
    w = uniform((fout, fin), dtype, -1, 1, gen).requires_grad_()
    b = uniform((fout,), dtype, -1, 1, gen).requires_grad_()
    y = gpuops.linear(x, w, b, activation=act)
    assert y.shape == (*lead, fout) and y.dtype == dtype
    xd, wd, bd = (t.detach().double().requires_grad_() for t in (x, w, b))
    pre = F.linear(xd, wd, bd)
    bound = xd.abs() @ wd.abs().t() + bd.abs()
    _check(y, ACTS[act](pre), bound.detach(), fin, act, f"linear {shape} {act}")
    # gradients: the library's dh = dy act'(preact) uses the preact it stored (rounded to the type)
    # and is itself rounded to the type before the two GEMMs; the reference sees the same preact
    g = uniform(y.shape, dtype, -1, 1, gen)
    dx, dw, db = torch.autograd.grad(y, [x, w, b], g)
    p = pre + (pre.to(dtype).double() - pre).detach()
    dh = torch.autograd.grad(ACTS[act](p), [p], g.double(), retain_graph=True)[0].abs() if act else g.double().abs()
    want = torch.autograd.grad(ACTS[act](p), [xd, wd, bd], g.double())
    u16 = torch.finfo(dtype).eps / 2
    x2, w2, dh2 = xd.detach().abs().reshape(-1, fin), wd.detach().abs(), dh.reshape(-1, fout)
    rows = x2.shape[0]
    for got, wt, bnd, inner, nm in ((dx, want[0], (dh2 @ w2).reshape(want[0].shape), fout, "dx"),
                                    (dw, want[1], dh2.t() @ x2, rows, "dweight"),
                                    (db, want[2], dh2.sum(0), rows, "dbias")):
        assert got.dtype == dtype and got.shape == wt.shape, nm
        rel = max(1e-5, (inner + 2) * 2.0**-23) + (u16 if act else 0.0)
        assert_close(got, wt, 1.0, _unit(dtype), scale=1.2 * rel * bnd + 1e-30, what=f"linear {nm} {shape} {act}")


def test_linear_bwd_float32_gradients():
    gen = generator("linear bwd")
    x = uniform((64, 40), torch.bfloat16, -1, 1, gen)
    w = uniform((24, 40), torch.bfloat16, -1, 1, gen)
    dy = uniform((64, 24), torch.bfloat16, -1, 1, gen)
    dx, dw, db = gpuops.linear_bwd(dy, None, x, w)
    assert dx.dtype == torch.bfloat16 and dw.dtype == db.dtype == torch.float32
    assert_close(dw, dy.double().t() @ x.double(), 1e-5, 1e-5, what="dW")
    assert_close(db, dy.double().sum(0), 1e-5, 1e-5, what="db")
    dx2, dw2, db2 = gpuops.linear_bwd(dy, None, x, w, grad_weight=False, grad_bias=False)
    assert dw2.numel() == db2.numel() == 0 and torch.equal(dx2, dx)


def test_errors():
    a = torch.randn(8, 16, device=DEV, dtype=torch.bfloat16)
    b = torch.randn(16, 4, device=DEV, dtype=torch.bfloat16)
    with pytest.raises(gpuops.GpuopsError, match="dtype float32"):
        gpuops.gemm(a.float(), b.float())
    with pytest.raises(gpuops.GpuopsError, match=r"\[m, k\] @ \[k, n\]"):
        gpuops.gemm(a, a)
    with pytest.raises(gpuops.GpuopsError, match="bias"):
        gpuops.gemm(a, b, bias=torch.zeros(5, device=DEV, dtype=torch.bfloat16))
    with pytest.raises(gpuops.GpuopsError, match="without c"):
        gpuops.gemm(a, b, beta=1.0)
    with pytest.raises(gpuops.GpuopsError, match="activation"):
        gpuops.gemm(a, b, activation="gelu")
    with pytest.raises(gpuops.GpuopsError, match="out_dtype"):
        gpuops.gemm(a, b, out_dtype=torch.float16)
    with pytest.raises(gpuops.GpuopsError, match="unit-stride"):
        gpuops.gemm(a[::2, ::2], b[::2])
    with pytest.raises(gpuops.GpuopsError, match="needs preact"):
        gpuops.linear_bwd(torch.zeros(8, 4, device=DEV, dtype=torch.bfloat16), None, a, b.t().contiguous(),
                          _act_value("relu"))
    with pytest.raises(gpuops.GpuopsError, match="weight"):
        gpuops.linear(a, b)
