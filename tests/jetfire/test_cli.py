"""``icml24 jetfire train`` prints Jetfire against FP32 and writes them into a fresh run directory."""

import json

from icml24.cli import main
from tests.conftest import needs_text

TINY = ["jetfire", "train", "--steps", "3", "--layers", "1", "--width", "32", "--batch-size", "2"]


@needs_text
def test_cli_train_prints_jetfire_against_fp32(tmp_path, capsys):
    out = tmp_path / "runs"
    assert main([*TINY, "--out", str(out)]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0].startswith("train the char GPT (1 x d=32) on tiny Shakespeare for 3 steps of 2 with Jetfire")
    assert lines[1].startswith("run directory:")
    assert "jetfire: validation loss" in text and "fp32: validation loss" in text and "jetfire vs fp32" in text
    (first,) = out.iterdir()
    assert {p.name for p in first.iterdir()} >= {"config.json", "env.json", "results.json", "report.md", "loss.png"}
    res = json.loads((first / "results.json").read_text())
    assert {"jetfire_val_loss", "fp32_val_loss", "val_loss_gap"} <= set(res)
    assert [len(v) for v in res["train_losses"].values()] == [3, 3]
    assert "jetfire vs fp32" in (first / "report.md").read_text()
    before = {p.name: p.read_bytes() for p in first.iterdir()}
    assert main([*TINY, "--no-fp32", "--out", str(out)]) == 0
    assert "fp32: validation loss" not in capsys.readouterr().out
    assert len(list(out.iterdir())) == 2 and {p.name: p.read_bytes() for p in first.iterdir()} == before
