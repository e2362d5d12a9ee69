"""A test-local method with three claims, used to exercise verify, resume and the claim protocol.

The claims read two files named by environment variables: TOY_COUNTER (claim "first" appends a line per
run) and TOY_KILL (claim "second" kills its own process the first time, to simulate a run killed after
its first claim).
"""

import os
import signal
from pathlib import Path

from icml24.claims import Claim, Method

SLUG = "toy_method"


def _first(scale, seed):
    with open(os.environ["TOY_COUNTER"], "a") as f:
        f.write("ran\n")
    return {"ours": 1.0 + seed, "theirs": 0.5}


def _second(scale, seed):
    marker = Path(os.environ["TOY_KILL"])
    if not marker.exists():
        marker.write_text("killed once")
        os.kill(os.getpid(), signal.SIGKILL)
    return {"ours": 0.9, "theirs": 0.1}


def _third(scale, seed):
    return {"ours": 2.0, "theirs": 3.0}


METHOD = Method(
    slug=SLUG,
    title="A toy method",
    arxiv=None,
    code=None,
    claims=(
        Claim(f"{SLUG}/first", "ours exceeds theirs.", _first, lambda m: m["ours"] > m["theirs"], "ours", "theirs"),
        Claim(f"{SLUG}/second", "ours exceeds theirs.", _second, lambda m: m["ours"] > m["theirs"], "ours", "theirs"),
        Claim(f"{SLUG}/third", "ours is below theirs.", _third, lambda m: m["ours"] < m["theirs"], "ours", "theirs"),
    ),
)

if __name__ == "__main__":  # run the CLI with this method registered: python toy_method.py verify ...
    import sys

    from icml24 import registry
    from icml24.cli import main

    registry.register(METHOD)
    sys.exit(main(sys.argv[1:]))
