"""Thread control for timing-sensitive or small-tensor work.

On shared two-core machines, torch's intra-op thread pool makes small operations slower, and timings are
only meaningful single-threaded (DESIGN.md, Benchmarks).
"""

from __future__ import annotations

import torch


class limit_threads:
    """Context manager: torch (and BLAS, through threadpoolctl) on ``n`` threads, restored afterwards."""

    def __init__(self, n: int = 1) -> None:
        self.n = n

    def __enter__(self):
        self._prev = torch.get_num_threads()
        torch.set_num_threads(self.n)
        try:
            from threadpoolctl import threadpool_limits

            self._limits = threadpool_limits(self.n)
        except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
            self._limits = None
        return self

    def __exit__(self, *exc):
        torch.set_num_threads(self._prev)
        if self._limits is not None:
            self._limits.restore_original_limits()
        return False


def single_thread() -> limit_threads:
    """``with single_thread(): ...`` runs the block on one thread."""
    return limit_threads(1)
