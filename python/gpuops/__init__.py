# SPDX-License-Identifier: MIT
"""gpuops for PyTorch: the library's ops on torch tensors, through libgpuops.so (`make lib`) loaded
with ctypes, so nothing is compiled at import time.

Each op is a PyTorch custom op, torch.ops.gpuops.<name>, with a fake implementation (torch.compile
traces through it without a graph break) and, where the library has the backward, autograd. Ops
check device, dtype, shape and layout, run on the current CUDA stream of their tensors' device, take
their workspace from PyTorch's caching allocator, and raise GpuopsError (which carries
gpuops_status_string of the failing status) on bad input.

    import torch, gpuops
    x = torch.randn(4096, 1000, device="cuda")
    y = gpuops.softmax(x)                        # torch.softmax(x, -1)
    h = gpuops.gelu(x, approximate="tanh")       # torch.nn.functional.gelu
    s = gpuops.sum(x, dim=-1)                    # float32 row sums

The functions below take an op's version as `algo` ("auto", or a name of GPUOPS_ALGO_LIST such as
"online"; gpuops.ALGOS lists them). Every op of the registries is also here under its C name
(gpuops.silu_bwd, gpuops.log_softmax_fwd, ...), and gpuops.OPS maps each name to its custom op.
"""
from ._lib import ALGOS, GpuopsError, GpuopsLibraryError, library_path, load  # noqa: F401
from . import _capi
from . import _lib

try:
    import torch
except ImportError as e:  # the package is for PyTorch users; the C API data above needs no torch
    raise ImportError("gpuops: the Python package needs PyTorch (pip install torch)") from e

from ._torch import OPS  # noqa: E402
from . import _elementwise, _reduce, _scan, _softmax, _transpose, _matmul, _norm, _gemm, _attention, _conv  # noqa: E402,F401 (register ops)

__version__ = _capi.VERSION
_algo = _lib.algo_value


def _generic(name):
    """gpuops.<name>: the custom op, with algo given by name or value; an op that updates a
    tensor in place returns it."""
    op = OPS[name]
    schema = getattr(torch.ops.gpuops, name).default._schema
    mutated = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]

    def f(*args, algo="auto", **kwargs):
        out = op(*args, algo=_algo(algo), **kwargs)
        if mutated:
            return args[0] if args else kwargs[mutated[0]]
        return out

    f.__name__ = name
    f.__doc__ = f"torch.ops.gpuops.{schema}"
    return f


for _name in OPS:
    globals()[_name] = _generic(_name)

# ---- the PyTorch-shaped front: names and arguments as in torch ----
_GELU = {"none": 0, "erf": 0, "tanh": 1}


def _approx(op, approximate):
    if approximate not in _GELU:
        raise GpuopsError(_lib.INVALID_ARGUMENT, op, f"approximate={approximate!r} ('none' or 'tanh')")
    return _GELU[approximate]


def gelu(x, approximate="none", algo="auto"):
    """torch.nn.functional.gelu(x, approximate=...): "none" (erf) or "tanh"."""
    return OPS["gelu_fwd"](x, _approx("gelu", approximate), _algo(algo))


def silu(x, algo="auto"):
    """torch.nn.functional.silu(x)."""
    return OPS["silu_fwd"](x, _algo(algo))


def relu(x, algo="auto"):
    """torch.relu(x)."""
    return OPS["relu_fwd"](x, _algo(algo))


def sigmoid(x, algo="auto"):
    """torch.sigmoid(x)."""
    return OPS["sigmoid_fwd"](x, _algo(algo))


def tanh(x, algo="auto"):
    """torch.tanh(x)."""
    return OPS["tanh_fwd"](x, _algo(algo))


def axpy_(y, x, a, algo="auto"):
    """y += a * x in place (one rounding); returns y."""
    OPS["axpy"](y, x, a, _algo(algo))
    return y


def _reduce(name, op, x, dim, algo):
    if dim is None:
        return OPS["reduce"](x, op, _algo(algo))
    if dim not in (-1, x.dim() - 1):
        raise GpuopsError(_lib.UNSUPPORTED, name, f"dim={dim}: the last dimension (-1) or all (None) only")
    return OPS["reduce_rows"](x, op, _algo(algo))


def sum(x, dim=None, algo="auto"):  # noqa: A001 - torch's name
    """torch.sum(x, dtype=torch.float32) (dim=None) or x.sum(-1, dtype=torch.float32) (dim=-1)."""
    return _reduce("sum", 0, x, dim, algo)


def amax(x, dim=None, algo="auto"):
    """torch.amax(x).float() over all elements (dim=None) or the last dimension (dim=-1)."""
    return _reduce("amax", 1, x, dim, algo)


def amin(x, dim=None, algo="auto"):
    """torch.amin(x).float() over all elements (dim=None) or the last dimension (dim=-1)."""
    return _reduce("amin", 2, x, dim, algo)


def histogram(x, bins, algo="auto"):
    """Counts of the int32 values 0 .. bins-1 (others are not counted): torch.bincount(x, minlength=bins)
    for values in range."""
    return OPS["histogram"](x, bins, _algo(algo))


def cumsum(x, exclusive=False, algo="auto"):
    """torch.cumsum(x, -1, dtype=x.dtype); exclusive=True shifts it right by one (0 first)."""
    return OPS["cumsum"](x, exclusive, _algo(algo))


def softmax(x, algo="auto"):
    """torch.softmax(x, -1)."""
    return OPS["softmax_fwd"](x, _algo(algo))


def log_softmax(x, algo="auto"):
    """torch.log_softmax(x, -1)."""
    return OPS["log_softmax_fwd"](x, _algo(algo))


def softmax_backward(dy, y, algo="auto"):
    """The softmax backward from its output y: torch.ops.aten._softmax_backward_data(dy, y, -1, dtype)."""
    return OPS["softmax_bwd"](dy, y, _algo(algo))


def transpose(x, algo="auto"):
    """x.t().contiguous() of a 2-d tensor of 1-, 2-, 4- or 8-byte elements."""
    return OPS["transpose"](x, _algo(algo))


def matmul(a, b, alpha=1.0, algo="auto"):
    """alpha * a @ b in float32 on CUDA cores (no TF32): torch.matmul with allow_tf32 off."""
    return OPS["matmul"](a, b, float(alpha), _algo(algo))


def layernorm(x, weight=None, bias=None, eps=1e-5, return_stats=False, algo="auto"):
    """torch.nn.functional.layer_norm(x, x.shape[-1:], weight, bias, eps); return_stats: (y, mean, rstd),
    the float32 statistics of each row (rstd = 1 / sqrt(var + eps))."""
    y, mean, rstd = OPS["layernorm_fwd"](x, weight, bias, float(eps), _algo(algo))
    return (y, mean, rstd) if return_stats else y


def rmsnorm(x, weight=None, eps=None, return_stats=False, algo="auto"):
    """torch.nn.functional.rms_norm(x, x.shape[-1:], weight, eps) (eps None: torch.finfo(x.dtype).eps, as
    PyTorch); return_stats: (y, rstd)."""
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    y, rstd = OPS["rmsnorm_fwd"](x, weight, float(eps), _algo(algo))
    return (y, rstd) if return_stats else y


def add_layernorm(x, residual, weight=None, bias=None, eps=1e-5, algo="auto"):
    """h = x + residual (rounded to x's dtype) and layernorm(h, weight, bias, eps) in one pass: (h, y)."""
    y, h, _, _ = OPS["add_layernorm_fwd"](x, residual, weight, bias, float(eps), _algo(algo))
    return h, y


def add_rmsnorm(x, residual, weight=None, eps=None, algo="auto"):
    """h = x + residual (rounded to x's dtype) and rmsnorm(h, weight, eps) in one pass: (h, y)."""
    eps = torch.finfo(x.dtype).eps if eps is None else eps
    y, h, _ = OPS["add_rmsnorm_fwd"](x, residual, weight, float(eps), _algo(algo))
    return h, y


def layernorm_gelu(x, weight=None, bias=None, eps=1e-5, approximate="none", return_stats=False, algo="auto"):
    """torch.nn.functional.gelu(layernorm(x, weight, bias, eps), approximate=...) in one pass;
    return_stats: (y, mean, rstd)."""
    y, mean, rstd = OPS["layernorm_gelu_fwd"](x, weight, bias, float(eps), _approx("layernorm_gelu", approximate),
                                              _algo(algo))
    return (y, mean, rstd) if return_stats else y


_PAIRING = {"adjacent": 0, "halves": 1}


def rope(x, positions=None, cos_sin=None, rot_dim=None, base=10000.0, pairing="adjacent", algo="auto"):
    """Rotary position embedding of x [tokens, heads, head_dim] (any token stride): the first rot_dim
    (None: all) dims of each head rotate in pairs, "adjacent" (2i, 2i + 1; GPT-J) or "halves" (i,
    i + rot_dim / 2; GPT-NeoX, Llama), by position * base^(-2i / rot_dim), or by a float32 cos_sin
    cache [positions, rot_dim] (cos of the pairs, then their sin); positions: int64 [tokens] (None:
    0 .. tokens - 1). A new contiguous tensor; autograd through the inverse rotation."""
    if pairing not in _PAIRING:
        raise GpuopsError(_lib.INVALID_ARGUMENT, "rope", f"pairing={pairing!r} ('adjacent' or 'halves')")
    return OPS["rope_fwd"](x, positions, cos_sin, rot_dim, float(base), _PAIRING[pairing], _algo(algo))


def gemm(a, b, c=None, alpha=1.0, beta=0.0, bias=None, activation=None, residual=None, out_dtype=None,
         return_preact=False, algo="auto"):
    """act(alpha a @ b + beta c + bias) + residual on tensor cores, float16 or bfloat16 operands (any
    transposed views), float32 accumulation, out in the operands' dtype or out_dtype=torch.float32;
    activation None, "gelu_erf", "gelu_tanh", "silu" or "relu"; return_preact: (out, the value
    before the activation). No autograd (see linear)."""
    out, pre = OPS["gemm"](a, b, c, bias, residual, float(alpha), float(beta), _gemm.activation(activation), out_dtype,
                           return_preact, _algo(algo))
    return (out, pre) if return_preact else out


def linear(x, weight, bias=None, activation=None, algo="auto"):
    """act(torch.nn.functional.linear(x, weight, bias)), float16 or bfloat16, activation None, "gelu_erf"
    (F.gelu), "gelu_tanh", "silu" or "relu"; autograd through the library's linear backward."""
    act = _gemm.activation(activation)
    grad = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias))
    return OPS["linear_fwd"](x, weight, bias, act, bool(act and grad), _algo(algo))[0]


_LAYOUTS = {"bshd": False, "bhsd": True}


def _attention_args(layout):
    if layout not in _LAYOUTS:
        raise GpuopsError(_lib.INVALID_ARGUMENT, "attention", f"layout={layout!r} ('bshd' or 'bhsd')")
    return _LAYOUTS[layout]


def attention(q, k, v, *, causal=False, scale=None, layout="bshd", return_lse=False, algo="auto"):
    """softmax(scale q k^T + mask) v, float16 or bfloat16 (float32: "naive" and "flash"): q [B, Sq, Hq, D],
    k and v [B, Sk, Hkv, D] (layout "bshd"), or [B, H, S, D] ("bhsd", as scaled_dot_product_attention),
    any strides with the last dimension contiguous; Hq a multiple of Hkv (grouped-query, multi-query);
    D a multiple of 8 up to 256; scale None: 1 / sqrt(D). causal: query i sees key j <= i + Sk - Sq
    (the bottom-right corner: F.scaled_dot_product_attention(is_causal=True) only where Sq == Sk);
    a query that sees no key gives 0. Out in q's shape, contiguous; return_lse: (out, lse), lse the
    float32 log-sum-exp of each row's scaled scores [B, Hq, Sq] (no gradient). Autograd through the
    library's attention backward."""
    o, lse = OPS["attention_fwd"](q, k, v, None if scale is None else float(scale), bool(causal),
                                  _attention_args(layout), _algo(algo))
    return (o, lse) if return_lse else o


_CONV_LAYOUTS = {"nchw": False, "nhwc": True}


def _pair(op, name, v):
    v = (v, v) if isinstance(v, int) else tuple(v)
    if len(v) != 2 or not all(isinstance(e, int) for e in v):
        raise GpuopsError(_lib.INVALID_ARGUMENT, op, f"{name}={v!r} (an int or two)")
    return list(v)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, relu=False, layout="nchw", algo="auto"):
    """torch.nn.functional.conv2d(x, weight, bias, stride, padding, dilation) (groups 1), then ReLU
    where relu; float32, float16 or bfloat16, every tensor contiguous. layout "nchw": x [N, C, H, W],
    weight [K, C, R, S] (nn.Conv2d's), out [N, K, P, Q]. layout "nhwc" (channels last, dimensions in
    memory order): x [N, H, W, C], weight [K, R, S, C], out [N, P, Q, K]; from channels_last torch
    tensors, x.permute(0, 2, 3, 1) and weight.permute(0, 2, 3, 1) are these without a copy, and
    out.permute(0, 3, 1, 2) is torch's [N, K, P, Q] view. stride, padding, dilation: an int or
    (h, w). Autograd (x, weight, bias) through the library's float32 backward; float16 and bfloat16
    have none (their gradient raises GpuopsError)."""
    if layout not in _CONV_LAYOUTS:
        raise GpuopsError(_lib.INVALID_ARGUMENT, "conv2d", f"layout={layout!r} ('nchw' or 'nhwc')")
    steps = [_pair("conv2d", n, v) for n, v in (("stride", stride), ("padding", padding), ("dilation", dilation))]
    return OPS["conv2d_fwd"](x, weight, bias, *steps, bool(relu), _CONV_LAYOUTS[layout], _algo(algo))


def conv1d(x, f, algo="auto"):
    """The learning path's 1-d convolution of one float32 signal x [n] with one filter f [fw] (1 to
    15 taps), output of x's length: torch.nn.functional.conv1d(x.view(1, 1, n), f.view(1, 1, fw),
    padding="same").view(n) (an even filter has one tap more after the centre). No autograd."""
    return OPS["conv1d"](x, f, _algo(algo))


def conv2d_plane(x, f, algo="auto"):
    """conv1d's 2-d form: one float32 plane x [h, w], one filter f [fh, fw] (1 to 15 taps each way):
    torch.nn.functional.conv2d(x[None, None], f[None, None], padding="same")[0, 0]. No autograd."""
    return OPS["conv2d_plane"](x, f, _algo(algo))


__all__ = sorted({n for n in OPS} | {"gelu", "silu", "relu", "sigmoid", "tanh", "axpy_", "amax", "amin", "histogram",
                                    "cumsum", "softmax", "log_softmax", "softmax_backward", "transpose", "matmul",
                                    "layernorm", "rmsnorm", "add_layernorm", "add_rmsnorm", "layernorm_gelu", "rope",
                                    "gemm", "linear", "attention", "conv2d", "conv1d",
                                    "conv2d_plane", "GpuopsError", "GpuopsLibraryError", "ALGOS", "OPS",
                                    "library_path"})
