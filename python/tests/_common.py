# SPDX-License-Identifier: MIT
"""What the pytest files share: the skip where PyTorch or a CUDA device is missing, the run's seed,
DESIGN.md's tolerances and the comparison every test makes."""
import os
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device (torch.cuda.is_available() is False)", allow_module_level=True)

import gpuops  # noqa: E402  (a missing libgpuops.so fails here, loudly: run `make lib`)

gpuops.load()

# GPUOPS_SEED replays a run; otherwise a fresh seed each run (conftest.py prints it).
SEED = int(os.environ.get("GPUOPS_SEED", time.time_ns() % (1 << 31)))
DEV = "cuda"

# |got - want| <= atol + rtol |want| (tests/check.h's default_tolerance).
TOL = {torch.float32: (1e-6, 1e-5), torch.float16: (1e-5, 2e-3), torch.bfloat16: (1e-4, 1.6e-2)}
FLOATS = [torch.float32, torch.float16, torch.bfloat16]


# The statuses with which a version refuses arguments it does not take (skipped, not failed).
UNSUPPORTED = (gpuops._lib.UNSUPPORTED, gpuops._lib.STATUS["GPUOPS_ERR_MISALIGNED"])


def attempt(fn):
    """fn(), or None where the version refuses (unsupported or misaligned)."""
    try:
        return fn()
    except gpuops.GpuopsError as e:
        if e.status in UNSUPPORTED:
            return None
        raise


def generator(*salt):
    """A CUDA generator seeded from the run's seed and the test's own salt."""
    h = SEED
    for s in salt:
        for ch in str(s):
            h = (h * 1000003 + ord(ch)) % (1 << 61)
    return torch.Generator(device=DEV).manual_seed(h)


def uniform(shape, dtype, lo, hi, gen):
    """Uniform values in [lo, hi) rounded to dtype (never zeros: the tests poison nothing, the
    outputs are new tensors that the op must write)."""
    return (torch.rand(shape, device=DEV, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def assert_close(got, want, atol, rtol, scale=None, what=""):
    """Elementwise |got - want| <= atol * scale + rtol * |want| + the subnormal spacing of got's type
    (scale: a tensor that scales the absolute tolerance, e.g. |dy|), NaN only where want is NaN;
    reports the first element off and the relative norm error."""
    g, w = got.double(), want.double()
    assert g.shape == w.shape, f"{what}: shape {tuple(g.shape)} against {tuple(w.shape)}"
    a = atol * (scale.double().abs() if scale is not None else 1.0)
    if got.dtype.is_floating_point:  # the output type's subnormal spacing: no result can be nearer
        fi = torch.finfo(got.dtype)
        a = a + fi.smallest_normal * fi.eps
    nan_ok = torch.isnan(g) == torch.isnan(w)
    fin = ~torch.isnan(w)
    err = (g - w).abs()
    bad = ~nan_ok | (fin & ~(err <= a + rtol * w.abs()) & ~(g == w))
    if bad.any():
        i = int(torch.nonzero(bad.flatten())[0])
        rel = float(torch.linalg.vector_norm((g - w)[fin]) / max(float(torch.linalg.vector_norm(w[fin])), 1e-300))
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.numel()} elements off (seed {SEED}); first at flat "
                             f"index {i}: got {g.flatten()[i].item()!r}, want {w.flatten()[i].item()!r}; "
                             f"relative norm error {rel:.3g}")
