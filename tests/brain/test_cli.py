"""``icml24 brain train`` as a user meets it: a fresh run directory for each run (the library's training is
replaced by stand-ins, so the test takes seconds; the real runs are the claims' tests)."""

import json
import math
import types

import pytest

from icml24.cli import main


def files(run):
    return {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}


@pytest.fixture
def fake_tiny(monkeypatch):
    import icml24.brain.experiments as experiments
    import icml24.brain.world as world

    monkeypatch.setattr(world, "build_world", lambda seed, steps: types.SimpleNamespace(prior="sft"))
    monkeypatch.setattr(world, "exact_metrics", lambda model, w: (0.374, 1.761, 0.0))
    curve = [(0, 0.374), (320, 0.2), (640, 0.1)]
    monkeypatch.setattr(experiments, "distill", lambda *a, **k: (curve, (0.1, 1.9, 0.05)))


def test_train_writes_a_fresh_run_directory_each_time(tmp_path, fake_tiny, capsys):
    args = ["brain", "train", "--steps", "12", "--out", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("brain train: SFT a tiny GPT-2") and "run directory:" in out
    assert "KL(post||policy)" in out and "brain: KL(posterior || policy) 0.1000" in out
    (run,) = tmp_path.iterdir()
    assert {"config.json", "env.json", "results.json", "report.md", "kl-curve.png"} <= {p.name for p in run.iterdir()}
    results = json.loads((run / "results.json").read_text())
    assert results["kl_posterior"] == 0.1 and results["curve"][-1] == [640, 0.1]
    assert "KL(post||policy)" in (run / "report.md").read_text()
    assert json.loads((run / "config.json").read_text())["steps"] == 12
    before = files(run)
    assert main(args) == 0
    assert len(list(tmp_path.iterdir())) == 2 and files(run) == before


@pytest.mark.parametrize("se", [None, 0.0101])
def test_smollm2_prints_the_baseline_row_and_the_kl_estimate(tmp_path, monkeypatch, capsys, se):
    import icml24.brain.smollm2 as smollm2

    m = {
        "reward_before": 1.2, "reward_after": 3.4, "kl_after": -0.0129, "ess_first": 2.0, "ess_last": 1.5,
        "seconds_per_step": 4.2, "trainable_params": 4096.0, "load_seconds": 30.0, "prompts": 16.0,
    }  # fmt: skip
    if se is not None:
        m["kl_after_se"] = se
    monkeypatch.setattr(smollm2, "smollm2_arm", lambda steps, **k: dict(m))
    assert main(["brain", "train", "--model", "smollm2", "--steps", "2", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "a few seconds" not in out and "4.2 s a step (measured)" in out
    assert "SFT (before)" in out and "BRAIn (after)" in out and "over 64 samples" in out
    assert ("-0.0129 ± 0.0101" in out) == (se is not None)
    (run,) = tmp_path.iterdir()
    results = json.loads((run / "results.json").read_text())
    assert math.isclose(results["kl_after"], -0.0129) and results["samples"] == 64
    assert "BRAIn (after)" in (run / "report.md").read_text()
