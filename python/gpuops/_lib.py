# SPDX-License-Identifier: MIT
"""The shared library through ctypes: finding and loading libgpuops.so, one ctypes signature per C
function (from _capi, generated from gpuops.h), the error type, and `call`, which runs one C entry
point by parameter name. Imports without PyTorch."""
import ctypes
import os
import re

from . import _capi

_HERE = os.path.dirname(os.path.abspath(__file__))

# The C types of gpuops.h's parameters as ctypes sees them: every pointer is a c_void_p (a
# tensor's data_ptr()), every enum an int.
_SCALARS = {
    "int64_t": ctypes.c_int64,
    "int32_t": ctypes.c_int32,
    "int": ctypes.c_int,
    "uint16_t": ctypes.c_uint16,
    "float": ctypes.c_float,
    "double": ctypes.c_double,
    "size_t": ctypes.c_size_t,
    "gpuops_stream": ctypes.c_void_p,
    "gpuops_f16": ctypes.c_uint16,
    "gpuops_bf16": ctypes.c_uint16,
    "const char *": ctypes.c_char_p,
    "void": None,
}


def _ctype(c):
    arr = re.match(r"^(.*)\[(\d+)\]$", c)  # a struct's array field, "T[n]"
    if arr:
        return _ctype(arr.group(1)) * int(arr.group(2))
    if c in _SCALARS:
        return _SCALARS[c]
    if c.endswith("*"):
        return ctypes.c_void_p
    if c in _capi.ENUMS or c == "gpuops_status":
        return ctypes.c_int
    raise TypeError(f"gpuops: no ctypes type for C type {c!r}")


STATUS = _capi.ENUMS["gpuops_status"]
OK = STATUS["GPUOPS_OK"]
INVALID_ARGUMENT = STATUS["GPUOPS_ERR_INVALID_ARGUMENT"]
UNSUPPORTED = STATUS["GPUOPS_ERR_UNSUPPORTED"]
ERR_CUDA = STATUS["GPUOPS_ERR_CUDA"]


def library_candidates():
    """Where the library is looked for, in order: $GPUOPS_LIBRARY, beside the package, the
    repository's build/ (make lib), then the loader's search path."""
    out = []
    if os.environ.get("GPUOPS_LIBRARY"):
        out.append(os.environ["GPUOPS_LIBRARY"])
    out.append(os.path.join(_HERE, "libgpuops.so"))
    out.append(os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build", "libgpuops.so"))
    out.append("libgpuops.so")
    return out


_lib = None
_path = None
_fns = {}


def load():
    """The loaded library (loaded once). Raises GpuopsLibraryError with what to do when missing."""
    global _lib, _path
    if _lib is not None:
        return _lib
    tried = []
    for path in library_candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path} (no such file)")
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            tried.append(f"{path} ({e})")
            continue
        _lib, _path = lib, path
        return lib
    raise GpuopsLibraryError(
        "gpuops: libgpuops.so not found. Build it with `make lib` in the repository root (it writes "
        "build/libgpuops.so, which the package finds), or set GPUOPS_LIBRARY to its path. Tried: " + "; ".join(tried))


def library_path():
    """The path of the loaded library (loading it)."""
    load()
    return _path


def fn(name):
    """The C function `name` with its ctypes signature."""
    f = _fns.get(name)
    if f is None:
        if name not in _capi.FUNCTIONS:
            raise GpuopsError(UNSUPPORTED, name, "no such function in gpuops.h (a family this build lacks?)")
        ret, params = _capi.FUNCTIONS[name]
        f = getattr(load(), name)
        f.restype = _ctype(ret)
        f.argtypes = [_ctype(c) for c, _ in params]
        _fns[name] = f
    return f


_structs = {}


def struct(name):
    """The ctypes.Structure of the public C struct `name`, its fields as gpuops.h declares them."""
    s = _structs.get(name)
    if s is None:
        fields = [(f, _ctype(c)) for c, f in _capi.STRUCTS[name]]
        s = _structs[name] = type(name, (ctypes.Structure,), {"_fields_": fields})
    return s


def status_string(status):
    """gpuops_status_string(status); the enum's name where the library cannot be loaded."""
    try:
        return fn("gpuops_status_string")(status).decode()
    except GpuopsLibraryError:
        names = {v: k for k, v in STATUS.items()}
        return names.get(status, f"status {status}")


class GpuopsLibraryError(ImportError):
    """libgpuops.so could not be found or loaded."""


class GpuopsError(RuntimeError):
    """A gpuops call refused its arguments or failed. Attributes: status (the gpuops_status value),
    status_string (gpuops_status_string of it), function (the C entry point or Python op),
    cuda_error (the cudaError_t behind GPUOPS_ERR_CUDA, else 0) and detail."""

    def __init__(self, status, function, detail=""):
        self.status = int(status)
        self.function = function
        self.detail = detail
        self.status_string = status_string(self.status)
        self.cuda_error = 0
        if self.status == ERR_CUDA:
            try:
                self.cuda_error = int(fn("gpuops_cuda_error")())
            except GpuopsLibraryError:
                pass
        msg = f"{function}: {self.status_string}"
        if detail:
            msg += f": {detail}"
        if self.cuda_error:
            msg += f" (CUDA error {self.cuda_error})"
        super().__init__(msg)


def params(name):
    """The parameter names of C function `name`, in order."""
    return [p for _, p in _capi.FUNCTIONS[name][1]]


def call(name, **args):
    """Calls C function `name` with its parameters given by name (tensors pass their data_ptr()),
    and raises GpuopsError unless it returns GPUOPS_OK."""
    f = fn(name)
    try:
        values = [args.pop(p) for p in params(name)]
    except KeyError as e:
        raise TypeError(f"{name}: missing parameter {e}") from None
    if args:
        raise TypeError(f"{name}: unknown parameters {sorted(args)}")
    values = [v.data_ptr() if hasattr(v, "data_ptr") else v for v in values]
    status = f(*values)
    if status != OK:
        raise GpuopsError(status, name)


def workspace_size(name, *args):
    """gpuops_<op>_workspace_size(...) in bytes."""
    return int(fn(name)(*args))


ALGOS = dict(_capi.ALGOS)


def algo_value(algo):
    """A gpuops_algo from a name ("auto", "online", ...) or a value."""
    if isinstance(algo, str):
        if algo not in ALGOS:
            raise GpuopsError(INVALID_ARGUMENT, "algo", f"unknown version {algo!r}; versions: {', '.join(sorted(ALGOS))}")
        return ALGOS[algo]
    return int(algo)
