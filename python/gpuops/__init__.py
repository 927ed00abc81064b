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
from . import _elementwise, _reduce, _scan, _softmax, _transpose, _matmul  # noqa: E402,F401  (each registers its ops)

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


def gelu(x, approximate="none", algo="auto"):
    """torch.nn.functional.gelu(x, approximate=...): "none" (erf) or "tanh"."""
    if approximate not in _GELU:
        raise GpuopsError(_lib.INVALID_ARGUMENT, "gelu", f"approximate={approximate!r} ('none' or 'tanh')")
    return OPS["gelu_fwd"](x, _GELU[approximate], _algo(algo))


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


__all__ = sorted({n for n in OPS} | {"gelu", "silu", "relu", "sigmoid", "tanh", "axpy_", "amax", "amin", "histogram",
                                    "cumsum", "softmax", "log_softmax", "softmax_backward", "transpose", "matmul",
                                    "GpuopsError", "GpuopsLibraryError", "ALGOS", "OPS", "library_path"})
