import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (ROOT.parent / "shared" / "data").resolve()

# Real data: the data root given by `make test`, else ../shared/data when it exists.
if not os.environ.get("ICML24_DATA") and SHARED_DATA.is_dir():
    os.environ["ICML24_DATA"] = str(SHARED_DATA)
# Processed caches go to a folder of this test session, never to the user's cache or the data root.
os.environ["ICML24_CACHE"] = tempfile.mkdtemp(prefix="icml24-test-cache-")
os.environ.setdefault("MPLBACKEND", "Agg")

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Small tensors and shared two-core machines: torch's thread pool costs more than it gives (up to 20x slower
# under load), so the suite runs single-threaded.
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture
def data_root() -> Path:
    """The real data root of this machine (tests that need a data set skip when it lacks it)."""
    return Path(os.environ.get("ICML24_DATA", "")).expanduser()
