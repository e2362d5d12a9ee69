import pytest

from icml24.cli import main


def test_verb_prints_sweep_and_saves_plot(tmp_path, capsys):
    plot = tmp_path / "gt.png"
    args = ["graph-transformer", "--data", "pattern", "--labels", "16,64", "--steps", "60", "--plot", str(plot)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "GT+PE" in out and "paper appendix" in out
    assert plot.stat().st_size > 0


@pytest.mark.parametrize(
    "bad",
    [["--labels", "20,x"], ["--labels", "0"], ["--labels", ","], ["--steps", "0"], ["--data", "pubmed"]],
)
def test_verb_refuses_bad_input(bad, tmp_path):
    assert main(["graph-transformer", "--data", "pattern", *bad, "--plot", str(tmp_path / "x.png")]) == 2
