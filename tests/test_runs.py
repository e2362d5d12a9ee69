import json
import logging

import pytest

from icml24.errors import InputError, RunDirError
from icml24.runs import RunDir, artifacts_to, atomic_write_json, environment, save_figure


def test_create_writes_config_and_env(tmp_path):
    run = RunDir.create(tmp_path / "runs", "verify-x", {"scale": "quick", "seed": 0, "claims": []})
    assert run.path.parent == tmp_path / "runs" and run.path.name.endswith("-verify-x")
    assert json.loads((run.path / "config.json").read_text())["scale"] == "quick"
    env = json.loads((run.path / "env.json").read_text())
    assert env["python"].startswith("3.") and "torch" in env["packages"] and "cpu" in env
    assert "git_commit" in env
    again = RunDir.create(tmp_path / "runs", "verify-x", {})
    assert again.path != run.path  # same second, distinct folder
    assert not list(run.path.glob(".*.tmp"))


def test_atomic_write_leaves_old_file_on_failure(tmp_path):
    target = tmp_path / "a.json"
    atomic_write_json(target, {"v": 1})
    with pytest.raises(TypeError):
        atomic_write_json(target, {"v": object()})
    assert json.loads(target.read_text()) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["a.json"]


def test_environment_is_json_serialisable():
    json.dumps(environment())


def test_results_append_and_truncated_last_line(tmp_path, caplog):
    run = RunDir.create(tmp_path, "t", {})
    run.append({"key": "a/one", "v": 1})
    run.append({"key": "a/two", "v": float("nan")})
    with open(run.path / "results.jsonl", "a") as f:
        f.write('{"key": "a/thr')  # killed mid-write
    with caplog.at_level(logging.WARNING):
        recs = run.results()
    assert [r["key"] for r in recs] == ["a/one", "a/two"] and "truncated" in caplog.text
    assert (run.path / "results.jsonl").read_text().endswith('"a/thr')  # reading does not modify
    run.results(repair=True)
    run.append({"key": "a/three"})
    assert [r["key"] for r in run.results()] == ["a/one", "a/two", "a/three"]


def test_complete_last_line_without_newline_is_kept(tmp_path):
    run = RunDir.create(tmp_path, "t", {})
    (run.path / "results.jsonl").write_text('{"key": "a/one"}')
    run.append({"key": "a/two"})
    assert [r["key"] for r in run.results()] == ["a/one", "a/two"]


def test_unreadable_middle_line_is_refused_and_untouched(tmp_path):
    run = RunDir.create(tmp_path, "t", {})
    content = '{"key": "a/one"}\ngarbage\n{"key": "a/two"}\n'
    (run.path / "results.jsonl").write_text(content)
    with pytest.raises(RunDirError, match="line 2 is unreadable"):
        run.results(repair=True)
    assert (run.path / "results.jsonl").read_text() == content


def test_open_checks(tmp_path):
    with pytest.raises(RunDirError, match="does not exist"):
        RunDir.open(tmp_path / "nope")
    with pytest.raises(RunDirError, match="no config.json"):
        RunDir.open(tmp_path)
    (tmp_path / "config.json").write_text("{broken")
    with pytest.raises(RunDirError, match="unreadable"):
        RunDir.open(tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="is a file"):
        RunDir.create(tmp_path / "file", "t", {})


def test_save_figure_only_inside_a_run(tmp_path):
    import matplotlib.pyplot as plt

    fig = plt.figure()
    assert save_figure(fig, "outside") is None
    with artifacts_to(tmp_path):
        fig = plt.figure()
        plt.plot([0, 1], [1, 0])
        path = save_figure(fig, "drawdown vs edits")
    assert path == tmp_path / "drawdown-vs-edits.png" and path.read_bytes()[:4] == b"\x89PNG"
