# SPDX-License-Identifier: MIT
"""Prints the seed, the device and the library behind the run."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_report_header(config):
    try:
        import torch
    except ImportError:
        return "gpuops: PyTorch not installed, every test skips"
    if not torch.cuda.is_available():
        return f"gpuops: torch {torch.__version__} without a CUDA device, every test skips"
    import _common

    return (f"gpuops: seed {_common.SEED} (GPUOPS_SEED replays it), torch {torch.__version__}, "
            f"{torch.cuda.get_device_name()}, library {_common.gpuops.library_path()}")
