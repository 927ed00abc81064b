# SPDX-License-Identifier: MIT
"""Transpose against x.t().contiguous(), bit for bit: every element width, odd shapes, row-sliced
views (the pitched form, any offset), every version."""
import pytest

from _common import DEV, generator, gpuops, torch

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int8, torch.int64, torch.float64, torch.bool, torch.int32]
SHAPES = [(1, 1), (1, 7), (7, 1), (33, 65), (64, 64), (1000, 3), (4095, 4097)]


def _data(shape, dtype, gen):
    bits = torch.randint(-(1 << 62), 1 << 62, shape, device=DEV, dtype=torch.int64, generator=gen)
    if dtype == torch.bool:
        return bits > 0
    width = torch.empty((), dtype=dtype).element_size()
    return bits.view(torch.uint8).view(*shape, 8)[..., :width].contiguous().view(dtype).view(shape)


def _bytes(t):
    """The elements' bytes in row-major order (a copy), to compare bit for bit."""
    return t.contiguous().flatten().view(torch.uint8)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_transpose(shape, dtype):
    x = _data(shape, dtype, generator("transpose", shape, dtype))
    y = gpuops.transpose(x)
    assert y.is_contiguous() and y.dtype == dtype
    assert y.shape == (shape[1], shape[0])
    assert torch.equal(_bytes(y), _bytes(x.t()))  # bits: NaN payloads too


@pytest.mark.parametrize("algo", ["auto", "naive", "shared-tiled", "shared-padded", "vectorized"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int8, torch.int64], ids=str)
def test_versions_and_views(dtype, algo):
    gen = generator("transpose views", dtype, algo)
    big = _data((300, 500), dtype, gen)
    # Every version runs at any pitch and offset (VECTORIZED realigns its 16-byte pieces).
    for x in (big, big[:, :256], big[:257, 64:320], big[3:, 5:], big[:, 7:8]):
        y = gpuops.transpose(x, algo=algo)
        assert torch.equal(_bytes(y), _bytes(x.t())), f"{tuple(x.shape)} {x.stride()}"
