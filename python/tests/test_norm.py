# SPDX-License-Identifier: MIT
"""Layernorm, rmsnorm, their fused forms (add_, _gelu) and rotary embeddings against PyTorch in
float64: odd row lengths, with and without weights, every version (a version that cannot run a
shape, ROW_REGISTERS on an odd row, is skipped for it), gradients through autograd, errors."""
import pytest

from _common import DEV, FLOATS, TOL, attempt, assert_close, generator, gpuops, torch, uniform

F = torch.nn.functional
FWD_VERSIONS = ["auto", "block-per-row", "warp-per-row", "online", "row-registers"]
BWD_VERSIONS = ["auto", "row-registers", "online"]
SHAPES = [(1, 1), (3, 7), (5, 1000), (2, 4097), (3, 2, 33), (4, 8192), (2, 65537)]
# The forward's bound: |got - want| <= atol (1 + |xhat gamma| + |beta|) + rtol |want| (one rounding to
# the type after f32 arithmetic; tests/norm_cases.h's rtol).
NORM_TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-5, 2e-3), torch.bfloat16: (1e-5, 1.6e-2)}




def _weights(cols, dtype, gen):
    return uniform((cols,), dtype, 0.5, 1.5, gen), uniform((cols,), dtype, -0.5, 0.5, gen)


def _ref(kind, x, w, b, eps, approximate="none"):
    """PyTorch's function in float64 (w, b: float64 or None)."""
    cols = x.shape[-1]
    if kind == "rmsnorm":
        return F.rms_norm(x, (cols,), w, eps)
    y = F.layer_norm(x, (cols,), w, b, eps)
    return F.gelu(y, approximate=approximate) if kind == "layernorm_gelu" else y


def _check_fwd(got, b, want, dtype, what):
    atol, rtol = NORM_TOL[dtype]
    scale = want.abs() + 1.0 + (b.double().abs() if b is not None else 0.0)
    assert_close(got, want, atol, rtol, scale=scale, what=what)


CALLS = {
    "layernorm": lambda x, w, b, eps, algo: gpuops.layernorm(x, w, b, eps, algo=algo),
    "rmsnorm": lambda x, w, b, eps, algo: gpuops.rmsnorm(x, w, eps, algo=algo),
    "layernorm_gelu": lambda x, w, b, eps, algo: gpuops.layernorm_gelu(x, w, b, eps, algo=algo),
}


@pytest.mark.parametrize("algo", FWD_VERSIONS)
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind", list(CALLS))
def test_forward(kind, shape, dtype, algo):
    gen = generator("norm", kind, shape, dtype, algo)
    x = uniform(shape, dtype, -3, 3, gen)
    w, b = _weights(shape[-1], dtype, gen)
    b = None if kind == "rmsnorm" else b
    got = attempt(lambda: CALLS[kind](x, w, b, 1e-5, algo))
    if got is None:
        pytest.skip(f"{algo} does not run {shape}")
    want = _ref(kind, x.double(), w.double(), b.double() if b is not None else None, 1e-5)
    _check_fwd(got, b, want, dtype, f"{kind} {shape} {algo}")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_without_weights_and_stats(dtype):
    gen = generator("norm plain", dtype)
    x = uniform((6, 3, 517), dtype, -2, 5, gen)
    xd = x.double()
    y, mean, rstd = gpuops.layernorm(x, eps=1e-3, return_stats=True)
    _check_fwd(y, None, F.layer_norm(xd, (517,), eps=1e-3), dtype, "layernorm without weights")
    assert mean.dtype == rstd.dtype == torch.float32 and mean.shape == rstd.shape == (6, 3)
    assert_close(mean, xd.mean(-1), 1e-6, 1e-6, what="mean")
    assert_close(rstd, (xd.var(-1, unbiased=False) + 1e-3).rsqrt(), 0.0, 1e-5, what="rstd")
    y, rstd = gpuops.rmsnorm(x, return_stats=True)  # eps None: finfo(dtype).eps, as F.rms_norm
    _check_fwd(y, None, F.rms_norm(xd, (517,), eps=torch.finfo(dtype).eps), dtype, "rmsnorm without weight")
    w = uniform((517,), dtype, 0.5, 1.5, gen)
    _check_fwd(gpuops.layernorm(x, w), None, F.layer_norm(xd, (517,), w.double()), dtype, "layernorm, no bias")


@pytest.mark.parametrize("algo", ["auto", "unfused", "online"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(3, 7), (5, 1000), (4, 4096), (2, 3, 4097)], ids=str)
@pytest.mark.parametrize("kind", ["layernorm", "rmsnorm"])
def test_add_forward(kind, shape, dtype, algo):
    gen = generator("add norm", kind, shape, dtype, algo)
    x, r = uniform(shape, dtype, -3, 3, gen), uniform(shape, dtype, -3, 3, gen)
    w, b = _weights(shape[-1], dtype, gen)
    if kind == "layernorm":
        got = attempt(lambda: gpuops.add_layernorm(x, r, w, b, algo=algo))
    else:
        b = None
        got = attempt(lambda: gpuops.add_rmsnorm(x, r, w, 1e-5, algo=algo))
    if got is None:
        pytest.skip(f"{algo} does not run {shape}")
    h, y = got
    want_h = x + r  # PyTorch's add: one rounding to the type
    assert torch.equal(h, want_h), f"add_{kind} h"
    want = _ref(kind, want_h.double(), w.double(), b.double() if b is not None else None, 1e-5)
    _check_fwd(y, b, want, dtype, f"add_{kind} {shape} {algo}")


GRAD_CASES = {  # name -> (gpuops function of (x, w, b), PyTorch's, takes a bias)
    "layernorm": (lambda x, w, b: gpuops.layernorm(x, w, b), lambda x, w, b: F.layer_norm(x, x.shape[-1:], w, b), True),
    "rmsnorm": (lambda x, w, b: gpuops.rmsnorm(x, w, 1e-6), lambda x, w, b: F.rms_norm(x, x.shape[-1:], w, 1e-6), False),
    "layernorm_gelu": (lambda x, w, b: gpuops.layernorm_gelu(x, w, b, approximate="tanh"),
                       lambda x, w, b: F.gelu(F.layer_norm(x, x.shape[-1:], w, b), approximate="tanh"), True),
    "add_layernorm": (lambda x, w, b: _sum_h_y(gpuops.add_layernorm(x, x.flip(-1), w, b)),
                      lambda x, w, b: _sum_h_y(_torch_add_norm(x, lambda h: F.layer_norm(h, h.shape[-1:], w, b))), True),
    "add_rmsnorm": (lambda x, w, b: _sum_h_y(gpuops.add_rmsnorm(x, x.flip(-1), w, 1e-6)),
                    lambda x, w, b: _sum_h_y(_torch_add_norm(x, lambda h: F.rms_norm(h, h.shape[-1:], w, 1e-6))), False),
}


def _torch_add_norm(x, norm):
    h = x + x.flip(-1)
    return h, norm(h)


def _sum_h_y(hy):
    return hy[0] * 0.5 + hy[1]  # both outputs carry gradient


@pytest.mark.parametrize("weights", [True, False])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape", [(7, 33), (5, 1024), (3, 2, 4099)], ids=str)
@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradient(name, shape, dtype, weights):
    ours, theirs, has_bias = GRAD_CASES[name]
    gen = generator("norm grad", name, shape, dtype, weights)
    x = uniform(shape, dtype, -3, 3, gen).requires_grad_()
    w, b = _weights(shape[-1], dtype, gen) if weights else (None, None)
    b = b if has_bias else None
    leaves = [t.requires_grad_() for t in (x, w, b) if t is not None]
    out = ours(x, w, b)
    g = uniform(out.shape, dtype, -1, 1, gen)
    got = torch.autograd.grad(out, leaves, g)
    refs = [t.detach().double().requires_grad_() for t in leaves]
    xd, wd, bd = refs[0], (refs[1] if w is not None else None), (refs[2] if b is not None else None)
    want = torch.autograd.grad(theirs(xd, wd, bd), refs, g.double())
    atol, rtol = TOL[dtype]
    # The residual forms' x gradient is PyTorch's sum, in the storage type, of h's two gradients (the
    # norm's backward and the 0.5 g term) and of the flipped copy: three roundings of terms up to the
    # largest |gradient| (unit roundoff 2^-8 each in bf16, 2^-24 in f32) on top of the norm's own error.
    extra = 3 * (2.0 ** -8 if dtype == torch.bfloat16 else 2.0 ** -24) if name.startswith("add_") else 0.0
    for i, (gt, wt) in enumerate(zip(got, want)):
        assert gt.dtype == dtype and gt.shape == leaves[i].shape
        # sums over a row (dx) or over the rows (dgamma, dbeta) in f32: scaled by the largest |gradient|
        assert_close(gt, wt, 8 * atol + extra, 4 * rtol, scale=wt.abs().max().clamp_min(1.0).expand_as(wt),
                     what=f"grad {name} input {i} {shape} {dtype}")


@pytest.mark.parametrize("algo", BWD_VERSIONS)
@pytest.mark.parametrize("shape", [(3, 7), (4, 4096), (2, 5000)], ids=str)
def test_backward_versions_and_partial_grads(shape, algo):
    gen = generator("norm bwd", shape, algo)
    x = uniform(shape, torch.float32, -3, 3, gen)
    w, _ = _weights(shape[-1], torch.float32, gen)
    dy = uniform(shape, torch.float32, -1, 1, gen)
    _, mean, rstd = gpuops.layernorm(x, w, return_stats=True)
    full = attempt(lambda: gpuops.layernorm_bwd(dy, x, mean, rstd, w, algo=algo))
    if full is None:
        pytest.skip(f"{algo} does not run {shape}")
    dx, dgamma, dbeta = gpuops.layernorm_bwd(dy, x, mean, rstd, w, weight_grads=False, algo=algo)
    assert dgamma.numel() == dbeta.numel() == 0
    assert_close(dx, full[0], 1e-6, 1e-5, what="dx without the weight gradients")
    xd = x.double().requires_grad_()
    wd = w.double().requires_grad_()
    bd = torch.zeros_like(wd, requires_grad=True)
    want = torch.autograd.grad(F.layer_norm(xd, shape[-1:], wd, bd), [xd, wd, bd], dy.double())
    for got, wt, nm in zip(full, want, ("dx", "dgamma", "dbeta")):
        assert_close(got, wt, 8e-6, 4e-5, scale=wt.abs().max().clamp_min(1.0).expand_as(wt), what=f"{nm} {algo}")


def test_special_rows():
    x = torch.randn(4, 300, device=DEV)
    x[0] = 5.0  # a constant row: xhat = 0, y = beta
    x[1, 7] = float("nan")
    b = torch.full((300,), 0.25, device=DEV)
    y = gpuops.layernorm(x, bias=b)
    assert torch.equal(y[0], b)
    assert torch.isnan(y[1]).all()
    assert_close(y[2:], F.layer_norm(x[2:].double(), (300,), bias=b.double()), 1e-5, 1e-5)


# ---- rotary embeddings ----

def _rope_ref(x, positions, cos_sin, rot_dim, base, pairing):
    """x [tokens, heads, head_dim] in float64; the angles formed as gpuops.h says (f_i rounded to f32,
    p f_i rounded to f32), cos and sin in float64."""
    tokens = x.shape[0]
    half = rot_dim // 2
    pos = positions if positions is not None else torch.arange(tokens, device=DEV)
    if cos_sin is not None:
        cos, sin = cos_sin[pos, :half].double(), cos_sin[pos, half:rot_dim].double()
    else:
        i = torch.arange(half, device=DEV, dtype=torch.float64)
        f = (base ** (-2 * i / rot_dim)).float()
        ang = (pos.float()[:, None] * f[None, :]).double()
        cos, sin = ang.cos(), ang.sin()
    cos, sin = cos[:, None, :], sin[:, None, :]
    y = x.clone()
    if pairing == "adjacent":
        a, b = x[..., 0:rot_dim:2], x[..., 1:rot_dim:2]
        y[..., 0:rot_dim:2], y[..., 1:rot_dim:2] = a * cos - b * sin, b * cos + a * sin
    else:
        a, b = x[..., :half], x[..., half:rot_dim]
        y[..., :half], y[..., half:rot_dim] = a * cos - b * sin, b * cos + a * sin
    return y


ROPE_CASES = [  # (tokens, heads, head_dim, rot_dim, positions, cache)
    (7, 3, 64, 64, False, False), (5, 2, 18, 10, True, False), (33, 4, 128, 64, True, True),
    (1, 1, 2, 2, False, True), (300, 8, 96, 96, True, False), (9, 3, 64, 0, False, False),
]


@pytest.mark.parametrize("algo", ["auto", "naive"])
@pytest.mark.parametrize("pairing", ["adjacent", "halves"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("case", ROPE_CASES, ids=str)
def test_rope(case, dtype, pairing, algo):
    tokens, heads, head_dim, rot_dim, with_pos, with_cache = case
    gen = generator("rope", case, dtype, pairing, algo)
    # q as a view of a fused [tokens, 3 * heads * head_dim] qkv buffer: token stride 3 heads head_dim
    qkv = uniform((tokens, 3 * heads * head_dim), dtype, -2, 2, gen)
    q = qkv[:, heads * head_dim:2 * heads * head_dim].view(tokens, heads, head_dim)
    positions = torch.randint(0, 4096, (tokens,), device=DEV, generator=gen) if with_pos else None
    cos_sin = None
    if with_cache:
        ang = uniform((4096, rot_dim // 2), torch.float64, -10, 10, gen)
        cos_sin = torch.cat([ang.cos(), ang.sin()], -1).float()
    y = gpuops.rope(q, positions, cos_sin, rot_dim=rot_dim, base=5000.0, pairing=pairing, algo=algo)
    assert y.shape == q.shape and y.is_contiguous()
    want = _rope_ref(q.double(), positions, cos_sin, rot_dim, 5000.0, pairing)
    atol, rtol = TOL[dtype]
    scale = q.double().abs().amax(-1, keepdim=True).clamp_min(1.0).expand_as(want)
    assert_close(y, want, 4 * max(atol, 1e-6), rtol, scale=scale, what=f"rope {case} {pairing}")
    # the backward is the inverse rotation: its gradient against autograd of the reference
    x = q.detach().clone().requires_grad_()
    g = uniform(q.shape, dtype, -1, 1, gen)
    (dx,) = torch.autograd.grad(gpuops.rope(x, positions, cos_sin, rot_dim, 5000.0, pairing, algo), [x], g)
    xd = q.detach().double().requires_grad_()
    (dxd,) = torch.autograd.grad(_rope_ref(xd, positions, cos_sin, rot_dim, 5000.0, pairing), [xd], g.double())
    assert_close(dx, dxd, 4 * max(atol, 1e-6), rtol, scale=g.double().abs().amax(-1, keepdim=True).clamp_min(1.0)
                 .expand_as(dxd), what=f"rope grad {case} {pairing}")


# ---- errors ----

def test_errors():
    x = torch.randn(4, 64, device=DEV)
    with pytest.raises(gpuops.GpuopsError, match="eps"):
        gpuops.layernorm(x, eps=0.0)
    with pytest.raises(gpuops.GpuopsError, match="gamma"):
        gpuops.layernorm(x, torch.ones(63, device=DEV))
    with pytest.raises(gpuops.GpuopsError, match="one dtype"):
        gpuops.rmsnorm(x, torch.ones(64, device=DEV, dtype=torch.bfloat16))
    with pytest.raises(gpuops.GpuopsError, match="dtype int32"):
        gpuops.layernorm(x.int())
    with pytest.raises(gpuops.GpuopsError, match="one shape"):
        gpuops.add_rmsnorm(x, x[:3])
    with pytest.raises(gpuops.GpuopsError, match="approximate"):
        gpuops.layernorm_gelu(x, approximate="fast")
    with pytest.raises(gpuops.GpuopsError, match="rot_dim"):
        gpuops.rope(x.view(4, 2, 32), rot_dim=7)
    with pytest.raises(gpuops.GpuopsError, match="tokens, heads, head_dim"):
        gpuops.rope(x)
    with pytest.raises(gpuops.GpuopsError, match="positions"):
        gpuops.rope(x.view(4, 2, 32), positions=torch.zeros(4, device=DEV, dtype=torch.int32))
    with pytest.raises(gpuops.GpuopsError, match="contiguous"):
        gpuops.rope(x.view(4, 2, 32).transpose(1, 2))
    with pytest.raises(gpuops.GpuopsError) as e:
        gpuops.layernorm(x, algo="wgmma")
    assert e.value.status_string
