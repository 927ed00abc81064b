# SPDX-License-Identifier: MIT
"""Attention against scaled dot-product attention in float64: odd sequence lengths (1, 17, 100),
seqlen_q != seqlen_k with the causal mask aligned to the bottom-right corner (rows that see no key
give 0 and lse -inf), multi-head, grouped-query and multi-query, head_dim 40 to 256, both layouts
and strided views of a fused qkv buffer, every version (a version that refuses a shape or dtype is
skipped with its status), lse, gradients through autograd, errors, CUDA graph capture and
torch.compile(fullgraph=True) of a small block."""
import pytest

from _common import DEV, assert_close, attempt, generator, gpuops, torch, uniform

F = torch.nn.functional
VERSIONS = ["auto", "naive", "flash", "flash2", "wgmma"]
DTYPES = [torch.float16, torch.bfloat16, torch.float32]
# tests/test_attention.cu's rule against its float64 reference: |got - want| <= atol + rtol |want|
# (16-bit types: P is rounded to the storage type before P V); lse 2e-4 + 2e-5 |want|.
ATT_TOL = {torch.float32: (1e-5, 1e-4), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1e-2, 1e-2)}
LSE_TOL = (2e-4, 2e-5)
# (batch, seqlen_q, seqlen_k, heads_q, heads_kv, head_dim, causal)
CASES = [
    (2, 1, 1, 4, 4, 64, False),
    (1, 17, 17, 2, 2, 64, True),
    (2, 100, 100, 4, 1, 128, True),     # multi-query
    (1, 17, 100, 8, 2, 64, True),       # grouped-query, seqlen_q < seqlen_k: every row sees a key
    (1, 100, 17, 4, 2, 40, True),       # seqlen_q > seqlen_k: the first 83 rows see none
    (3, 33, 70, 6, 3, 72, False),
    (1, 1, 100, 4, 4, 128, True),       # one query (decode) sees every key
    (1, 65, 129, 2, 1, 256, True),
]




def _inputs(case, dtype, layout, gen, grad=False):
    """q, k, v of the case in the layout (q, k in [-1.5, 1.5), v in [-1, 1), as the C tests)."""
    B, Sq, Sk, Hq, Hkv, D, _ = case

    def make(S, H, r):
        shape = (B, H, S, D) if layout == "bhsd" else (B, S, H, D)
        return uniform(shape, dtype, -r, r, gen).requires_grad_(grad)

    return make(Sq, Hq, 1.5), make(Sk, Hkv, 1.5), make(Sk, Hkv, 1.0)


def reference(q, k, v, causal, scale=None, layout="bshd"):
    """(out, lse) in float64 of q, k, v as they are (any dtype; autograd flows through): the scores
    scale q k^T, causal as gpuops aligns it (query i sees key j <= i + Sk - Sq), rows that see no key
    0 (lse -inf); out in q's layout."""
    q, k, v = (t.double() for t in (q, k, v))
    if layout == "bshd":
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    Sq, Sk, D = q.shape[2], k.shape[2], q.shape[3]
    group = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
    scale = D ** -0.5 if scale is None else scale
    s = scale * q @ k.transpose(-1, -2)
    i = torch.arange(Sq, device=DEV)[:, None]
    j = torch.arange(Sk, device=DEV)[None, :]
    seen = (j <= i + Sk - Sq) if causal else torch.ones(Sq, Sk, dtype=torch.bool, device=DEV)
    rows = seen.any(-1, keepdim=True)
    s = torch.where(rows, s.masked_fill(~seen, float("-inf")), 0.0)  # finite where no key is seen
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse[..., None]) * rows
    out = p @ v
    lse = lse.masked_fill(~rows[:, 0], float("-inf"))
    return (out.transpose(1, 2) if layout == "bshd" else out), lse


def test_reference_is_sdpa():
    """The reference is F.scaled_dot_product_attention (float64, an explicit mask) where rows see keys."""
    gen = generator("attention reference")
    q = uniform((2, 4, 17, 64), torch.float64, -1.5, 1.5, gen)
    k, v = uniform((2, 2, 30, 64), torch.float64, -1.5, 1.5, gen), uniform((2, 2, 30, 64), torch.float64, -1, 1, gen)
    i, j = torch.arange(17, device=DEV)[:, None], torch.arange(30, device=DEV)[None, :]
    want = F.scaled_dot_product_attention(q, k.repeat_interleave(2, 1), v.repeat_interleave(2, 1), attn_mask=j <= i + 13)
    got, _ = reference(q, k, v, True, layout="bhsd")
    assert_close(got, want, 1e-12, 1e-12, what="reference, causal bottom-right")
    want = F.scaled_dot_product_attention(q, k, v, enable_gqa=True, scale=0.3)
    got, _ = reference(q, k, v, False, scale=0.3, layout="bhsd")
    assert_close(got, want, 1e-12, 1e-12, what="reference, grouped-query")


@pytest.mark.parametrize("algo", VERSIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward(case, layout, dtype, algo):
    gen = generator("attention", case, layout, dtype, algo)
    q, k, v = _inputs(case, dtype, layout, gen)
    causal = case[-1]
    got = attempt(lambda: gpuops.attention(q, k, v, causal=causal, layout=layout, return_lse=True, algo=algo))
    if got is None:
        pytest.skip(f"{algo} does not run {dtype} {case} here")
    out, lse = got
    B, Sq, _, Hq, _, D, _ = case
    assert out.dtype == dtype and out.shape == q.shape and out.is_contiguous()
    assert lse.dtype == torch.float32 and lse.shape == (B, Hq, Sq)
    want, want_lse = reference(q, k, v, causal, layout=layout)
    atol, rtol = ATT_TOL[dtype]
    assert_close(out, want, atol, rtol, what=f"attention {case} {layout} {algo}")
    assert_close(lse, want_lse, *LSE_TOL, what=f"lse {case} {layout} {algo}")


@pytest.mark.parametrize("algo", ["auto", "flash", "flash2"])
def test_scale_and_strided_views(algo):
    """q, k, v as views of one [B, S, 3, H, D] buffer (no copy), an explicit scale, and [B, H, S, D]
    views of [B, S, H, D] memory."""
    gen = generator("attention strided", algo)
    B, S, H, D = 2, 77, 4, 64
    qkv = uniform((B, S, 3, H, D), torch.bfloat16, -1.5, 1.5, gen)
    q, k, v = qkv.unbind(2)
    assert not q.is_contiguous()
    got = attempt(lambda: gpuops.attention(q, k, v, causal=True, scale=0.2, algo=algo))
    if got is None:
        pytest.skip(f"{algo} does not run this layout here")
    want, _ = reference(q, k, v, True, scale=0.2)
    assert_close(got, want, *ATT_TOL[torch.bfloat16], what=f"fused qkv {algo}")
    qt, kt, vt = (t.transpose(1, 2) for t in (q, k, v))  # [B, H, S, D] views
    got = gpuops.attention(qt, kt, vt, causal=True, scale=0.2, layout="bhsd", algo=algo)
    assert got.shape == (B, H, S, D) and got.is_contiguous()
    assert_close(got, want.transpose(1, 2), *ATT_TOL[torch.bfloat16], what=f"bhsd views {algo}")


GRAD_CASES = [
    (2, 17, 17, 4, 4, 64, False),
    (1, 100, 100, 4, 1, 128, True),
    (1, 17, 100, 6, 2, 64, True),
    (2, 100, 17, 4, 2, 40, True),
    (1, 33, 70, 2, 1, 72, False),
]


@pytest.mark.parametrize("algo", ["auto", "flash", "flash2", "wgmma"])  # the forward's version, and the backward's
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["bshd", "bhsd"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradient(case, layout, dtype, algo):
    gen = generator("attention grad", case, layout, dtype, algo)
    q, k, v = _inputs(case, dtype, layout, gen, grad=True)
    causal = case[-1]
    out = attempt(lambda: gpuops.attention(q, k, v, causal=causal, layout=layout, algo=algo))
    if out is None:
        pytest.skip(f"{algo} does not run {dtype} {case} here")
    g = uniform(out.shape, dtype, -1, 1, gen)
    got = attempt(lambda: torch.autograd.grad(out, [q, k, v], g))
    if got is None:
        pytest.skip(f"{algo}'s backward does not run {dtype} {case} here")
    refs = [t.detach().double().requires_grad_() for t in (q, k, v)]
    want = torch.autograd.grad(reference(*refs, causal, layout=layout)[0], refs, g.double())
    atol, rtol = ATT_TOL[dtype]
    for name, t, gt, wt in zip("qkv", (q, k, v), got, want):
        assert gt.dtype == dtype and gt.shape == t.shape
        # tests/test_attention.cu's backward bound (atol scaled by the gradient's largest magnitude),
        # doubled: its reference takes the same O and lse, this one the exact ones
        assert_close(gt, wt, 2 * atol, 2 * rtol, scale=wt.abs().max().clamp_min(1.0).expand_as(wt),
                     what=f"d{name} {case} {layout} {dtype} {algo}")


def test_backward_op_and_strides():
    """attention_bwd directly: dout of other strides than o's, dq, dk, dv with the strides of q, k,
    v (views of a fused buffer), the same gradients as through autograd."""
    gen = generator("attention bwd")
    B, S, H, D = 2, 50, 4, 64
    qkv = uniform((B, S, 3, H, D), torch.float16, -1.5, 1.5, gen)
    q, k, v = qkv.unbind(2)
    out, lse = gpuops.attention(q, k, v, causal=True, return_lse=True)
    dout = uniform((B, H, S, D), torch.float16, -1, 1, gen).transpose(1, 2)  # not o's strides
    dq, dk, dv = gpuops.attention_bwd(dout, q, k, v, out, lse, causal=True)
    for d, t in ((dq, q), (dk, k), (dv, v)):
        assert d.shape == t.shape and d.stride() == t.stride()
    x = qkv.detach().clone().requires_grad_()
    (dx,) = torch.autograd.grad(gpuops.attention(*x.unbind(2), causal=True), [x], dout)
    refs = [t.detach().double().requires_grad_() for t in (q, k, v)]
    want = torch.autograd.grad(reference(*refs, True)[0], refs, dout.double())
    for i, (d, w) in enumerate(zip((dq, dk, dv), want)):
        bound = dict(scale=w.abs().max().clamp_min(1.0).expand_as(w), what=f"attention_bwd input {i}")
        assert_close(d, w, 4e-3, 4e-3, **bound)
        assert_close(dx[:, :, i], w, 4e-3, 4e-3, **bound)


def test_lse_carries_no_gradient_and_naive_trains():
    """A naive forward's gradient goes through AUTO's backward; lse's gradient is not taken."""
    gen = generator("attention naive grad")
    q, k, v = _inputs((1, 20, 20, 2, 2, 64, True), torch.float32, "bshd", gen, grad=True)
    out, lse = gpuops.attention(q, k, v, causal=True, return_lse=True, algo="naive")
    dq, = torch.autograd.grad((out.sum() + lse.sum() * 0.0), [q])
    refs = [t.detach().double().requires_grad_() for t in (q, k, v)]
    (want,) = torch.autograd.grad(reference(*refs, True)[0].sum(), refs[:1])
    assert_close(dq, want, 2e-5, 2e-4, scale=want.abs().max().clamp_min(1.0).expand_as(want), what="naive dq")


def test_cuda_graph_capture():
    gen = generator("attention graph")
    q, k, v = _inputs((2, 64, 64, 4, 2, 64, True), torch.bfloat16, "bshd", gen)
    want = gpuops.attention(q, k, v, causal=True)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        gpuops.attention(q, k, v, causal=True)  # warm-up off the default stream
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        got = gpuops.attention(q, k, v, causal=True)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(got, want)


class Block(torch.nn.Module):
    """Projections to q, k, v (grouped-query), causal attention by gpuops, the output projection."""

    def __init__(self, d, heads, kv_heads):
        super().__init__()
        gen = torch.Generator(device=DEV).manual_seed(13)
        self.heads, self.kv_heads, self.hd = heads, kv_heads, d // heads
        self.wq = torch.nn.Parameter((torch.randn(d, d, device=DEV, generator=gen) * d**-0.5).to(torch.bfloat16))
        self.wkv = torch.nn.Parameter((torch.randn(2 * kv_heads * self.hd, d, device=DEV, generator=gen) * d**-0.5)
                                      .to(torch.bfloat16))
        self.wo = torch.nn.Parameter((torch.randn(d, d, device=DEV, generator=gen) * d**-0.5).to(torch.bfloat16))

    def forward(self, x):
        B, S, _ = x.shape
        q = (x @ self.wq.t()).view(B, S, self.heads, self.hd)
        k, v = (x @ self.wkv.t()).view(B, S, 2, self.kv_heads, self.hd).unbind(2)
        o = gpuops.attention(q, k, v, causal=True)
        return o.reshape(B, S, -1) @ self.wo.t()


def test_compile_fullgraph_attention_block():
    torch._dynamo.reset()
    m = Block(256, 4, 2)
    x = uniform((2, 67, 256), torch.bfloat16, -1, 1, generator("attention compile")).requires_grad_()
    eager = m(x)
    compiled = torch.compile(m, fullgraph=True)(x)
    assert_close(compiled, eager.detach(), 1e-3, 1.6e-2, what="compiled attention block forward")
    params = [x] + list(m.parameters())
    ge = torch.autograd.grad(eager.float().sum(), params)
    gc = torch.autograd.grad(compiled.float().sum(), params)
    for e, c in zip(ge, gc):  # dq's f32 atomics may differ in their last bits between runs
        assert_close(c, e, 1e-2, 3.2e-2, scale=e.abs().max().clamp_min(1.0).expand_as(e),
                     what="compiled attention block backward")


def test_errors():
    q = torch.randn(1, 8, 6, 64, device=DEV, dtype=torch.float16)
    k = torch.randn(1, 8, 4, 64, device=DEV, dtype=torch.float16)
    with pytest.raises(gpuops.GpuopsError, match="multiple of heads_kv"):
        gpuops.attention(q, k, k)
    x = torch.randn(1, 8, 2, 60, device=DEV, dtype=torch.float16)
    with pytest.raises(gpuops.GpuopsError, match="head_dim 60"):
        gpuops.attention(x, x, x)
    x = torch.randn(1, 8, 2, 64, device=DEV, dtype=torch.float64)
    with pytest.raises(gpuops.GpuopsError, match="dtype float64"):
        gpuops.attention(x, x, x)
    x = torch.randn(1, 8, 2, 64, dtype=torch.float16)
    with pytest.raises(gpuops.GpuopsError, match="CUDA"):
        gpuops.attention(x, x, x)
    x = torch.randn(1, 8, 2, 64, device=DEV, dtype=torch.float16)
    with pytest.raises(gpuops.GpuopsError, match="one dtype"):
        gpuops.attention(x, x.bfloat16(), x)
    with pytest.raises(gpuops.GpuopsError, match="must be contiguous"):
        y = torch.randn(1, 8, 2, 128, device=DEV, dtype=torch.float16)[..., ::2]
        gpuops.attention(y, y, y)
    with pytest.raises(gpuops.GpuopsError, match="one shape"):
        gpuops.attention(x, x, x[:, :4])
    with pytest.raises(gpuops.GpuopsError, match="4-d"):
        gpuops.attention(x[0], x[0], x[0])
    with pytest.raises(gpuops.GpuopsError, match="layout"):
        gpuops.attention(x, x, x, layout="sbhd")
    with pytest.raises(gpuops.GpuopsError, match="scale"):
        gpuops.attention(x, x, x, scale=float("inf"))
    with pytest.raises(gpuops.GpuopsError) as e:  # a version attention does not have: the library's status
        gpuops.attention(x, x, x, algo="online")
    assert e.value.status == gpuops._lib.UNSUPPORTED and e.value.status_string in str(e.value)
    with pytest.raises(gpuops.GpuopsError) as e:  # rows that overlap (a stride-0 sequence): the library's check
        kk = torch.randn(1, 1, 2, 64, device=DEV, dtype=torch.float16).expand(1, 8, 2, 64)
        gpuops.attention(x, kk, kk)
    assert e.value.status == gpuops._lib.INVALID_ARGUMENT and e.value.status_string in str(e.value)
    with pytest.raises(gpuops.GpuopsError) as e:  # f32 has no FLASH2
        gpuops.attention(x.float(), x.float(), x.float(), algo="flash2")
    assert e.value.status == gpuops._lib.UNSUPPORTED
    out, lse = gpuops.attention(x, x, x, return_lse=True)
    with pytest.raises(gpuops.GpuopsError, match="lse"):
        gpuops.attention_bwd(x, x, x, x, out, lse.half())
    with pytest.raises(gpuops.GpuopsError):  # the naive version has no backward
        gpuops.attention_bwd(x, x, x, x, out, lse, algo="naive")
