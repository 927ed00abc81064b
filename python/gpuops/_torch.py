# SPDX-License-Identifier: MIT
"""What every family's bindings share: the storage types, the checks of tensors, the launch on the
tensor's current CUDA stream, workspace from PyTorch's caching allocator, and `define`, which
turns one table row (name, parameters, implementation, fake implementation, backward) into a
PyTorch custom op."""
import torch

from . import _capi, _lib
from ._lib import INVALID_ARGUMENT, UNSUPPORTED, GpuopsError

# torch dtype -> the C suffix of a storage type.
FLOAT = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}
SCAN_TYPES = {torch.float32: "f32", torch.int32: "i32", torch.int64: "i64"}
# Transpose copies bits: any element of 1, 2, 4 or 8 bytes goes through the C type of that width.
BY_WIDTH = {1: "i8", 2: "f16", 4: "f32", 8: "i64"}


def suffix(op, t, types):
    """The C suffix of t's dtype among `types` (a dtype -> suffix dict), else GpuopsError."""
    s = types.get(t.dtype)
    if s is None:
        names = ", ".join(str(d).replace("torch.", "") for d in types)
        raise GpuopsError(UNSUPPORTED, op, f"dtype {str(t.dtype).replace('torch.', '')} (this op takes {names})")
    return s


DEVICE_TYPES = ("cuda", "meta")  # where tensors may live: CUDA, or a meta tensor while tracing


def check(op, *tensors, contiguous=True, same_dtype=True, same_shape=False):
    """Every tensor on one CUDA device (a fake or meta tensor passes while tracing), of one dtype,
    contiguous, and (same_shape) of one shape; GpuopsError (invalid argument) otherwise."""
    first = tensors[0]
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise GpuopsError(INVALID_ARGUMENT, op, f"expects tensors, got {type(t).__name__}")
        if t.device.type not in DEVICE_TYPES:
            raise GpuopsError(INVALID_ARGUMENT, op, f"expects CUDA tensors, got one on {t.device}")
        if t.device != first.device:
            raise GpuopsError(INVALID_ARGUMENT, op, f"expects tensors on one device, got {first.device} and {t.device}")
        if same_dtype and t.dtype != first.dtype:
            raise GpuopsError(INVALID_ARGUMENT, op, f"expects one dtype, got {first.dtype} and {t.dtype}")
        if same_shape and t.shape != first.shape:
            raise GpuopsError(INVALID_ARGUMENT, op, f"expects one shape, got {tuple(first.shape)} and {tuple(t.shape)}")
        if contiguous and not t.is_contiguous():
            raise GpuopsError(INVALID_ARGUMENT, op, "expects contiguous tensors (call .contiguous() first)")


def rows_cols(t):
    """A tensor as the row-major matrix of its last dimension: (rows, cols); a 0-d tensor is 1 x 1."""
    cols = t.shape[-1] if t.dim() > 0 else 1
    return (t.numel() // cols if cols else 0), cols


OP_N = _capi.ENUMS["gpuops_op"]["GPUOPS_OP_N"]
OP_T = _capi.ENUMS["gpuops_op"]["GPUOPS_OP_T"]


def layout(name, t):
    """(gpuops_op, leading dimension) of a 2-d matrix operand as it lies in memory: rows of unit
    stride are op N with leading dimension stride(0); columns of unit stride (a transposed view such
    as w.t()) op T with leading dimension stride(1); anything else GpuopsError."""
    rows, cols = t.shape
    s0, s1 = t.stride()
    if cols <= 1 or s1 == 1:  # rows of unit stride: row-major with pitch s0
        ld = s0 if rows > 1 else max(cols, 1)
        if ld >= max(cols, 1):
            return OP_N, ld
    if rows <= 1 or s0 == 1:  # columns of unit stride: the transpose of a row-major matrix
        ld = s1 if cols > 1 else max(rows, 1)
        if ld >= max(rows, 1):
            return OP_T, ld
    raise GpuopsError(INVALID_ARGUMENT, name, f"operand of strides {tuple(t.stride())} has no unit-stride dimension "
                      "(call .contiguous())")


def optional_out(wanted, shape, like, dtype=None):
    """An output the caller may decline: a new tensor of `shape`, or an empty one (shape [0]) that
    stands for NULL in the C call (an op's schema cannot return None)."""
    return like.new_empty(shape if wanted else (0,), dtype=dtype or like.dtype)


def ptr(t):
    """A tensor for the C call, or None (NULL) for a missing or declined (empty) one."""
    return t if t is not None and t.numel() > 0 else None


def launch(name, device, **args):
    """C entry point `name` on `device`'s current stream (with that device current)."""
    if device.index is not None and device.index != torch.cuda.current_device():
        with torch.cuda.device(device):
            _lib.call(name, stream=torch.cuda.current_stream(device).cuda_stream, **args)
    else:
        _lib.call(name, stream=torch.cuda.current_stream(device).cuda_stream, **args)


def workspace(nbytes, device):
    """nbytes of device memory from PyTorch's caching allocator (on the current stream, so it is
    not reused before the op that takes it has run), or None for 0. The allocator's blocks are
    512-byte aligned (GPUOPS_WORKSPACE_ALIGN is 16)."""
    return torch.empty(nbytes, dtype=torch.uint8, device=device) if nbytes > 0 else None


REQUIRED = object()  # a parameter without a default


def _fmt(v):
    if isinstance(v, bool):
        return "True" if v else "False"
    if v is None:
        return "None"
    return repr(v)


OPS = {}  # op name -> the custom op (torch.ops.gpuops.<name>)


def define(name, params, returns, impl, fake, *, mutates=(), backward=None, setup=None):
    """Registers torch.ops.gpuops.<name>.

    params   [(name, schema type, default or REQUIRED)], e.g. [("x", "Tensor", REQUIRED),
             ("algo", "int", 0)]; a mutated tensor is "Tensor(a!)" and is named in `mutates`.
    returns  the schema's return ("Tensor", "()").
    impl     impl(**args) on CUDA tensors; fake(**args) the same on fake tensors (shapes only).
    setup    setup(ctx, args, output) saves what the backward needs (args by name);
    backward backward(ctx, grad) -> {input name: gradient} (missing names get None).
    """
    names = [p[0] for p in params]
    defaults = {p[0]: p[2] for p in params if p[2] is not REQUIRED}
    sig = ", ".join(f"{t} {n}" + ("" if d is REQUIRED else f"={_fmt(d)}") for n, t, d in params)
    schema = f"({sig}) -> {returns}"

    def bind(args, kwargs):
        # The dispatcher drops trailing arguments equal to their defaults: put them back.
        vals = dict(defaults)
        vals.update(zip(names, args))
        vals.update(kwargs)
        return vals

    def real(*args, **kwargs):
        return impl(**bind(args, kwargs))

    def fake_(*args, **kwargs):
        return fake(**bind(args, kwargs))

    real.__name__ = fake_.__name__ = name
    op = torch.library.custom_op(f"gpuops::{name}", real, mutates_args=tuple(mutates), schema=schema)
    op.register_fake(fake_)
    if backward is not None:

        def setup_context(ctx, inputs, output):
            if setup is not None:
                setup(ctx, bind(inputs, {}), output)  # the trailing defaults too

        def backward_(ctx, *grads):
            got = backward(ctx, *grads)
            return tuple(got.get(n) for n in names)

        op.register_autograd(backward_, setup_context=setup_context)
    OPS[name] = op
    return op


def algo_arg(algo):
    return _lib.algo_value(algo)
