# SPDX-License-Identifier: MIT
"""The binding's contract: clear errors carrying gpuops_status_string, the current CUDA stream
(checked by capturing ops in a CUDA graph, which fails on any other stream), workspace from
PyTorch's caching allocator, and every C function of the header present in the library."""
import pytest

from _common import DEV, assert_close, generator, gpuops, torch, uniform


def test_library_exports_the_header():
    lib = gpuops.load()
    missing = [f for f in gpuops._capi.FUNCTIONS if not hasattr(lib, f)]
    assert not missing, f"in gpuops.h but not in {gpuops.library_path()}: {missing}"


def test_errors_carry_the_status_string():
    x = torch.randn(100, device=DEV)
    cases = [
        (lambda: gpuops.silu(x.cpu()), "invalid argument", "CUDA tensors"),
        (lambda: gpuops.silu(x.double()), "unsupported", "dtype"),
        (lambda: gpuops.silu(x.view(10, 10).t()), "invalid argument", "contiguous"),
        (lambda: gpuops.add(x, x[:50]), "invalid argument", "shape"),
        (lambda: gpuops.softmax(x, algo="naive"), "unsupported", ""),  # refused by the library itself
        (lambda: gpuops.quantize(x, float("nan"), 0), "invalid argument", ""),
        (lambda: gpuops.histogram(x.int(), 0), "invalid argument", "bins"),
        (lambda: gpuops.transpose(x.view(10, 10)[:, ::2]), "invalid argument", "unit stride"),
        (lambda: gpuops.add(x[1:], x[:99], algo="vectorized"), "misaligned", ""),  # 16-byte offsets differ
        (lambda: gpuops.cumsum(x.view(10, 10), algo="blelloch"), "unsupported", ""),
        (lambda: gpuops.matmul(x.view(10, 10), x.view(5, 20)), "invalid argument", "[m, k]"),
        (lambda: gpuops.silu(x, algo="fastest"), "invalid argument", "unknown version"),
    ]
    strings = {gpuops._lib.status_string(v) for v in gpuops._lib.STATUS.values()}
    for fn, status, detail in cases:
        with pytest.raises(gpuops.GpuopsError) as e:
            fn()
        assert status in str(e.value) and detail in str(e.value), str(e.value)
        assert e.value.status_string in strings and e.value.status_string in str(e.value)


def test_side_stream_and_graph_capture():
    gen = generator("graph")
    x = uniform((3, 4097), torch.float32, -3, 3, gen)
    ints = torch.randint(-50, 50, (1 << 20,), device=DEV, dtype=torch.int32, generator=gen)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up on the side stream, as graph capture wants
        gpuops.softmax(x), gpuops.cumsum(ints), gpuops.sum(x), gpuops.histogram(ints, 64)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):  # every launch and workspace must be on the capturing stream
        y = gpuops.softmax(x)
        c = gpuops.cumsum(ints)  # workspace + a memset of the tile states
        t = gpuops.sum(x)  # workspace for the partials
        h = gpuops.histogram(ints, 64)  # a memset of the counts
    x.copy_(uniform((3, 4097), torch.float32, -3, 3, gen))
    g.replay()
    torch.cuda.synchronize()
    assert_close(y, torch.softmax(x.double(), -1), 1e-12, 3e-5)
    assert torch.equal(c, torch.cumsum(ints, 0, dtype=torch.int32))
    assert_close(t, x.double().sum(), 1e-5 * float(x.abs().sum()), 0.0)
    assert torch.equal(h, torch.bincount(ints[(ints >= 0) & (ints < 64)].long(), minlength=64))


def test_workspace_comes_from_the_caching_allocator():
    x = torch.randn(1 << 22, device=DEV)
    torch.cuda.synchronize()
    before = torch.cuda.memory_stats()["allocation.all.allocated"]
    gpuops.cumsum(x)  # output + workspace
    after = torch.cuda.memory_stats()["allocation.all.allocated"]
    assert after - before >= 2


def test_readme_example_runs():
    import os
    import re

    from _common import ROOT

    text = open(os.path.join(ROOT, "README.md")).read()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README.md", "exec"), {})
    torch.cuda.synchronize()
