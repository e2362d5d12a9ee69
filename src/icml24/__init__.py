"""icml24: nineteen ICML 2024 systems, implemented for real, each with executable checks of its claims.

Method packages are imported lazily: ``import icml24.<slug>`` (see ``icml24 list`` for the slugs).
"""

__version__ = "0.1.0"

from .claims import Claim, Method, Scale  # noqa: E402
from .errors import ClaimError, DataError, DataUnavailable, ICML24Error, InputError, RunDirError  # noqa: E402

__all__ = [
    "__version__",
    "Claim",
    "Method",
    "Scale",
    "ICML24Error",
    "InputError",
    "DataUnavailable",
    "DataError",
    "RunDirError",
    "ClaimError",
]
