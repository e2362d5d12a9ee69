import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from icml24 import registry
from icml24.cli import main

TESTS = Path(__file__).resolve().parent
TOY = TESTS / "toy_method.py"


def run_cli(*args, env_extra=None, module=False):
    env = {**os.environ, **(env_extra or {})}
    cmd = [sys.executable, "-m", "icml24", *args] if module else [sys.executable, str(TOY), *args]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    import toy_method

    env = {"TOY_COUNTER": str(tmp_path / "counter"), "TOY_KILL": str(tmp_path / "kill-marker")}
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    registry.register(toy_method.METHOD)
    yield env
    registry.unregister("toy_method")


def test_list_prints_nineteen_rows(capsys):
    assert main(["list", "--runs", "/nonexistent"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].split()[:5] == ["slug", "claims", "findings", "last", "run"]
    assert len(lines) == 1 + 19
    assert {line.split()[0] for line in lines[1:]} == set(registry.SLUGS)


def test_list_json(capsys):
    assert main(["list", "--json", "--runs", "/nonexistent"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 19 and all(r["status"] in ("planned", "implemented") for r in rows)


@pytest.mark.parametrize(
    "args, text",
    [
        (["verify", "no_such_method"], "unknown method 'no_such_method'"),
        (["verify", "--scale", "huge"], "unknown scale 'huge'"),
        (["verify", "--seed", "minus"], "--seed"),
        (["verify", "--bogus"], "unrecognized arguments"),
        (["report", "/no/such/run"], "does not exist"),
        (["bench", "nope"], "unknown method"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(args, text):
    proc = run_cli(*args, module=True)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and text in err[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_debug_shows_the_traceback():
    proc = run_cli("verify", "no_such_method", "--debug", module=True)
    assert proc.returncode != 0 and "Traceback" in proc.stderr


def test_verify_without_claims_says_so(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(registry, "all_slugs", lambda: [])
    assert main(["verify", "--out", str(tmp_path)]) == 0
    assert "no method has claims" in capsys.readouterr().out


def test_verify_table_json_and_report(tmp_path, toy, capsys):
    Path(toy["TOY_KILL"]).write_text("no kill")
    tmp_path = tmp_path / "runs"
    assert main(["verify", "toy_method", "--scale", "smoke", "--seed", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "toy_method  first" in out and "ours=3" in out and "theirs=0.5" in out and "3/3 claims hold" in out
    (run_dir,) = tmp_path.iterdir()
    assert {"config.json", "env.json", "results.jsonl", "report.md"} <= {p.name for p in run_dir.iterdir()}
    cfg = json.loads((run_dir / "config.json").read_text())
    assert cfg["scale"] == "smoke" and cfg["seed"] == 2 and len(cfg["claims"]) == 3

    assert main(["verify", "toy_method/third", "--json", "--out", str(tmp_path)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["key"] for r in doc["results"]] == ["toy_method/third"] and doc["all_hold"] is True

    (run_dir / "plots").mkdir()
    (run_dir / "plots" / "curve.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    assert main(["report", str(run_dir)]) == 0
    report = (run_dir / "report.md").read_text()
    assert "| toy_method | first |" in report and "![curve](plots/curve.png)" in report

    assert main(["list", "--runs", str(tmp_path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("toy_method"))
    assert row.split()[1:5] == ["3", "0", "3/3", "as"] and "(3 hold, 0 findings)" in row


def test_failing_and_raising_claims_exit_1(tmp_path, capsys):
    from icml24.claims import Claim, Method

    def boom(scale, seed):
        raise RuntimeError("kaput")

    m = Method(
        "toy_fail",
        "T",
        None,
        None,
        (
            Claim(
                "toy_fail/fails", "a > b.", lambda s, seed: {"a": 0.0, "b": 1.0}, lambda m: m["a"] > m["b"], "a", "b"
            ),
            Claim("toy_fail/raises", "a > b.", boom, lambda m: True, "a", "b"),
            Claim("toy_fail/missing", "a > b.", lambda s, seed: {"a": 1.0}, lambda m: True, "a", "b"),
        ),
    )
    registry.register(m)
    try:
        assert main(["verify", "toy_fail", "--out", str(tmp_path)]) == 1
    finally:
        registry.unregister("toy_fail")
    out = capsys.readouterr()
    assert "NO" in out.out and out.out.count("ERROR") == 2 and "kaput" in out.err
    recs = [json.loads(x) for x in next(tmp_path.iterdir()).joinpath("results.jsonl").read_text().splitlines()]
    assert [r["status"] for r in recs] == ["fails", "error", "error"]
    assert "baseline metric 'b' missing" in recs[2]["error"]


def test_kill_after_first_claim_then_resume(tmp_path):
    env = {"TOY_COUNTER": str(tmp_path / "counter"), "TOY_KILL": str(tmp_path / "kill-marker")}
    out = tmp_path / "runs"
    first = run_cli("verify", "toy_method", "--scale", "smoke", "--out", str(out), env_extra=env)
    assert first.returncode == -signal.SIGKILL, first.stderr  # killed inside the second claim
    (run_dir,) = list(out.iterdir())
    lines = (run_dir / "results.jsonl").read_text().splitlines()
    assert [json.loads(x)["key"] for x in lines] == ["toy_method/first"]

    conflict = run_cli("verify", "--resume", str(run_dir), "--seed", "3", env_extra=env)
    assert conflict.returncode == 2 and conflict.stderr.startswith("error: --resume")

    second = run_cli("verify", "--resume", str(run_dir), env_extra=env)
    assert second.returncode == 0, second.stderr
    keys = [json.loads(x)["key"] for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(keys) == ["toy_method/first", "toy_method/second", "toy_method/third"]
    assert len(keys) == len(set(keys))
    assert Path(env["TOY_COUNTER"]).read_text().count("ran") == 1  # the first claim did not run again
    assert "3/3 claims hold" in second.stdout and "toy_method  first" in second.stdout


def test_resume_refuses_unreadable_results(tmp_path, toy):
    Path(toy["TOY_KILL"]).write_text("no kill")
    tmp_path = tmp_path / "runs"
    assert main(["verify", "toy_method", "--out", str(tmp_path)]) == 0
    (run_dir,) = tmp_path.iterdir()
    results = run_dir / "results.jsonl"
    results.write_text("garbage\n" + results.read_text())
    before = results.read_text()
    assert main(["verify", "--resume", str(run_dir)]) == 2
    assert results.read_text() == before


def test_gnn_certify_verb_is_wired(tmp_path):
    proc = run_cli(
        "gnn-certify", "--model", str(tmp_path / "missing.json"), "--graph", str(tmp_path / "g.gcinfo"), module=True
    )
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "missing.json" in proc.stderr
    helped = run_cli("gnn-certify", "--help", module=True)
    assert helped.returncode == 0 and "--bounds" in helped.stdout
