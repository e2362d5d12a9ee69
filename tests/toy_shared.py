"""A test-local method whose claims share experiments, lack prerequisites, wait for a signal or measure infinity.

TOY_SHARED_COUNTER names a file to which the shared experiment appends one line per run (across processes, so
that Ray workers are counted too).
"""

import os
import sys

from icml24.claims import Claim, Experiment, Method
from icml24.errors import DataUnavailable

SLUG = "toy_shared"


def _pair(scale, seed):
    with open(os.environ["TOY_SHARED_COUNTER"], "a") as f:
        f.write(f"{seed}\n")
    return {"ours": 1.0 + seed, "theirs": 0.5, "gap": 0.5 + seed}


def _no_data(scale, seed):
    raise DataUnavailable("toy data is not in the data root", "run 'icml24 data fetch toy'")


def _infinite(scale, seed):
    return {"ours": float("inf"), "theirs": 1.0, "undefined": float("nan"), "low": float("-inf")}


def _waits(scale, seed):
    print("waiting", file=sys.stderr, flush=True)
    sys.stdin.read()  # until the test signals this process
    return {"ours": 1.0, "theirs": 0.0}


PAIR = Experiment(f"{SLUG}/pair", _pair)
NEVER = Experiment(f"{SLUG}/never", _pair, needs=("never:the toy's private data set is not public",))
PAPER_GPU = Experiment(f"{SLUG}/paper-gpu", _pair, paper_needs=("never:a toy GPU",))

beats = lambda m: m["ours"] > m["theirs"]  # noqa: E731

METHOD = Method(
    slug=SLUG,
    title="A toy method with shared experiments",
    arxiv=None,
    code=None,
    claims=(
        Claim(f"{SLUG}/beats", "ours exceeds theirs.", PAIR, beats, "ours", "theirs"),
        Claim(f"{SLUG}/gap", "the gap is positive.", PAIR, lambda m: m["gap"] > 0, "gap", "theirs"),
        Claim(f"{SLUG}/needs-data", "ours exceeds theirs.", _no_data, beats, "ours", "theirs"),
        Claim(f"{SLUG}/never", "ours exceeds theirs.", NEVER, beats, "ours", "theirs"),
        Claim(f"{SLUG}/paper-gpu", "ours exceeds theirs.", PAPER_GPU, beats, "ours", "theirs"),
        Claim(f"{SLUG}/infinite", "ours exceeds theirs.", _infinite, beats, "ours", "theirs"),
        Claim(f"{SLUG}/waits", "ours exceeds theirs.", _waits, beats, "ours", "theirs"),
    ),
)

if __name__ == "__main__":  # run the CLI with this method registered: python toy_shared.py verify ...
    from icml24 import registry
    from icml24.cli import main

    registry.register(METHOD)
    sys.exit(main(sys.argv[1:]))
