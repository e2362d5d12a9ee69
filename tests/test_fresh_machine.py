"""A newcomer's machine: no data root, no network. ``icml24 verify --scale smoke`` exits 0 with no ERROR; what
needs a missing data set is 'not run' and names it, and nothing is fetched.

Six packages are left out to keep the suite inside its budget: their smoke experiments train in synthetic worlds
or on the model a registry package ships and read nothing from the data root (kisa's tabletop, c3po's assistant,
deep_align's zoo, crebm's retro world, dera, brain), and they add the most time; the same run over all nineteen
methods is in the note of the commit that added this test. ``test_left_out_packages_read_no_data`` checks that
those six never reach a loader of the data root in a claim.
"""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

from icml24 import registry
from icml24.claims import Experiment

SRC = Path(__file__).resolve().parents[1] / "src" / "icml24"
LEFT_OUT = ("kisa", "c3po", "deep_align", "crebm", "dera", "brain")
# What reads the data root: the root itself, the file check, and the loaders of the real data sets.
ROOT_READERS = {
    "data_root",
    "require_files",
    "fashion_mnist",
    "fashion_mnist_inverted",
    "fashion_border",
    "planetoid",
    "tiny_shakespeare",
    "austen",
    "mutag",
    "ICML24_DATA",
}

# Readers that run only at paper scale or in a verb, never in a smoke or quick claim.
PAPER_ONLY = {
    ("crebm", "experiments.py"): {"ICML24_DATA"},  # names where paper scale's route benchmark would lie
    ("deep_align", "experiments.py"): {"fashion_mnist"},  # the paper-scale zoo (paper_needs data:fashion-mnist)
    ("deep_align", "cnn.py"): {"fashion_mnist"},  # the `deep-align cnn` verb's CNN zoo, not a claim
}


def _names(path: Path) -> set[str]:
    """Every identifier, attribute and string constant the module's code uses outside docstrings."""
    tree = ast.parse(path.read_text())
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.Attribute):
            out.add(node.attr)
        elif isinstance(node, ast.alias):
            out.add(node.name.rsplit(".", 1)[-1])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 40:
            out.add(node.value)
    return out


def test_left_out_packages_read_no_data():
    for slug in LEFT_OUT:
        for path in sorted((SRC / slug).glob("*.py")):
            used = _names(path) & ROOT_READERS
            used -= PAPER_ONLY.get((slug, path.name), set())
            assert not used, f"{slug}/{path.name} reads the data root ({sorted(used)}): add it to the fresh run"
        for claim in registry.get(slug).claims:
            assert not isinstance(claim.run, Experiment) or not claim.run.needs, claim.key


def test_verify_smoke_without_data_or_network(tmp_path):
    empty = tmp_path / "empty-data-root"
    empty.mkdir()
    env = {
        **os.environ,
        "ICML24_DATA": str(empty),
        "ICML24_MIRROR": "http://127.0.0.1:1",  # a closed port: any fetch would fail at once
        "ICML24_CACHE": str(tmp_path / "cache"),
    }
    slugs = [s for s in registry.SLUGS if s not in LEFT_OUT]
    cmd = [sys.executable, "-m", "icml24", "verify", *slugs, "--scale", "smoke", "--out", str(tmp_path), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ERROR" not in r.stdout + r.stderr
    rows = json.loads(r.stdout)["claims"]
    statuses = {row["key"]: row["status"] for row in rows}
    assert set(statuses.values()) <= {"holds", "fails", "not_run"}, statuses
    assert all(row["matches"] for row in rows), [row["key"] for row in rows if not row["matches"]]
    assert {k.split("/")[0] for k in statuses} == set(slugs)
    # what needs a data set is not run, and says which one
    for slug in ("tiny_lm", "gnn_certify", "seed_gnn"):
        assert all(v == "not_run" for k, v in statuses.items() if k.startswith(slug + "/")), slug
    for key in ("jetfire/quantization-error", "jetfire/parity", "group_dro/minority-group"):
        assert statuses[key] == "not_run", key
    assert "icml24 data fetch mutag" in r.stdout + r.stderr
    assert not any(empty.iterdir()), "nothing is written into the data root"
