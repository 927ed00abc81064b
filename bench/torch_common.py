# SPDX-License-Identifier: MIT
"""bench/torch_common.py - what the bench/torch_<family>.py scripts share: their command line, the
check for PyTorch with CUDA, timing like bench/harness.h does (CUDA events, warm-up, median of 25,
L2 flushed before each run), the copy ceiling measured again on the same device, and the CSV files
(theirs written, gpuops' read). Imports without PyTorch, so that --help works anywhere.
"""
import argparse
import csv
import os
import sys

try:
    import torch
except ImportError:  # start() says so, after the command line is parsed
    torch = None

REPS = 25


def start(doc):
    """Parses --csv OUT and --gpuops IN (bench/run.sh passes both; --help prints `doc`), stops where
    PyTorch with CUDA is missing, and returns (args, device name, L2 flush buffer)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True, help="where to write PyTorch's timings (CSV)")
    ap.add_argument("--gpuops", default=None, help="gpuops' CSV from the same run, to compare with")
    args = ap.parse_args()
    if torch is None or not torch.cuda.is_available():
        sys.exit("PyTorch with CUDA not found")
    flush = torch.zeros(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4 + (1 << 22), device="cuda")
    return args, torch.cuda.get_device_name(), flush


def median_ms(fn, flush):
    """Median milliseconds of fn() over REPS runs after 3 untimed ones, `flush` read before each run
    (outside its events) to evict what the previous run left in L2 and leave clean lines there, as
    bench/harness.h does (a flush by writing would leave dirty lines for the timed run to write back)."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(REPS):
        flush.sum()
        t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0.record()
        fn()
        t1.record()
        torch.cuda.synchronize()
        times.append(t0.elapsed_time(t1))
    times.sort()
    return times[REPS // 2]


def copy_ceiling(dev, flush):
    """GB/s of tensor.copy_ of 1 GiB (read + write bytes), printed with PyTorch's version."""
    src = torch.empty(1 << 28, device="cuda")
    dst = torch.empty_like(src)
    copy = 2 * src.numel() * 4 / (median_ms(lambda: dst.copy_(src), flush) * 1e6)
    del src, dst
    print(f"PyTorch {torch.__version__} on {dev}; copy ceiling (tensor.copy_, 1 GiB) {copy:.0f} GB/s")
    return copy


def rate(ms, nbytes, copy):
    """The cells time_us, gb_per_s, x_copy, copy_gb_per_s of a run of `ms` that moves `nbytes`."""
    gbps = nbytes / (ms * 1e6)
    return [f"{ms * 1e3:.3f}", f"{gbps:.1f}", f"{gbps / copy:.4f}", f"{copy:.1f}"]


RATE_HEAD = ["time_us", "gb_per_s", "x_copy", "copy_gb_per_s"]


def write_csv(path, head, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(head)
        w.writerows(rows)
    print(f"wrote {path}")


def gpuops_rows(path):
    """gpuops' CSV as a list of dicts, or None where no file was given or it does not exist."""
    if not path or not os.path.exists(path):
        return None
    with open(path) as fh:
        return list(csv.DictReader(fh))
