# SPDX-License-Identifier: MIT
"""tools/graph_timing.py - the timers the tools' PyTorch scripts share.

graph_us(f, sets, calls, reps): f(*sets[j % len(sets)]) for j < calls captured into one CUDA graph
(after two warm-up calls on a side stream and one untimed replay), replayed reps times with CUDA
events around each replay; the median replay divided by calls, in microseconds.
kernel_us(f, calls): the GPU activities of calls eager calls of f (after three warm-up calls),
recorded by torch.profiler through CUPTI: {kernel name: [duration in us, ...]}."""
import statistics

import torch
from torch.profiler import ProfilerActivity, profile


def kernel_us(f, calls):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            f()
        torch.cuda.synchronize()
    per = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            per.setdefault(e.name, []).append(getattr(e, "device_time", None) or e.cuda_time)
    return per


def graph_us(f, sets=((),), calls=64, reps=15):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        f(*sets[0]), f(*sets[0])
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for j in range(calls):
            f(*sets[j % len(sets)])
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts) * 1e3 / calls
