"""``icml24 crebm plan`` writes a fresh run directory, trains only the chosen energy and caches it."""

import json

from icml24.cli import main

ASPIRIN = "CC(=O)Oc1ccccc1C(=O)O"


def _tiny_setup(scale, seed):
    """Sizes far below smoke scale, so the verb runs in seconds (its numbers mean nothing)."""
    from icml24.crebm.energy import EnergyConfig, TrainConfig
    from icml24.crebm.experiments import Setup
    from icml24.crebm.onestep import NeuralsymConfig

    return Setup(
        n_train=20,
        n_test=4,
        neuralsym=NeuralsymConfig(orig_fp_size=256, final_fp_size=256, hidden_size=32, epochs=2, seed=seed),
        energy=EnergyConfig(32, 32, 1, 2, 64, 0.1),
        pretrain=TrainConfig(epochs=1, batch_size=16, warmup=10, lr_scale=5.0, seed=seed),
        finetune=TrainConfig(epochs=1, batch_size=16, lr=1e-3, warmup=5, seed=seed, max_pairs=32),
        criteria_finetune=TrainConfig(epochs=1, batch_size=16, lr=1e-3, warmup=5, seed=seed, max_pairs=32),
        train_beam=3,
        max_candidates=3,
    )


def test_plan_writes_run_directories_and_caches_the_energy(tmp_path, monkeypatch, capsys):
    import icml24.crebm.experiments as experiments

    monkeypatch.setattr(experiments, "setup", _tiny_setup)
    monkeypatch.setenv("ICML24_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "runs"
    assert main(["crebm", "plan", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert text.startswith("plan the first test target") and "run directory:" in text.splitlines()[1]
    assert "trained the feasibility energy; cached" in text and "pre-training the energy" in text
    assert "cost energy" not in text and "steps energy" not in text  # only the chosen criterion is trained
    (first,) = out.iterdir()
    names = {p.name for p in first.iterdir()}
    assert {"config.json", "env.json", "results.json", "report.md"} <= names
    res = json.loads((first / "results.json").read_text())
    assert res["criterion"] == "feasibility" and res["energy_from_cache"] is False
    before = {p.name: p.read_bytes() for p in first.iterdir()}
    assert len(list((tmp_path / "cache" / "crebm" / "plan-energy").glob("feasibility-seed0-*.pt"))) == 1

    assert main(["crebm", "plan", "--smiles", ASPIRIN, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "loaded the feasibility energy from the cache" in text and "pre-training" not in text
    assert "0 complete routes" in text and "targets outside its chemistry" in text
    runs = sorted(out.iterdir())
    assert len(runs) == 2 and {p.name: p.read_bytes() for p in first.iterdir()} == before
    second = next(r for r in runs if r != first)
    assert "targets outside its chemistry" in (second / "report.md").read_text()
    assert json.loads((second / "results.json").read_text())["energy_from_cache"] is True
