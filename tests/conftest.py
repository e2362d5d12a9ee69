"""Shared fixtures and settings of the test suite: the data root, MUTAG availability, seeded generators, one
hypothesis profile, single-threaded torch."""

import os
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = (ROOT.parent / "shared" / "data").resolve()

# Real data: the data root given by `make test`, else ../shared/data when it exists.
if not os.environ.get("ICML24_DATA") and SHARED_DATA.is_dir():
    os.environ["ICML24_DATA"] = str(SHARED_DATA)
# Processed caches go to a folder of this test session, never to the user's cache or the data root.
os.environ["ICML24_CACHE"] = tempfile.mkdtemp(prefix="icml24-test-cache-")
os.environ.setdefault("MPLBACKEND", "Agg")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a mistaken hub name fails at once instead of hanging
os.environ.setdefault("RAY_AUTH_MODE", "disabled")

sys.path.insert(0, str(Path(__file__).resolve().parent))

# One hypothesis profile for the whole suite: reproducible examples, no per-example deadline on shared machines.
settings.register_profile(
    "icml24", deadline=None, derandomize=True, print_blob=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("icml24")

# Small tensors and shared two-core machines: torch's thread pool costs more than it gives (up to 20x slower
# under load), so the suite runs single-threaded.
import torch  # noqa: E402

torch.set_num_threads(1)

MUTAG_DIR = Path(os.environ.get("ICML24_DATA", "")).expanduser() / "scip_mpnn" / "MUTAG"
HAVE_MUTAG = (MUTAG_DIR / "model_MUTAG.json").is_file()
needs_mutag = pytest.mark.skipif(not HAVE_MUTAG, reason="the official MUTAG artefacts are not in the data root")
FASHION_DIR = Path(os.environ.get("ICML24_DATA", "")).expanduser() / "fashion-mnist" / "FashionMNIST" / "raw"
HAS_FASHION = (FASHION_DIR / "train-images-idx3-ubyte.gz").is_file()
needs_fashion = pytest.mark.skipif(not HAS_FASHION, reason="Fashion-MNIST is not in the data root")
TEXT_DIR = Path(os.environ.get("ICML24_DATA", "")).expanduser()
HAS_TEXT = (TEXT_DIR / "tinyshakespeare" / "input.txt").is_file() and (TEXT_DIR / "austen").is_dir()
needs_text = pytest.mark.skipif(not HAS_TEXT, reason="tiny Shakespeare and Austen's novels are not in the data root")


@pytest.fixture
def data_root() -> Path:
    """The real data root of this machine (tests that need a data set skip when it lacks it)."""
    return Path(os.environ.get("ICML24_DATA", "")).expanduser()


@pytest.fixture
def mutag_dir() -> Path:
    """The official SCIP-MPNN MUTAG artefacts; the test is skipped when the data root lacks them."""
    if not HAVE_MUTAG:
        pytest.skip("the official MUTAG artefacts are not in the data root")
    return MUTAG_DIR


@pytest.fixture
def rng() -> np.random.Generator:
    """A numpy generator seeded 0: every test that draws numbers gets the same ones on every run."""
    return np.random.default_rng(0)


@pytest.fixture
def generator() -> torch.Generator:
    """A torch generator seeded 0."""
    return torch.Generator().manual_seed(0)


# ------------------------------------------------------------------------------------------- test budget
# Each method's tests stay under BUDGET_S seconds (call + setup, one core), so that nineteen methods fit the
# suite's ten minutes. The summary prints each folder's time against it; over budget is a warning line here,
# never a timing assertion.
BUDGET_S = 40.0
_SPENT: dict[str, float] = {}


def pytest_runtest_logreport(report):
    parts = Path(report.fspath).parts if report.fspath else ()
    if "tests" in parts:
        rest = parts[parts.index("tests") + 1 :]
        folder = rest[0] if len(rest) > 1 else "platform"
        _SPENT[folder] = _SPENT.get(folder, 0.0) + float(getattr(report, "duration", 0.0))


def pytest_terminal_summary(terminalreporter):
    if not _SPENT or hasattr(terminalreporter.config, "workerinput"):
        return
    over = {k: v for k, v in _SPENT.items() if v > BUDGET_S}
    cells = ", ".join(f"{k} {v:.0f}s" for k, v in sorted(_SPENT.items(), key=lambda kv: -kv[1]))
    terminalreporter.write_line(f"test time per method (budget {BUDGET_S:.0f} s each): {cells}")
    for k, v in over.items():
        terminalreporter.write_line(f"WARNING: tests/{k} took {v:.0f} s, over its {BUDGET_S:.0f} s budget")
