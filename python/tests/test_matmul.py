# SPDX-License-Identifier: MIT
"""Matrix multiply against float64: odd shapes, matrix-vector products, every operand layout
(row-major and transposed views, pitched slices), every version."""
import pytest

from _common import DEV, assert_close, generator, gpuops, torch, uniform

VERSIONS = ["auto", "naive", "coalesced", "shared-tiled", "register-1d", "register-2d", "vectorized", "warp-tiled"]


def _check(c, a, b, alpha=1.0, what=""):
    ad, bd = a.double(), b.double()
    want = alpha * (ad @ bd)
    # tests/test_matmul.cu's bound, rigorous for any order of f32 summation
    rel = max(1e-5, (a.shape[1] + 2) * 2.0**-23)
    bound = abs(alpha) * (ad.abs() @ bd.abs()) * rel + 1e-30
    assert_close(c, want, 1.0, 0.0, scale=bound, what=what)


def _operands(m, n, k, layout, gen):
    a = uniform((m, k), torch.float32, -1, 1, gen)
    b = uniform((k, n), torch.float32, -1, 1, gen)
    if layout[0] == "T":
        a = a.t().contiguous().t()
    if layout[1] == "T":
        b = b.t().contiguous().t()
    return a, b


@pytest.mark.parametrize("layout", ["NN", "NT", "TN", "TT"])
@pytest.mark.parametrize("mnk", [(1, 1, 1), (1, 4096, 4096), (4096, 1, 4096), (129, 67, 33), (257, 255, 1023),
                                 (8, 4096, 4096), (33, 0, 5), (17, 9, 0)], ids=str)
def test_shapes_and_layouts(mnk, layout):
    m, n, k = mnk
    a, b = _operands(m, n, k, layout, generator("matmul", mnk, layout))
    c = gpuops.matmul(a, b)
    assert c.shape == (m, n) and c.is_contiguous()
    _check(c, a, b, what=f"matmul {mnk} {layout}")


@pytest.mark.parametrize("algo", VERSIONS)
def test_versions(algo):
    gen = generator("matmul versions", algo)
    for layout in ("NN", "TT"):
        a, b = _operands(200, 136, 72, layout, gen)
        _check(gpuops.matmul(a, b, alpha=0.5, algo=algo), a, b, 0.5, what=f"matmul {algo} {layout}")


def test_pitched_views():
    gen = generator("matmul views")
    big = uniform((300, 400), torch.float32, -1, 1, gen)
    a, b = big[:100, 3:70], big[100:167, 10:131]  # leading dimension 400, odd offsets
    _check(gpuops.matmul(a, b), a, b, what="pitched")
    _check(gpuops.matmul(b.t(), a.t()), b.t(), a.t(), what="pitched, transposed")
