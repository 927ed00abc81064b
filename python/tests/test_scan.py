# SPDX-License-Identifier: MIT
"""Prefix sums against torch.cumsum: float32 against float64 (bounded by the running sum of |x|),
int32 and int64 exactly; vectors with every version, rows of odd lengths; inclusive and exclusive."""
import pytest

from _common import DEV, assert_close, generator, gpuops, torch, uniform

VERSIONS = ["auto", "hillis-steele", "blelloch", "reduce-then-scan", "decoupled-lookback"]
TYPES = [torch.float32, torch.int32, torch.int64]


def _data(shape, dtype, gen):
    if dtype.is_floating_point:
        return uniform(shape, dtype, -1, 1, gen)
    return torch.randint(-1000, 1001, shape, device=DEV, dtype=dtype, generator=gen)


def _check(got, x, exclusive, what):
    assert got.dtype == x.dtype and got.shape == x.shape, what
    if x.dtype.is_floating_point:
        want = torch.cumsum(x.double(), -1)
        bound = torch.cumsum(x.double().abs(), -1) * 1e-5 + 1e-6  # tests/test_scan.cu
        if exclusive:
            want = want - x.double()
        assert_close(got, want, 1.0, 0.0, scale=bound, what=what)
    else:
        want = torch.cumsum(x, -1, dtype=x.dtype)
        if exclusive:
            want = want - x
        assert torch.equal(got, want), what


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", TYPES, ids=str)
@pytest.mark.parametrize("n", [1, 5, 2047, 2049, 100_003, (1 << 22) + 3])
def test_vector(n, dtype, exclusive):
    x = _data((n,), dtype, generator("scan", n, dtype, exclusive))
    _check(gpuops.cumsum(x, exclusive=exclusive), x, exclusive, f"cumsum {n} {dtype} {exclusive}")


@pytest.mark.parametrize("algo", VERSIONS)
@pytest.mark.parametrize("dtype", TYPES, ids=str)
def test_versions(dtype, algo):
    for exclusive in (False, True):
        x = _data(((1 << 20) + 7,), dtype, generator("scan versions", dtype, algo, exclusive))
        _check(gpuops.cumsum(x, exclusive=exclusive, algo=algo), x, exclusive, f"cumsum {dtype} {algo}")


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("dtype", TYPES, ids=str)
@pytest.mark.parametrize("shape", [(2, 1), (3, 1000), (1000, 3), (7, 2049), (2, 3, 4099), (5, 65537), (1, 3, 77)])
def test_rows(shape, dtype, exclusive):
    x = _data(shape, dtype, generator("scan rows", shape, dtype, exclusive))
    _check(gpuops.cumsum(x, exclusive=exclusive), x, exclusive, f"cumsum rows {shape} {dtype} {exclusive}")
