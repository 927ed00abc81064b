# SPDX-License-Identifier: MIT
"""Every elementwise op of the registry against its PyTorch counterpart (float64 on the same
rounded inputs), every float type, odd sizes and shapes, every version; the int8 quantizers
exactly."""
import pytest

from _common import DEV, FLOATS, TOL, assert_close, generator, gpuops, torch, uniform

F, aten = torch.nn.functional, torch.ops.aten
APPROX = ("none", "tanh")

# op name -> the PyTorch form on float64 tensors and the op's scalars (by the C parameter names).
REF = {
    "add": lambda t: t["a"] + t["b"],
    "add_scalar": lambda t: t["x"] + t["s"],
    "axpy": lambda t: t["a"] * t["x"] + t["y"],
    "gelu_fwd": lambda t: F.gelu(t["x"], approximate=APPROX[t["approx"]]),
    "gelu_bwd": lambda t: aten.gelu_backward(t["dy"], t["x"], approximate=APPROX[t["approx"]]),
    "silu_fwd": lambda t: F.silu(t["x"]),
    "silu_bwd": lambda t: aten.silu_backward(t["dy"], t["x"]),
    "relu_fwd": lambda t: torch.relu(t["x"]),
    "relu_bwd": lambda t: aten.threshold_backward(t["dy"], t["x"], 0),
    "sigmoid_fwd": lambda t: torch.sigmoid(t["x"]),
    "sigmoid_bwd": lambda t: aten.sigmoid_backward(t["dy"], torch.sigmoid(t["x"])),
    "tanh_fwd": lambda t: torch.tanh(t["x"]),
    "tanh_bwd": lambda t: aten.tanh_backward(t["dy"], torch.tanh(t["x"])),
    "add_mul_exp": lambda t: torch.exp((t["x"] + t["z"]) * t["s"]),
}
SCALARS = {"s": 0.75, "a": 0.375}  # the float scalars' values (add_mul_exp's s is 0.75 too)
ROWS = [r for r in gpuops._capi.REGISTRIES["EW_OPS"] if r[1] not in ("QUANTIZE", "DEQUANTIZE")]
SHAPES = [(1,), (7,), (1000,), (4097,), (3, 5, 7), (1 << 20) + 3]
VERSIONS = ["auto", "naive", "grid-stride", "vectorized"]


def test_every_registry_op_has_a_reference():
    assert {r[0] for r in ROWS} <= set(REF), "an elementwise op without a PyTorch reference here"


def _case(name, lo, hi, dtype, shape, approx, salt):
    """The op's arguments by C name (tensors in dtype) and the same in float64 for the reference."""
    schema = getattr(torch.ops.gpuops, name).default._schema
    gen = generator(name, dtype, shape, salt)
    args, ref = {}, {}
    for a in schema.arguments:
        if a.name == "algo":
            continue
        if str(a.type) == "Tensor":
            args[a.name] = uniform(shape, dtype, lo, hi, gen)
            ref[a.name] = args[a.name].double()
        elif a.name == "approx":
            args[a.name] = ref[a.name] = approx
        else:
            args[a.name] = SCALARS[a.name]
            ref[a.name] = float(torch.tensor(SCALARS[a.name], dtype=torch.float32))
    return args, ref


def _run(name, lo, hi, dtype, shape, approx, algo):
    args, ref = _case(name, lo, hi, dtype, shape, approx, algo)
    in_place = name == "axpy"
    want = REF[name](ref)
    y0 = args["y"].clone() if in_place else None
    got = getattr(gpuops, name)(**args, algo=algo)
    if in_place:
        assert got is args["y"] and not torch.equal(got, y0)
    atol, rtol = TOL[dtype]
    scale = ref["dy"] if "dy" in ref else None
    assert_close(got, want, atol, rtol, scale=scale, what=f"{name} {dtype} {shape} {algo}")
    assert got.dtype == dtype and got.shape == args[next(iter(args))].shape


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r[0])
def test_op_against_torch(row, shape, dtype):
    name, _, _, _, lo, hi = row
    for approx in (0, 1) if name.startswith("gelu") else (0,):
        _run(name, lo, hi, dtype, shape, approx, "auto")


@pytest.mark.parametrize("algo", VERSIONS + ["unfused"])
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r[0])
def test_every_version(row, algo):
    name, _, _, fused, lo, hi = row
    if algo == "unfused" and not fused:
        with pytest.raises(gpuops.GpuopsError, match="unsupported"):
            _run(name, lo, hi, torch.float32, (1001,), 0, algo)
        return
    for dtype in (torch.float32, torch.bfloat16):
        _run(name, lo, hi, dtype, (65536 + 5,), 1 if name.startswith("gelu") else 0, algo)


def test_misaligned_views_run_or_refuse():
    x = uniform((4099,), torch.float32, -3, 3, generator("misaligned"))
    y = gpuops.silu(x[1:])  # 4 bytes past a 16-byte boundary: AUTO takes the element path
    assert_close(y, F.silu(x[1:].double()), *TOL[torch.float32])
    with pytest.raises(gpuops.GpuopsError, match="misaligned"):
        gpuops.add(x[1:4097], x[2:4098], algo="vectorized")  # pointers at different offsets mod 16


# ---- int8 quantization, exact (the reference rounds to float32 where the library does) ----

def _q_ref(x, scale, zp):
    """round_half_even(x / scale + zp) clamped, each step rounded to float32 as the library does
    (float64 then float32 gives the correctly rounded float32 quotient and sum)."""
    v = (x.double() / scale.double()).float()
    v = (v.double() + zp.double()).float()
    return torch.clamp(torch.round(v), -128, 127).to(torch.int8).cpu()


@pytest.mark.parametrize("algo", ["auto", "naive", "grid-stride", "vectorized", "unfused"])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_quantize_dequantize(dtype, algo):
    gen = generator("quant", dtype, algo)
    x = uniform((3, 1001), dtype, -3, 3, gen)
    q = gpuops.quantize(x, 0.02, 3, algo=algo)
    assert q.dtype == torch.int8 and q.shape == x.shape
    assert torch.equal(q.cpu(), _q_ref(x, torch.tensor(0.02, device=DEV), torch.tensor(3.0, device=DEV)))
    y = gpuops.dequantize(q, 0.02, 3, dtype, algo=algo)
    want = ((q.float() - 3) * torch.tensor(0.02, dtype=torch.float32, device=DEV)).double()
    assert_close(y, want, *TOL[dtype], what="dequantize")


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_quantize_per_channel(dtype, axis):
    gen = generator("quant_pc", dtype, axis)
    x = uniform((5, 67, 3), dtype, -3, 3, gen)
    c = x.shape[axis]
    scale = torch.rand(c, device=DEV, generator=gen) * 0.04 + 0.01
    zp = torch.randint(-20, 21, (c,), device=DEV, dtype=torch.int32, generator=gen)
    q = gpuops.quantize_per_channel(x, scale, zp, axis)
    view = [1] * x.dim()
    view[axis] = c
    assert torch.equal(q.cpu(), _q_ref(x, scale.view(view), zp.view(view)))
    y = gpuops.dequantize_per_channel(q, scale, zp, axis, dtype)
    want = (q.float() - zp.float().view(view)) * scale.view(view)
    assert_close(y, want.double(), *TOL[dtype], what="dequantize_per_channel")
    with pytest.raises(gpuops.GpuopsError, match="invalid argument"):
        gpuops.quantize_per_channel(x, scale[:-1], zp[:-1], axis)


def test_quantize_bad_scale():
    x = torch.ones(10, device=DEV)
    with pytest.raises(gpuops.GpuopsError, match="invalid argument"):
        gpuops.quantize(x, 0.0, 0)  # the library refuses a scale that is not finite and > 0
