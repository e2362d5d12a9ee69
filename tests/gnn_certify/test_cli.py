"""The ``icml24 gnn-certify`` verb, run from an argparse Namespace as the core command line does."""

import argparse
import json

import pytest

from icml24.errors import InputError
from icml24.gnn_certify.cli import EXIT_NOT_ROBUST, EXIT_ROBUST, add_arguments, certify_command
from icml24.gnn_certify.io import mutag_dir
from tests.conftest import needs_mutag

pytestmark = needs_mutag


def _args(*argv):
    p = add_arguments(argparse.ArgumentParser(prog="icml24 gnn-certify"))
    return p.parse_args(
        [
            "--model",
            str(mutag_dir() / "model_MUTAG.json"),
            "--graph",
            str(mutag_dir() / "instances" / "graph_MUTAG_16.gcinfo"),
            *argv,
        ]
    )


def test_not_robust_prints_checked_flips(capsys):
    assert certify_command(_args("--budget", "0.02", "--time-limit", "60")) == EXIT_NOT_ROBUST
    out = capsys.readouterr().out
    assert "graph_MUTAG_16.gcinfo: 11 nodes" in out and "not_robust" in out and "checked by the model" in out
    assert out.strip().endswith("verdict: not_robust")


def test_robust_and_json(tmp_path, capsys):
    out_file = tmp_path / "report.json"
    rc = certify_command(
        _args("--strength", "0", "--label-shift", "1", "--bounds", "abt", "--json", "--out", str(out_file))
    )
    assert rc == EXIT_ROBUST  # strength 0: no node may lose or gain an edge
    printed = json.loads(capsys.readouterr().out)
    assert printed["verdict"] == "robust" and printed == json.loads(out_file.read_text())
    assert printed["certificates"][0]["target"] == (printed["instance_label"] + 1) % 2


@pytest.mark.parametrize(
    "argv, what",
    [
        (("--budget", "-1"), "--budget"),
        (("--time-limit", "0"), "--time-limit"),
        (("--target", "1", "--label-shift", "1"), "not both"),
        (("--global-budget", "-2"), "--global-budget"),
    ],
)
def test_bad_arguments(argv, what):
    with pytest.raises(InputError, match=what):
        certify_command(_args(*argv))


def test_wrong_model_file(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text("[]")
    args = _args()
    args.model = str(bad)
    with pytest.raises(InputError, match="m.json"):
        certify_command(args)


def test_attack_first_decides_at_a_ten_percent_budget_without_scip(capsys):
    # graph 16 at 10 %: the greedy attack finds a flip set; it is re-checked on the PyG model, SCIP never runs
    assert certify_command(_args("--budget", "0.1", "--attack-first", "--json")) == EXIT_NOT_ROBUST
    cert = json.loads(capsys.readouterr().out)["certificates"][0]
    assert cert["status"] == "greedy attack" and cert["nodes"] == 0 and cert["checked_margin"] < 0
