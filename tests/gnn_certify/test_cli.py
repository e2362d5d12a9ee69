"""The ``icml24 gnn-certify`` verb, through the core command line and from an argparse Namespace."""

import argparse
import json

import pytest

from icml24.cli import main
from icml24.errors import InputError
from icml24.gnn_certify.cli import EXIT_NOT_ROBUST, EXIT_ROBUST, EXIT_UNKNOWN, add_arguments, certify_command
from icml24.gnn_certify.io import mutag_dir
from tests.conftest import needs_mutag

pytestmark = needs_mutag

FILES = {"config.json", "env.json", "results.json", "report.md"}


def _argv(*argv, graph=16):
    return [
        "--model",
        str(mutag_dir() / "model_MUTAG.json"),
        "--graph",
        str(mutag_dir() / "instances" / f"graph_MUTAG_{graph}.gcinfo"),
        *argv,
    ]


def _args(*argv):
    return add_arguments(argparse.ArgumentParser(prog="icml24 gnn-certify")).parse_args(_argv(*argv))


def _runs(out):
    return sorted(p for p in out.iterdir() if p.is_dir())


def test_not_robust_prints_checked_flips_and_writes_a_run_directory(tmp_path, capsys):
    argv = ["gnn-certify", *_argv("--budget", "0.02", "--time-limit", "60", "--out", str(tmp_path))]
    assert main(argv) == EXIT_NOT_ROBUST
    out = capsys.readouterr().out
    assert out.startswith("gnn-certify: graph_MUTAG_16.gcinfo (11 nodes), budget 0.02, strength 2, bounds sbt; ")
    assert "graph_MUTAG_16.gcinfo: 11 nodes" in out and "not_robust" in out and "checked by the model" in out
    assert "verdict: not_robust\nwritten: " in out
    (run,) = _runs(tmp_path)
    assert f"run directory: {run}" in out and FILES <= {p.name for p in run.iterdir()}
    res = json.loads((run / "results.json").read_text())
    assert res["verdict"] == "not_robust" and res["certificates"][0]["checked_margin"] < 0
    assert (run / "report.md").read_text().strip().endswith("verdict: not_robust")
    # a second run: a second directory, the first unchanged
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    assert main(argv) == EXIT_NOT_ROBUST
    assert len(_runs(tmp_path)) == 2 and {p.name: p.read_bytes() for p in run.iterdir()} == before


def test_robust_and_json(tmp_path, capsys):
    argv = _argv("--strength", "0", "--label-shift", "1", "--bounds", "abt", "--json", "--out", str(tmp_path))
    assert main(["gnn-certify", *argv]) == EXIT_ROBUST  # strength 0: no node may lose or gain an edge
    cap = capsys.readouterr()
    printed = json.loads(cap.out)  # stdout holds the JSON alone; the run-directory lines go to stderr
    (run,) = _runs(tmp_path)
    assert f"run directory: {run}" in cap.err and "written: " in cap.err
    assert printed["verdict"] == "robust" and printed == json.loads((run / "results.json").read_text())
    assert printed["certificates"][0]["target"] == (printed["instance_label"] + 1) % 2
    assert (run / "report.md").read_text().strip().endswith("verdict: robust")


def test_unknown_prints_minus_inf_not_scip_infinity(tmp_path, capsys):
    argv = _argv("--budget", "0.3", "--time-limit", "0.001", "--no-greedy-start", "--out", str(tmp_path), graph=0)
    assert main(["gnn-certify", *argv]) == EXIT_UNKNOWN
    out = capsys.readouterr().out
    assert "target 0: unknown    margin in [-inf, " in out and "1e+20" not in out
    (run,) = _runs(tmp_path)
    assert json.loads((run / "results.json").read_text())["certificates"][0]["margin_lower"] == "-Infinity"


@pytest.mark.parametrize(
    "argv, what",
    [
        (("--budget", "-1"), "--budget"),
        (("--time-limit", "0"), "--time-limit"),
        (("--target", "1", "--label-shift", "1"), "not both"),
        (("--global-budget", "-2"), "--global-budget"),
    ],
)
def test_bad_arguments(argv, what, tmp_path):
    with pytest.raises(InputError, match=what):
        certify_command(_args(*argv, "--out", str(tmp_path)))
    assert not any(tmp_path.iterdir())  # refused before a run directory is made


def test_wrong_model_file(tmp_path):
    bad = tmp_path / "m.json"
    bad.write_text("[]")
    args = _args("--out", str(tmp_path / "runs"))
    args.model = str(bad)
    with pytest.raises(InputError, match="m.json"):
        certify_command(args)


def test_out_must_be_a_folder(tmp_path, capsys):
    (tmp_path / "report.json").write_text("{}")
    assert main(["gnn-certify", *_argv("--out", str(tmp_path / "report.json"))]) == 2
    assert "is a file" in capsys.readouterr().err


def test_attack_first_decides_at_a_ten_percent_budget_without_scip(tmp_path, capsys):
    # graph 16 at 10 %: the greedy attack finds a flip set; it is re-checked on the PyG model, SCIP never runs
    argv = _argv("--budget", "0.1", "--attack-first", "--json", "--out", str(tmp_path))
    assert main(["gnn-certify", *argv]) == EXIT_NOT_ROBUST
    cert = json.loads(capsys.readouterr().out)["certificates"][0]
    assert cert["status"] == "greedy attack" and cert["nodes"] == 0 and cert["checked_margin"] < 0
