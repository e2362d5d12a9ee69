"""The claim protocol's experiments and verdicts: one run shared by several claims (locally, on resume and on
Ray), the not-run verdict, paper scale's preflight, strict JSON, signals, and report's refusal."""

import importlib.util
import json
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from toy_shared import METHOD, PAIR

from icml24 import registry
from icml24.claims import Claim, Experiment, Scale
from icml24.cli import main
from icml24.errors import InputError, RunDirError
from icml24.runs import RunDir
from icml24.verify import verify, write_report

TOY = str(Path(__file__).with_name("toy_shared.py"))


@pytest.fixture
def toy(tmp_path, monkeypatch):
    counter = tmp_path / "counter"
    counter.write_text("")
    monkeypatch.setenv("TOY_SHARED_COUNTER", str(counter))
    registry.register(METHOD)
    yield counter
    registry.unregister(METHOD.slug)


def _runs(counter: Path) -> list[str]:
    return counter.read_text().split()


def test_claims_of_one_experiment_share_one_run_per_seed(tmp_path, toy):
    assert [e.key for e in METHOD.experiments][:2] == ["toy_shared/pair", "toy_shared/needs-data"]
    out = verify(["toy_shared/beats", "toy_shared/gap"], scale="smoke", seeds=[0, 1], out=tmp_path, progress=False)
    assert out.exit_code == 0 and len(out.records) == 4
    assert sorted(_runs(toy)) == ["0", "1"]  # one run per seed, not one per claim
    by = {(r["key"], r["seed"]): r for r in out.records}
    assert by[("toy_shared/gap", 1)]["headline_value"] == 1.5 and by[("toy_shared/beats", 1)]["experiment"] == PAIR.key
    # the first claim judged carries the experiment's seconds, the other 0: the table adds up to the time spent
    assert by[("toy_shared/gap", 0)]["seconds"] == 0.0 and by[("toy_shared/gap", 0)]["experiment_seconds"] >= 0


def test_a_resumed_run_judges_the_rest_on_the_finished_experiment(tmp_path, toy):
    out = verify(["toy_shared/beats", "toy_shared/gap"], scale="smoke", seed=0, out=tmp_path, progress=False)
    path = out.run_dir.path
    lines = (path / "results.jsonl").read_text().splitlines()
    (path / "results.jsonl").write_text(lines[0] + "\n")  # as if killed after the first claim
    toy.write_text("")
    again = verify(resume=path, progress=False)
    assert again.exit_code == 0 and {r["key"] for r in again.records} == {"toy_shared/beats", "toy_shared/gap"}
    assert _runs(toy) == []  # the experiment was not run again


def test_a_missing_prerequisite_is_not_run_never_a_failure(tmp_path, toy, capsys):
    targets = ["toy_shared/needs-data", "toy_shared/never", "toy_shared/beats"]
    assert main(["verify", *targets, "--scale", "smoke", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if "needs-data" in line)
    assert "not run" in row and "ERROR" not in out and "NO" not in out
    assert "- toy_shared/needs-data: not run, needs toy data is not in the data root" in out
    assert "- toy_shared/never: not run, needs the toy's private data set is not public" in out
    assert "1/1 claims hold" in out and "2 not run" in out and "every verdict as declared" in out
    assert _runs(toy) == ["0"]  # 'never' was not started: its prerequisite is checked first
    assert main(["verify", *targets, "--scale", "smoke", "--strict", "--out", str(tmp_path)]) == 1
    assert "--strict" in capsys.readouterr().err


def test_paper_scale_says_what_it_lacks_before_any_work(tmp_path, toy, capsys):
    out = tmp_path / "runs"
    assert main(["verify", "toy_shared/never", "toy_shared/paper-gpu", "--scale", "paper", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "toy_shared/never: needs the toy's private data set is not public" in err
    assert "toy_shared/paper-gpu: needs a toy GPU" in err and "no selected claim can run at paper scale" in err
    assert not out.exists() and _runs(toy) == []
    # at quick scale paper_needs do not apply
    assert main(["verify", "toy_shared/paper-gpu", "--scale", "smoke", "--out", str(out)]) == 0
    assert "1/1 claims hold" in capsys.readouterr().out


def test_list_says_whether_paper_scale_can_run_here(toy, capsys):
    assert main(["list", "--json", "--runs", "/nonexistent"]) == 0
    row = next(r for r in json.loads(capsys.readouterr().out) if r["slug"] == "toy_shared")
    assert row["paper_scale"] is False and "a toy GPU" in row["paper_scale_lacks"]


def test_results_are_strict_json_and_read_back_as_floats(tmp_path, toy, capsys):
    assert main(["verify", "toy_shared/infinite", "--scale", "smoke", "--json", "--out", str(tmp_path)]) == 0

    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))

    doc = strict(capsys.readouterr().out)
    assert doc["results"][0]["metrics"]["ours"] == "Infinity" and doc["results"][0]["metrics"]["low"] == "-Infinity"
    run_dir = Path(doc["run_dir"])
    (line,) = (run_dir / "results.jsonl").read_text().splitlines()
    rec = strict(line)
    assert rec["metrics"]["undefined"] == "NaN" and rec["headline_value"] == "Infinity"
    back = RunDir(run_dir).results()[0]
    assert back["metrics"]["ours"] == math.inf and math.isnan(back["metrics"]["undefined"])
    assert back["headline_value"] == math.inf


def test_report_refuses_a_directory_that_is_not_a_verify_run(tmp_path, capsys):
    (tmp_path / "config.json").write_text(json.dumps({"what": "something else"}))
    with pytest.raises(RunDirError, match="not a verify run"):
        write_report(tmp_path)
    assert main(["report", str(tmp_path)]) == 2
    assert "not a verify run" in capsys.readouterr().err and not (tmp_path / "report.md").exists()


@pytest.mark.parametrize("sig, code, word", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")])
def test_a_signal_names_the_run_directory_to_resume(tmp_path, sig, code, word):
    env = {**os.environ, "TOY_SHARED_COUNTER": str(tmp_path / "c")}
    cmd = [sys.executable, TOY, "verify", "toy_shared/beats", "toy_shared/waits", "--scale", "smoke"]
    proc = subprocess.Popen(
        [*cmd, "--out", str(tmp_path / "runs")], stdin=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True
    )
    try:
        first = proc.stderr.readline()  # printed when the run starts, before any claim
        assert first.startswith("run directory: "), first
        run_dir = first.split(": ", 1)[1].strip()
        while "waiting" not in proc.stderr.readline():
            pass
        proc.send_signal(sig)
        rest = proc.stderr.read()
        assert proc.wait(timeout=60) == code
    finally:
        proc.kill()
    assert f"error: {word} (finished claims are saved in {run_dir}; continue with" in rest
    assert f"--resume {run_dir}" in rest
    assert len(Path(run_dir, "results.jsonl").read_text().splitlines()) == 1  # 'beats' finished and was saved


def test_experiments_are_validated():
    with pytest.raises(InputError, match="requirement 'cuda' in needs is malformed"):
        Experiment("toy_shared/x", "experiments:f", needs=("cuda",))
    with pytest.raises(InputError, match="belong to its experiment"):
        Claim("toy_shared/x", "s.", PAIR, bool, "ours", "theirs", cpus=2)
    with pytest.raises(InputError, match="belongs to another method"):
        Claim("other/x", "s.", PAIR, bool, "ours", "theirs")
    assert PAIR.requirements(Scale.PAPER) == () and METHOD.claim("paper-gpu").experiment.requirements("paper")


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="the ray extra is not installed")
def test_an_unreachable_ray_address_exits_2_without_a_run_directory(tmp_path, toy, capsys):
    out = tmp_path / "runs"
    args = ["verify", "toy_shared/beats", "--engine", "ray", "--address", "127.0.0.1:1", "--out", str(out)]
    assert main(args) == 2
    assert "cannot reach the Ray cluster at 127.0.0.1:1" in capsys.readouterr().err and not out.exists()
