# SPDX-License-Identifier: MIT
"""Convolution against torch.nn.functional.conv2d / conv1d in float64: odd sizes (H, W in 1, 7, 33;
C, K in 1, 3, 17), strides, paddings and dilations up to 3 (unequal in h and w), even and 1x1
filters, an empty batch, both layouts, bias and ReLU, every version (one that refuses a case is
skipped with its status); float32 gradients through autograd; the learning path's conv1d and
conv2d_plane; errors, CUDA graph capture and torch.compile(fullgraph=True) of a small block."""
import pytest

from _common import DEV, assert_close, attempt, generator, gpuops, torch, uniform

F = torch.nn.functional
VERSIONS = ["auto", "unfused", "implicit-gemm", "mma-sync", "wgmma"]
DTYPES = [torch.float32, torch.float16, torch.bfloat16]
# (N, C, H, W, K, R, S, stride, padding, dilation)
CASES = [
    (1, 1, 1, 1, 1, 1, 1, 1, 0, 1),
    (2, 3, 7, 7, 3, 3, 3, 1, 1, 1),
    (1, 17, 33, 33, 17, 3, 3, 2, 1, 1),
    (3, 3, 33, 7, 17, 3, 3, (1, 2), (2, 1), (2, 1)),
    (1, 17, 7, 33, 1, 5, 3, 3, 2, (1, 3)),
    (2, 1, 33, 33, 3, 7, 7, 2, 3, 1),           # a 7x7 stride-2 stem (C % 8 != 0: mma-sync's gathered form)
    (1, 3, 1, 33, 17, 1, 3, (1, 3), (0, 3), (1, 3)),
    (2, 17, 7, 1, 3, 3, 1, (2, 1), (3, 0), (3, 1)),
    (1, 3, 7, 7, 17, 2, 2, 3, 0, 2),            # an even filter
    (2, 24, 33, 33, 17, 3, 3, 1, 1, 1),         # C a multiple of 8: mma-sync and wgmma run (NHWC, 16-bit)
    (1, 16, 7, 7, 3, 1, 1, 2, 0, 1),            # a 1x1 stride-2 downsample
    (0, 3, 7, 7, 3, 3, 3, 1, 1, 1),             # no images
]
EPILOGUES = [(False, False), (True, False), (False, True), (True, True)]  # (bias, relu)


def _pair(v):
    return (v, v) if isinstance(v, int) else v


def _inputs(case, dtype, layout, gen, grad=False):
    """x, weight, bias of the case in the layout, uniform in [-1, 1) as tests/test_conv.cu."""
    N, C, H, W, K, R, S = case[:7]
    xs, ws = ((N, H, W, C), (K, R, S, C)) if layout == "nhwc" else ((N, C, H, W), (K, C, R, S))
    return tuple(uniform(s, dtype, -1, 1, gen).requires_grad_(grad) for s in (xs, ws, (K,)))


def reference(x, w, b, case, relu, layout):
    """F.conv2d in float64 of the tensors as they are, in and out in the layout (autograd flows)."""
    stride, padding, dilation = case[7:]
    x, w = x.double(), w.double()
    if layout == "nhwc":
        x, w = x.permute(0, 3, 1, 2), w.permute(0, 3, 1, 2)
    y = F.conv2d(x, w, None if b is None else b.double(), _pair(stride), _pair(padding), _pair(dilation))
    y = F.relu(y) if relu else y
    return y.permute(0, 2, 3, 1) if layout == "nhwc" else y


def _tol(case, dtype):
    """tests/test_conv.cu's bound: f32 atol 1e-6 per term of the sum, rtol 1e-5; 16-bit atol
    1e-3 + 2e-6 per term, rtol 2e-3 (f16) or 1.6e-2 (bf16)."""
    terms = case[1] * case[5] * case[6]
    if dtype == torch.float32:
        return 1e-6 * terms, 1e-5
    return 1e-3 + 2e-6 * terms, (2e-3 if dtype == torch.float16 else 1.6e-2)


@pytest.mark.parametrize("algo", VERSIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_forward(case, layout, dtype, algo):
    gen = generator("conv2d", case, layout, dtype, algo)
    x, w, b = _inputs(case, dtype, layout, gen)
    stride, padding, dilation = case[7:]
    ran = 0
    for bias, relu in EPILOGUES:
        y = attempt(lambda: gpuops.conv2d(x, w, b if bias else None, stride, padding, dilation, relu=relu,
                                          layout=layout, algo=algo))
        if y is None:
            continue
        ran += 1
        want = reference(x, w, b if bias else None, case, relu, layout)
        assert y.dtype == dtype and y.is_contiguous()
        assert_close(y, want, *_tol(case, dtype), what=f"conv2d {case} {layout} {algo} bias={bias} relu={relu}")
    if not ran:
        pytest.skip(f"{algo} does not run {dtype} {layout} {case} here")


def test_channels_last_views():
    """layout "nhwc" on channels_last torch tensors: the permuted views pass without a copy, and the
    output permuted back is torch's channels_last result."""
    gen = generator("conv2d channels_last")
    cl = torch.channels_last
    x = uniform((2, 16, 33, 17), torch.bfloat16, -1, 1, gen).to(memory_format=cl)
    w = uniform((24, 16, 3, 3), torch.bfloat16, -1, 1, gen).to(memory_format=cl)  # as nn.Conv2d(16, 24, 3) holds it
    b = uniform((24,), torch.bfloat16, -1, 1, gen)
    xv, wv = x.permute(0, 2, 3, 1), w.permute(0, 2, 3, 1)
    assert xv.is_contiguous() and wv.is_contiguous()
    y = gpuops.conv2d(xv, wv, b, padding=1, layout="nhwc").permute(0, 3, 1, 2)
    assert y.shape == (2, 24, 33, 17) and y.is_contiguous(memory_format=cl)
    want = F.conv2d(x.double(), w.double(), b.double(), padding=1)
    assert_close(y, want, *_tol((2, 16, 33, 17, 24, 3, 3), torch.bfloat16), what="channels_last views")


GRAD_CASES = [CASES[i] for i in (0, 1, 2, 3, 4, 6, 7, 8)]


@pytest.mark.parametrize("epilogue", EPILOGUES, ids=lambda e: f"bias={e[0]},relu={e[1]}")
@pytest.mark.parametrize("layout", ["nchw", "nhwc"])
@pytest.mark.parametrize("case", GRAD_CASES, ids=str)
def test_gradient(case, layout, epilogue):
    bias, relu = epilogue
    gen = generator("conv2d grad", case, layout, bias, relu)
    x, w, b = _inputs(case, torch.float32, layout, gen, grad=True)
    b = b if bias else None
    stride, padding, dilation = case[7:]
    y = gpuops.conv2d(x, w, b, stride, padding, dilation, relu=relu, layout=layout)
    g = uniform(y.shape, torch.float32, -1, 1, gen)
    params = [x, w] + ([b] if bias else [])
    got = torch.autograd.grad(y, params, g)
    refs = [t.detach().double().requires_grad_() for t in params]
    # the ReLU's mask from gpuops' y, so that a value near 0 cannot fall on either side
    gd = (g * (y > 0)).double() if relu else g.double()
    want = torch.autograd.grad(reference(*refs[:2], refs[2] if bias else None, case, False, layout), refs, gd)
    N, C, _, _, K, R, S = case[:7]
    P, Q = (y.shape[1], y.shape[2]) if layout == "nhwc" else (y.shape[2], y.shape[3])
    terms = {"x": K * R * S, "weight": N * P * Q, "bias": N * P * Q}  # tests/test_conv.cu's bound
    for name, t, gt, wt in zip(("x", "weight", "bias"), params, got, want):
        assert gt.dtype == torch.float32 and gt.shape == t.shape
        assert_close(gt, wt, 1e-6 * terms[name], 1e-5, what=f"d{name} {case} {layout} bias={bias} relu={relu}")


def test_backward_ops():
    """conv2d_bwd_data and conv2d_bwd_filter directly against torch.nn.grad."""
    gen = generator("conv2d bwd ops")
    x, w, _ = _inputs((2, 3, 9, 11, 5, 3, 3), torch.float32, "nchw", gen)
    dy = uniform((2, 5, 5, 3), torch.float32, -1, 1, gen)  # stride (2, 3), padding 1, dilation (1, 2): 5 x 3
    steps = ([2, 3], [1, 1], [1, 2])
    dx = gpuops.conv2d_bwd_data(dy, w, list(x.shape), *steps)
    dw = gpuops.conv2d_bwd_filter(dy, x, list(w.shape), *steps)
    want_x = torch.nn.grad.conv2d_input(x.shape, w.double(), dy.double(), *steps)
    want_w = torch.nn.grad.conv2d_weight(x.double(), w.shape, dy.double(), *steps)
    assert_close(dx, want_x, 1e-6 * 45, 1e-5, what="conv2d_bwd_data")
    assert_close(dw, want_w, 1e-6 * 30, 1e-5, what="conv2d_bwd_filter")


def test_half_has_no_backward():
    x, w, _ = _inputs((1, 3, 7, 7, 3, 3, 3), torch.bfloat16, "nchw", generator("conv2d bf16 grad"), grad=True)
    y = gpuops.conv2d(x, w, padding=1)
    with pytest.raises(gpuops.GpuopsError, match="dtype bfloat16"):
        y.float().sum().backward()


LEARN_VERSIONS = ["auto", "naive", "const-filter", "shared-tiled", "cached-halo"]


@pytest.mark.parametrize("algo", LEARN_VERSIONS + ["register-1d"])
@pytest.mark.parametrize("n", [1, 7, 33, 1000, 100003])
def test_conv1d(n, algo):
    gen = generator("conv1d", n, algo)
    x = uniform((n,), torch.float32, -1, 1, gen)
    for fw in (1, 2, 3, 4, 7, 15):
        f = uniform((fw,), torch.float32, -1, 1, gen)
        left = (fw - 1) // 2  # padding="same": an even filter has one tap more after the centre
        want = F.conv1d(F.pad(x.double(), (left, fw - 1 - left)).view(1, 1, -1), f.double().view(1, 1, -1)).view(n)
        got = gpuops.conv1d(x, f, algo=algo)
        assert got.shape == x.shape
        assert_close(got, want, 1e-6 * fw, 1e-5, what=f"conv1d n={n} fw={fw} {algo}")


@pytest.mark.parametrize("algo", LEARN_VERSIONS + ["register-2d"])
@pytest.mark.parametrize("hw", [(1, 1), (7, 33), (33, 7), (129, 257), (70, 260)], ids=str)
def test_conv2d_plane(hw, algo):
    gen = generator("conv2d_plane", hw, algo)
    x = uniform(hw, torch.float32, -1, 1, gen)
    for fh, fw in ((1, 1), (3, 3), (2, 5), (4, 1), (15, 15)):
        f = uniform((fh, fw), torch.float32, -1, 1, gen)
        t, lft = (fh - 1) // 2, (fw - 1) // 2
        xp = F.pad(x.double(), (lft, fw - 1 - lft, t, fh - 1 - t))
        want = F.conv2d(xp[None, None], f.double()[None, None])[0, 0]
        assert_close(gpuops.conv2d_plane(x, f, algo=algo), want, 1e-6 * fh * fw, 1e-5,
                     what=f"conv2d_plane {hw} {fh}x{fw} {algo}")


def test_cuda_graph_capture():
    x, w, b = _inputs((2, 16, 33, 33, 24, 3, 3), torch.float16, "nhwc", generator("conv2d graph"))
    want = gpuops.conv2d(x, w, b, padding=1, relu=True, layout="nhwc")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        gpuops.conv2d(x, w, b, padding=1, relu=True, layout="nhwc")  # warm-up off the default stream
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        got = gpuops.conv2d(x, w, b, padding=1, relu=True, layout="nhwc")
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(got, want)


class Block(torch.nn.Module):
    """A residual block in float32: conv 3x3 + ReLU, conv 3x3 stride 2, a 1x1 stride-2 shortcut."""

    def __init__(self, c, k):
        super().__init__()
        gen = torch.Generator(device=DEV).manual_seed(17)

        def p(*shape):
            return torch.nn.Parameter(torch.randn(*shape, device=DEV, generator=gen) * (shape[1] * 9) ** -0.5)

        self.w1, self.w2, self.ws = p(k, c, 3, 3), p(k, k, 3, 3), p(k, c, 1, 1)
        self.b1 = torch.nn.Parameter(torch.zeros(k, device=DEV) + 0.1)

    def forward(self, x):
        h = gpuops.conv2d(x, self.w1, self.b1, padding=1, relu=True)
        return gpuops.conv2d(h, self.w2, stride=2, padding=1) + gpuops.conv2d(x, self.ws, stride=2)


def test_compile_fullgraph_conv_block():
    torch._dynamo.reset()
    m = Block(3, 17)
    x = uniform((2, 3, 33, 33), torch.float32, -1, 1, generator("conv2d compile")).requires_grad_()
    eager = m(x)
    compiled = torch.compile(m, fullgraph=True)(x)
    assert_close(compiled, eager.detach(), 1e-6, 1e-5, what="compiled conv block forward")
    params = [x] + list(m.parameters())
    ge = torch.autograd.grad(eager.sum(), params)
    gc = torch.autograd.grad(compiled.sum(), params)
    for e, c in zip(ge, gc):
        assert_close(c, e, 1e-5, 1e-4, scale=e.abs().max().clamp_min(1.0).expand_as(e), what="compiled conv block backward")


def test_errors():
    x = torch.randn(1, 3, 7, 7, device=DEV)
    w = torch.randn(4, 3, 3, 3, device=DEV)
    with pytest.raises(gpuops.GpuopsError, match="dtype float64"):
        gpuops.conv2d(x.double(), w.double())
    with pytest.raises(gpuops.GpuopsError, match="CUDA"):
        gpuops.conv2d(x.cpu(), w.cpu())
    with pytest.raises(gpuops.GpuopsError, match="one dtype"):
        gpuops.conv2d(x, w.half())
    with pytest.raises(gpuops.GpuopsError, match="contiguous"):
        gpuops.conv2d(x.transpose(2, 3), w)
    with pytest.raises(gpuops.GpuopsError, match="channels"):
        gpuops.conv2d(x, w, layout="nhwc")  # [N, H, W, C] = [1, 3, 7, 7]: 7 channels, weight 3
    with pytest.raises(gpuops.GpuopsError, match="4-d"):
        gpuops.conv2d(x[0], w)
    with pytest.raises(gpuops.GpuopsError, match="bias"):
        gpuops.conv2d(x, w, torch.randn(3, device=DEV))
    with pytest.raises(gpuops.GpuopsError, match="no output"):
        gpuops.conv2d(x, w, dilation=4)
    with pytest.raises(gpuops.GpuopsError, match="stride"):
        gpuops.conv2d(x, w, stride=0)
    with pytest.raises(gpuops.GpuopsError, match="layout"):
        gpuops.conv2d(x, w, layout="chwn")
    with pytest.raises(gpuops.GpuopsError) as e:  # a version convolution does not have: the library's status
        gpuops.conv2d(x, w, algo="online")
    assert e.value.status == gpuops._lib.UNSUPPORTED and e.value.status_string in str(e.value)
    with pytest.raises(gpuops.GpuopsError) as e:  # mma-sync is 16-bit and NHWC only
        gpuops.conv2d(x, w, algo="mma-sync")
    assert e.value.status == gpuops._lib.UNSUPPORTED
    with pytest.raises(gpuops.GpuopsError, match="forward's output"):
        gpuops.conv2d_bwd_data(torch.randn(1, 4, 6, 6, device=DEV), w, list(x.shape), [1, 1], [0, 0], [1, 1])
    with pytest.raises(gpuops.GpuopsError, match="taps"):
        gpuops.conv1d(torch.randn(100, device=DEV), torch.randn(16, device=DEV))
    with pytest.raises(gpuops.GpuopsError, match="dtype float16"):
        gpuops.conv1d(torch.randn(100, device=DEV).half(), torch.randn(3, device=DEV).half())
    with pytest.raises(gpuops.GpuopsError) as e:  # the learning path's versions only
        gpuops.conv2d_plane(torch.randn(9, 9, device=DEV), torch.randn(3, 3, device=DEV), algo="implicit-gemm")
    assert e.value.status == gpuops._lib.UNSUPPORTED
