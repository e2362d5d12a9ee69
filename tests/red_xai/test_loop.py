import json

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

import icml24.red_xai as rx
from icml24.cli import main
from icml24.red_xai.measure import rank_correlation, swap_pairs


def test_rank_correlation_matches_scipy():
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(5, 1, 4, 4, generator=gen), torch.randn(5, 1, 4, 4, generator=gen)
    b[:, :, :2] = 0.0  # ties
    want = [spearmanr(a[i].flatten().double(), b[i].flatten().double()).statistic for i in range(5)]
    assert np.allclose(rank_correlation(a, b), want, atol=1e-12)
    assert np.allclose(rank_correlation(a, a), 1.0)


def test_randomization_check_cascades_and_leaves_the_model():
    net = rx.SmallNet(16, 3, 8, seed=0).eval()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    x = torch.rand(12, 1, 4, 4, generator=torch.Generator().manual_seed(1))
    r = rx.randomization_check(net, x, 1, seed=0)
    assert r["layers"] == ["net.4", "net.2", "net.0"] and len(r["correlations"]) == 3
    assert r["final"] == r["correlations"][-1] and r["per_image"].shape == (12,)
    assert r["final"] < 0.9  # randomising every weight changes the signed heatmaps
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items()) and not net.training


def test_cli_question_writes_the_report_on_digits(tmp_path, capsys):
    args = ["red-xai", "question", "--data", "digits", "--plant", "corner", "--out", str(tmp_path)]
    assert main(args + ["--epochs", "8", "--fix-epochs", "2", "--peers", "1"]) == 0
    printed = capsys.readouterr().out
    (out,) = tmp_path.iterdir()  # a fresh run directory <UTC time>-red-xai-question
    assert out.name.endswith("Z-red-xai-question")
    lines = printed.splitlines()
    assert lines[0].startswith("red-xai question: train an MLP and 1 near-equal peer (8 epochs) on ")
    assert lines[1] == f"run directory: {out}" and lines[-1] == f"report: {out / 'report.md'}"
    for word in ("RRR", "RR-ClArC", "report:", "zplus", "Rashomon set of 2"):
        assert word in printed
    names = {p.name for p in out.iterdir()}
    figures = ("heatmaps", "spectrum", "cluster_means", "before_after", "heatmaps_after", "pixel_flipping", "rashomon")
    assert {"report.md", "metrics.json", "results.json", "config.json", "env.json"} <= names
    assert {f"{f}.png" for f in figures} <= names
    assert not any(n.endswith(".tmp") for n in names)
    text = (out / "report.md").read_text()
    for fig in figures:
        assert f"({fig}.png)" in text
    for section in ("SpRAy", "TCAV", "The fix, re-measured", "Pixel flipping", "Rashomon set", "lrp_zplus"):
        assert section in text
    assert text.startswith("# RED XAI report") and "digits, corner patch on class 0, seed 0" in text  # + the table
    assert json.loads((out / "results.json").read_text()) == json.loads((out / "metrics.json").read_text())
    assert json.loads((out / "config.json").read_text())["peers"] == 1
    m = json.loads((out / "metrics.json").read_text())
    assert 0.0 <= m["reliance"] <= 1.0 and m["rrr_reliance"] <= m["reliance"]
    for k in ("", "lrp_epsilon_", "lrp_zplus_"):  # LRP heatmaps on the model and on every fix
        assert 0.0 <= m[f"{k}relevance_mass"] <= 1.0
        assert all(f"{fix}_{k}relevance_mass" in m for fix in ("pclarc", "rrclarc", "rrr"))
        assert 0.0 <= m[f"{k}spray_artifact_cluster_mass"] <= 1.0 and m[f"{k}flip_aopc"] > m["flip_aopc_random"]
    # epsilon-LRP of a ReLU network is gradient x input (Ancona et al. 2018): the two columns agree
    assert m["lrp_epsilon_relevance_mass"] == pytest.approx(m["relevance_mass"], abs=1e-3)
    assert m["rashomon_models"] == 2 and m["rashomon_reliance_min"] <= m["rashomon_reliance_max"]
    # a second run (the smallest) makes a second run directory and leaves the first as it was
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    assert main(args + ["--epochs", "1", "--fix-epochs", "0", "--peers", "0"]) == 0
    capsys.readouterr()
    assert len(list(tmp_path.iterdir())) == 2 and {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_question_never_changes_the_model(tmp_path):
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(60, 1, 4, 4, generator=gen)
    y = torch.arange(60) % 3
    mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    mask[:, 0, 0] = True
    net = rx.SmallNet(16, 3, 8, seed=0).eval()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    r = rx.question(net, (x, y), tmp_path, target=0, mask=mask, epochs=1, seed=0)
    assert r["report"].is_file() and set(r["metrics"]) >= {"accuracy", "reliance", "rrr_reliance", "tcav"}
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    assert not net.training and all(p.grad is None for p in net.parameters())
    # the SpRAy clusters' mean heatmaps under every attribution, the LRP rules included
    clusters = int(r["metrics"]["spray_clusters"])
    table = [line for line in r["report"].read_text().splitlines() if line.startswith("| ") and line.count("|") == 6]
    assert table[0] == "| cluster | size | input_x_gradient | lrp_epsilon | lrp_zplus |" and len(table) == 1 + clusters


def test_the_steps_of_question_called_alone_give_its_numbers(tmp_path):
    from icml24.red_xai import loop

    gen = torch.Generator().manual_seed(0)
    x = torch.rand(60, 1, 4, 4, generator=gen)
    y = torch.arange(60) % 3
    mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    mask[:, 0, 0] = True
    net = rx.SmallNet(16, 3, 8, seed=0).eval()
    m = rx.question(net, (x, y), tmp_path, target=0, mask=mask, epochs=1, seed=0)["metrics"]
    q = loop.prepare(net, (x, y), target=0, mask=mask, epochs=1, seed=0)
    assert q.net is not net and q.methods == ("input_x_gradient", "lrp_epsilon", "lrp_zplus")
    before = loop.examine(q.net, q)
    assert (before["acc"], before["reliance"]) == (m["accuracy"], m["reliance"])
    assert loop.cluster(q, before)["spray"].clusters == m["spray_clusters"]
    t, cav = loop.name_concept(q)
    assert (t["score"], cav.accuracy) == (m["tcav"], m["cav_accuracy"])
    assert loop.examine(loop.fix(q, cav)["RRR"], q)["reliance"] == m["rrr_reliance"]
    checks = loop.check_explanations(q, before)
    assert checks["randomization"]["final"] == m["randomization_correlation"]
    assert checks["flips"]["lrp_zplus"]["aopc"] == m["lrp_zplus_flip_aopc"]
    assert loop.explore_rashomon(q) is None


def test_question_says_where_lrp_is_unavailable(tmp_path):
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(60, 1, 4, 4, generator=gen)
    y = torch.arange(60) % 3
    mask = torch.zeros(1, 4, 4, dtype=torch.bool)
    mask[:, 0, 0] = True
    torch.manual_seed(0)
    odd = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8))
    odd = torch.nn.Sequential(*odd, torch.nn.GELU(), torch.nn.Linear(8, 3)).eval()  # Captum has no LRP rule for GELU
    r = rx.question(odd, (x, y), tmp_path, target=0, mask=mask, epochs=1, seed=0)
    text = r["report"].read_text()
    assert "Not computed for this model" in text and "`lrp_zplus`: Captum's LRP does not support" in text
    assert "lrp_zplus_relevance_mass" not in r["metrics"] and "relevance_mass" in r["metrics"]


def test_cli_refuses_bad_input(capsys):
    assert main(["red-xai", "question", "--out", "/tmp/never", "--seed", "-1"]) == 2
    assert capsys.readouterr().err.startswith("error: --seed")


@pytest.mark.parametrize("data", ["mnist", "cifar"])
def test_cli_rejects_unknown_data(data, capsys):
    assert main(["red-xai", "question", "--data", data, "--out", "/tmp/never"]) == 2
    assert "invalid choice" in capsys.readouterr().err


def test_benchmark_runs_at_tiny_size(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    bench = Path(__file__).resolve().parents[2] / "benchmarks" / "red_xai.py"
    spec = importlib.util.spec_from_file_location("bench_red_xai", bench)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    argv = ["--ns", "8", "--spray-ns", "20", "40", "--side", "6", "--repeats", "1", "--out", str(tmp_path)]
    assert mod.main(argv) == 0
    assert "threads: 1" in capsys.readouterr().out
    (run,) = tmp_path.iterdir()
    res = json.loads((run / "results.json").read_text())
    assert all(r["max_abs_diff"] < 1e-4 and r["ratio"] > 0 for r in res["rows"]) and len(res["spray"]) == 2


def _border_problem(seed=0):
    from icml24.data.spurious import digits_border

    d = digits_border(60, n_test=30, width=2, seed=seed)
    h, w = d.shape

    def tensors(z, g):
        return torch.from_numpy(z.reshape(-1, 1, h, w)).float(), torch.from_numpy(g > 0).long()

    return tensors(d.z_train, d.g_train), tensors(d.z_test, d.g_test), torch.from_numpy(d.mask.reshape(1, h, w))


def test_question_on_the_noise_border_end_to_end(tmp_path):
    train, test, mask = _border_problem()
    net = rx.fit(rx.SmallNet(mask.numel(), 2, 16, seed=0), *train, epochs=30, seed=0)
    kw = {"artifact": "swap", "held_out": test, "epochs": 1, "max_heatmaps": 12}
    r = rx.question(net, train, tmp_path, target=1, mask=mask, **kw, seed=0)
    m = r["metrics"]
    assert m["mask_share"] == pytest.approx(1 - 64 / 144)
    for fix in ("", "pclarc_", "rrclarc_", "rrr_"):
        for k in ("accuracy", "reliance", "artifact_removed_accuracy", "artifact_only_accuracy", "relevance_mass"):
            assert 0.0 <= m[f"{fix}{k}"] <= 1.0
    # trained to fit 60 images whose borders are noise: the border alone names the training label (memorised),
    # but not the held-out label
    assert m["accuracy"] >= 0.8 and m["artifact_only_accuracy"] > m["artifact_only_accuracy_held_out"]
    text = r["report"].read_text()
    assert "60 images to fit and 30 held-out images" in text and "memorised" in text
    assert "images with their own masked pixels against images with them removed" in text
    assert {"heatmaps.png", "before_after.png", "heatmaps_after.png"} <= {p.name for p in tmp_path.iterdir()}


def test_artifact_flips_counts_prediction_changes_under_a_swap():
    _, (x, _), mask = _border_problem()
    flat = mask.reshape(-1)
    blind = rx.SmallNet(mask.numel(), 2, 8, seed=0)
    with torch.no_grad():
        blind.net[0].weight[:, flat] = 0.0  # the first layer does not read the border
    assert rx.artifact_flips(blind.eval(), x, mask) == 0.0  # swapping what it never reads changes nothing
    # a model that reads one border pixel only: after the swap, image i is predicted as its partner was
    pixel = int(flat.nonzero()[0])
    reader = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(mask.numel(), 2, bias=False))
    with torch.no_grad():
        reader[1].weight.zero_()
        reader[1].weight[0, pixel], reader[1].weight[1, pixel] = 1.0, -1.0
    reader.eval()
    pred, partner = rx.predict(reader, x), swap_pairs(len(x), 0)
    assert (partner != torch.arange(len(x))).all() and sorted(partner.tolist()) == list(range(len(x)))
    want = float((pred != pred[partner]).float().mean())
    assert 0.0 < want and rx.artifact_flips(reader, x, mask, seed=0) == pytest.approx(want)


def test_cli_refuses_a_plant_that_does_not_fit_the_data(capsys):
    assert main(["red-xai", "question", "--data", "digits-border", "--plant", "corner", "--out", "/tmp/never"]) == 2
    assert capsys.readouterr().err.startswith("error: --plant")
    assert main(["red-xai", "question", "--data", "digits", "--plant", "border", "--out", "/tmp/never"]) == 2
    assert capsys.readouterr().err.startswith("error: --plant")
    assert main(["red-xai", "question", "--data", "digits-border", "--target", "2", "--out", "/tmp/never"]) == 2
    assert capsys.readouterr().err.startswith("error: --target")


def test_border_data_turns_the_noise_border_images_into_tensors():
    from icml24.errors import InputError
    from icml24.red_xai.world import border_data

    d = border_data("digits-border", seed=0)
    assert d.x_train.shape == (261, 1, 16, 16) and d.x_test.shape == (100, 1, 16, 16)
    assert d.x_train.dtype == torch.float32 and set(d.y_train.tolist()) == {0, 1} and len(d.y_test) == 100
    assert d.mask.shape == (1, 16, 16) and int(d.mask.sum()) == 256 - 64 and not bool(d.mask[0, 4:12, 4:12].any())
    with pytest.raises(InputError, match="data .mnist-border"):
        border_data("mnist-border")


def test_each_step_refuses_what_is_not_its_input_in_one_line():
    from icml24.errors import InputError
    from icml24.red_xai import loop, report

    net = torch.nn.Linear(2, 2)
    calls = {
        "reliance": lambda: loop.reliance(net, {}),
        "examine": lambda: loop.examine(net, "q"),
        "cluster": lambda: loop.cluster(None, {}),
        "name_concept": lambda: loop.name_concept(3),
        "fix": lambda: loop.fix([], None),
        "check_explanations": lambda: loop.check_explanations(object(), {}),
        "explore_rashomon": lambda: loop.explore_rashomon(net),
        "collect_metrics": lambda: report.collect_metrics(None, None),
        "figures": lambda: report.figures(None, None),
        "report_text": lambda: report.report_text(None, None, {}),
        "write_report": lambda: report.write_report("out", None, None, {}),
    }
    for name, call in calls.items():
        with pytest.raises(InputError, match=r"^q must be the Questioning") as err:
            call()
        assert "\n" not in str(err.value), name
    with pytest.raises(InputError, match=r"^model must be a torch.nn.Module"):
        loop.reliance("net", None)
