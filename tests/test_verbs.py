"""icml24.verbs: the output convention every method verb shares."""

import argparse
import json

from matplotlib.figure import Figure

from icml24.verbs import add_out_argument, finish_run, scale_note, start_run


def _args(out, **kw):
    p = argparse.ArgumentParser()
    add_out_argument(p)
    p.add_argument("--scale", default="smoke")
    return p.parse_args(["--out", str(out), *[f"--{k}={v}" for k, v in kw.items()]])


def test_each_run_gets_its_own_directory_with_config_results_report_and_plots(tmp_path, capsys):
    args = _args(tmp_path)
    first = start_run(args, "demo-verb", "demo at scale smoke")
    second = start_run(args, "demo-verb", "demo at scale smoke")
    assert first.path != second.path and first.path.parent == second.path.parent == tmp_path
    assert first.path.name.endswith("Z-demo-verb")
    printed = capsys.readouterr().out
    assert "demo at scale smoke" in printed and f"run directory: {first.path}" in printed
    assert json.loads((first.path / "config.json").read_text())["scale"] == "smoke"
    fig = Figure()
    fig.subplots().plot([0, 1], [1, 0])
    written = finish_run(first, {"acc": 0.5, "gap": float("nan")}, ["| a |", "| 1 |"], figures={"curve": fig})
    assert sorted(p.name for p in first.path.iterdir()) == [
        "config.json", "curve.png", "env.json", "report.md", "results.json"
    ]  # fmt: skip
    assert json.loads(written["results"].read_text()) == {"acc": 0.5, "gap": "NaN"}  # strict JSON
    assert written["report"].read_text() == "| a |\n| 1 |\n"
    assert not any(second.path.glob("*.md"))  # the second run is untouched by the first's outputs


def test_config_keeps_plain_values_and_leaves_parsers_out(tmp_path):
    args = _args(tmp_path)
    args.help_parser = argparse.ArgumentParser()  # verbs with subcommands keep their parser in the namespace
    args.func = print
    run = start_run(args, "demo", "demo")
    config = json.loads((run.path / "config.json").read_text())
    assert config["out"] == str(tmp_path) and "help_parser" not in config and "func" not in config


def test_scale_note_only_below_quick():
    assert "too small to judge" in scale_note("smoke")
    assert scale_note("quick") is None and scale_note("paper") is None
