import subprocess
import sys

import pytest

from icml24 import registry
from icml24.claims import Scale
from icml24.momentum_particles import paper
from icml24.testing import check_claim


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('momentum_particles'); "
        "print(len(m.claims), 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["6", "False", "True"]


def test_method_is_registered():
    m = registry.get("momentum_particles")
    assert m is paper.METHOD
    assert [c.name for c in m.claims] == [
        "regimes",
        "ppca",
        "ppca-tuned-peer",
        "generator",
        "generator-official-config",
        "generator-mean-latent",
    ]


def test_claims_share_two_experiments():
    keys = [c.experiment.key.split("/")[1] for c in paper.METHOD.claims]
    assert keys == ["regimes", "ppca", "ppca", "generator", "generator", "generator"]
    assert len(paper.METHOD.experiments) == 3


def test_regimes_claim():
    m = check_claim(
        paper.REGIMES,
        [
            {"critical_steps_median": 400.0},  # not far fewer steps than PGD
            {"critical_evals_to_tol": 600.0},  # fewer steps but no fewer gradient evaluations
            {"critical_final_rel_err": 0.05},  # does not end at the MLE
            {"critical_settle_median": 900.0},  # reaches early but keeps oscillating
            {"underdamped_settle_median": 100.0},  # the underdamped run settles first
            {"underdamped_overshoot": 0.1},  # no overshoot
            {"underdamped_overshoot": 0.3, "critical_overshoot": 0.28},  # overshoots no more than critical
            {"overdamped_steps_median": 100.0},  # overdamped faster than PGD
            {"overdamped_mean_log_err": -3.0},
        ],
    )
    assert m["pgd_overshoot"] < 0.01 and m["em_steps_median"] < 20


def test_ppca_claims():
    ppca = paper.PPCA_RUN.measure(Scale.SMOKE, 0)  # once for both claims
    m = check_claim(
        paper.PPCA,
        [
            {"log_gap_gain": -0.1},  # PGD closer to the MLE over the run
            {"log_gap_gain_se": 1.0},  # the gain over the run is within noise
            {"evals_gain": -50.0},  # later to the tolerance
            {"evals_gain_se": 1e4},  # earlier only within noise
            {"mpd_mean_gap": 99.0},  # worse on average over the run
            {"mpd_gap_max": 0.5},  # some replicate does not end at the MLE
            {"pgd_x10_gap": 0.5},  # the tuned peer does not reach the MLE
        ],
        metrics=ppca,
    )
    assert m["em_gap_100"] < 1e-2 and m["replicates"] >= 8
    assert m["mpd_closer_frac"] >= 0.5
    # a copy of PGD (same traces on every replicate): zero paired gains, equal means -- must not pass
    pgd_copy = {k.replace("pgd_", "mpd_", 1): v for k, v in m.items() if k.startswith("pgd_") and "x10" not in k}
    copy = {**m, **pgd_copy, "log_gap_gain": 0.0, "evals_gain": 0.0, "final_gap_gain": 0.0}
    assert paper.PPCA.judge(copy) is False
    # the finding: a PGD with a 10x theta step is faster; a faster MPD would contradict it
    check_claim(paper.PPCA_TUNED, [{"mpd_evals_to_tol": m["pgd_x10_evals_to_tol"] + 1.0}], expect=False, metrics=ppca)
    assert paper.PPCA_TUNED.judge({**m, "mpd_evals_to_tol": 1.0}) is True


def test_generator_claims():
    pytest.importorskip("mlxtend")
    gen = paper.GENERATOR_RUN.measure(Scale.SMOKE, 0)  # once for the three claims
    m = check_claim(
        paper.GENERATOR,
        [
            {"mpd_mse": 0.2},  # an untrained network
            {"mse_gain": -0.001},  # PGD reconstructs better
            {"mse_gain_se": 0.01},  # the reconstruction gain is within noise
            {"log_lik_gain": -1.0},  # PGD has the higher marginal likelihood
            {"log_lik_gain_se": 50.0},  # the likelihood gain is within noise
            {"mpd_log_lik": -1e4},  # no better than the untrained network's likelihood
            {"mean_image_mse": 0.01},  # no better than the mean image
            {"mpd_grad_evals": 10_000.0},  # more gradient evaluations than PGD
        ],
        metrics=gen,
    )
    assert m["abp_grad_evals"] == m["pgd_grad_evals"] == m["official_grad_evals"] == m["mpd_grad_evals"]
    # a copy of PGD's network scored with the same random numbers has zero paired gains: must not pass
    assert paper.GENERATOR.judge({**m, "mse_gain": 0.0, "log_lik_gain": 0.0}) is False
    # the findings: the official config loses to PGD at this budget; the mean latent does not favour MPD
    check_claim(paper.GENERATOR_OFFICIAL, [{"official_log_lik_gain": -100.0}], expect=False, metrics=gen)
    assert paper.GENERATOR_OFFICIAL.judge({**m, "official_mse_gain": 0.01, "official_log_lik_gain": 5.0}) is True
    check_claim(paper.GENERATOR_MEAN_LATENT, [{"mean_latent_gain": -1.0}], expect=False, metrics=gen)
    assert paper.GENERATOR_MEAN_LATENT.judge({**m, "mean_latent_gain": 0.05, "mean_latent_gain_se": 0.001}) is True
