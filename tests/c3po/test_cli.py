"""``icml24 c3po learn`` as a user meets it: a fresh run directory for each run, the scale note under the table
(the world's training is replaced by stand-ins, so the test takes seconds; the real runs are the claims' tests)."""

import json

import pytest

from icml24.cli import main

METHODS = ("base", "in_context", "scd", "scd_negatives", "dpo", "c3po")


def files(run):
    return {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}


def scores(method):
    s = {"adherence": 1.0, "near": 0.0, "out": 0.0, "overgen": 0.0}
    return s if method in ("base", "in_context") else {**s, "kl_out": 0.5}


@pytest.fixture
def fake_world(monkeypatch):
    import icml24.c3po.world_run as world_run

    class FakeRun:
        seed = 0

        def __init__(self, scale, seed):
            self.done = []

        def scores(self, method, key, *a):
            self.done.append(method)
            return scores(method)

    monkeypatch.setattr(world_run, "WorldRun", FakeRun)


@pytest.mark.parametrize("scale, noted", [("smoke", True), ("quick", False)])
def test_learn_writes_a_fresh_run_directory_each_time(tmp_path, fake_world, capsys, scale, noted):
    args = ["c3po", "learn", "--scale", scale, "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        f"c3po learn 'use & instead of and in dms to my colleagues' on the assistant world (scale {scale})"
    )
    assert "run directory:" in out and "scd_negatives" in out
    assert ("note: scale smoke" in out) == noted
    (run,) = tmp_path.iterdir()
    names = {p.name for p in run.iterdir()}
    assert {"config.json", "env.json", "results.json", "report.md", "c3po-pareto-seed0.png"} <= names
    results = json.loads((run / "results.json").read_text())
    assert results["c3po_kl_out"] == 0.5 and results["scale"] == scale
    report = (run / "report.md").read_text()
    assert "adherence" in report and ("note: scale smoke" in report) == noted
    assert out.index("note:" if noted else "c3po ") < out.index("Pareto plot:")
    before = files(run)
    assert main(args) == 0
    assert len(list(tmp_path.iterdir())) == 2 and files(run) == before


@pytest.mark.parametrize("scale", ["smoke", "quick"])
def test_smollm2_arm_honours_scale_and_writes_a_run_directory(tmp_path, monkeypatch, capsys, scale):
    import icml24.c3po.smollm2 as smollm2
    from icml24.c3po.cli import SMOLLM2_SIZES

    seen = {}

    def arm(steps, **kw):
        seen.update(kw, steps=steps)
        m = {"load_seconds": 30.0, "data_seconds": 60.0, "rows": 8.0, "seconds_per_step": 5.0, "c3po_kl_out": 0.1}
        for name in ("base", "in_context", "c3po"):
            m.update({f"{name}_{k}": 0.25 for k in ("adherence", "near", "out", "overgen", "new_share")})
        return m

    monkeypatch.setattr(smollm2, "smollm2_arm", arm)
    args = ["c3po", "learn", "--model", "smollm2", "--steps", "3", "--scale", scale, "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert seen["steps"] == 3 and all(seen[k] == v for k, v in SMOLLM2_SIZES[scale].items())
    assert out.startswith("SmolLM2-135M-Instruct + LoRA: C3PO for 3 steps") and f"(scale {scale}:" in out
    assert "new-word share" in out and ("note: scale smoke" in out) == (scale == "smoke")
    (run,) = tmp_path.iterdir()
    assert {"config.json", "env.json", "results.json", "report.md"} <= {p.name for p in run.iterdir()}
    assert json.loads((run / "results.json").read_text())["n_eval"] == SMOLLM2_SIZES[scale]["n_eval"]
