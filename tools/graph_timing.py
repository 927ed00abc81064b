# SPDX-License-Identifier: MIT
"""tools/graph_timing.py - the CUDA-graph timer the tools' PyTorch scripts share.

graph_us(f, sets, calls, reps): f(*sets[j % len(sets)]) for j < calls captured into one CUDA graph
(after two warm-up calls on a side stream and one untimed replay), replayed reps times with CUDA
events around each replay; the median replay divided by calls, in microseconds."""
import statistics

import torch


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
