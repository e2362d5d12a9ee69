"""Thread control for timing-sensitive or small-tensor work.

On shared two-core machines, torch's intra-op thread pool makes small operations slower, and timings are
only meaningful single-threaded (DESIGN.md, Benchmarks).
"""

from __future__ import annotations


class limit_threads:
    """Context manager: torch (and BLAS, through threadpoolctl) on ``n`` threads, restored afterwards.

    On entry torch's intra-op thread count is set to ``n`` and, when ``threadpoolctl`` is installed (it ships
    with scikit-learn), the BLAS/OpenMP pools are limited to ``n`` as well; on exit the previous torch
    thread count and pool limits are restored. Exceptions raised in the block propagate.

    Parameters
    ----------
    n : int, default 1
        Number of threads inside the block.
    """

    def __init__(self, n: int = 1) -> None:
        self.n = n

    def __enter__(self):
        import torch

        self._prev = torch.get_num_threads()
        torch.set_num_threads(self.n)
        try:
            from threadpoolctl import threadpool_limits

            self._limits = threadpool_limits(self.n)
        except ImportError:  # pragma: no cover - threadpoolctl ships with scikit-learn
            self._limits = None
        return self

    def __exit__(self, *exc):
        import torch

        torch.set_num_threads(self._prev)
        if self._limits is not None:
            self._limits.restore_original_limits()
        return False


def single_thread() -> limit_threads:
    """Return a context manager that runs its block on one thread: ``with single_thread(): ...``.

    Returns
    -------
    limit_threads
        ``limit_threads(1)``.
    """
    return limit_threads(1)
