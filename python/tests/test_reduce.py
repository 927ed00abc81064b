# SPDX-License-Identifier: MIT
"""Sums, maxima and minima (of all elements and of rows) against PyTorch in float64, every float
type, odd sizes, every version; the histogram against torch.bincount, every version."""
import pytest

from _common import DEV, FLOATS, assert_close, generator, gpuops, torch, uniform

VECTOR_VERSIONS = ["auto", "interleaved", "sequential", "first-add", "warp-shuffle", "warp-reduce"]
REDUCE = {"sum": (gpuops.sum, lambda x, d: x.sum(d) if d is not None else x.sum()),
          "amax": (gpuops.amax, lambda x, d: x.amax(d) if d is not None else x.amax()),
          "amin": (gpuops.amin, lambda x, d: x.amin(d) if d is not None else x.amin())}


def _check(name, got, x, dim):
    fn, ref = REDUCE[name]
    xd = x.double()
    want = ref(xd, dim)
    assert got.dtype == torch.float32 and got.shape == want.shape
    if name == "sum":  # f32 accumulation against double
        bound = ref(xd.abs(), dim) * 1e-5 + 1e-30  # tests/test_reduce.cu: 1e-5 sum |x|
        assert_close(got, want, 1.0, 0.0, scale=bound, what=f"sum {x.dtype} {tuple(x.shape)} dim={dim}")
    else:
        assert torch.equal(got.double(), want), f"{name} {x.dtype} {tuple(x.shape)}"


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("n", [1, 7, 1000, 4099, (1 << 20) + 5, 3 * (1 << 22) + 1])
@pytest.mark.parametrize("name", list(REDUCE))
def test_vector(name, n, dtype):
    x = uniform((n,), dtype, -1, 1, generator("vector", name, n, dtype))
    _check(name, REDUCE[name][0](x), x, None)


@pytest.mark.parametrize("algo", VECTOR_VERSIONS)
def test_vector_versions(algo):
    for name in REDUCE:
        x = uniform(((1 << 18) + 3,), torch.float32, -1, 1, generator("versions", name, algo))
        _check(name, REDUCE[name][0](x, algo=algo), x, None)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (3, 1000), (1000, 3), (7, 2049), (2, 3, 4097), (4, 65537)])
@pytest.mark.parametrize("name", list(REDUCE))
def test_rows(name, shape, dtype):
    x = uniform(shape, dtype, -1, 1, generator("rows", name, shape, dtype))
    _check(name, REDUCE[name][0](x, dim=-1), x, -1)
    _check(name, REDUCE[name][0](x, dim=-1, algo="warp-reduce"), x, -1)


def test_empty_and_nan():
    e = torch.empty(0, device=DEV)
    assert gpuops.sum(e).item() == 0.0 and gpuops.amax(e).item() == float("-inf") and gpuops.amin(e).item() == float("inf")
    x = torch.ones(1000, device=DEV)
    x[517] = float("nan")
    assert torch.isnan(gpuops.sum(x)) and torch.isnan(gpuops.amax(x)) and torch.isnan(gpuops.amin(x))


@pytest.mark.parametrize("algo", ["auto", "global-atomic", "shared-atomic", "run-aggregate"])
@pytest.mark.parametrize("bins", [1, 256, 12289, 100003])
def test_histogram(bins, algo):
    gen = generator("hist", bins, algo)
    n = 1_000_003
    x = torch.randint(-5, bins + 5, (n,), device=DEV, dtype=torch.int32, generator=gen)
    hot = torch.rand(n, device=DEV, generator=gen) < 0.9  # skewed: 90% one value
    x = torch.where(hot, torch.full_like(x, bins // 3), x)
    got = gpuops.histogram(x, bins, algo=algo)
    inside = x[(x >= 0) & (x < bins)].long()
    assert got.dtype == torch.int64 and torch.equal(got, torch.bincount(inside, minlength=bins))
