"""The claims of "Equivariant Deep Weight Space Alignment" (Deep-Align, Navon et al., ICML 2024).

Every claim is measured on pairs of held-out networks of a model zoo (MLPs on digits at SMOKE and QUICK scale),
against Weight Matching (and, for quality, Activation Matching and Sinkhorn re-basin) on the same pairs in the
same call; the experiments and the settings of each scale are in ``experiments.py``.

Every claim judges one experiment, ``deep_align/zoo``: the zoo and the aligner trained once per (scale, seed), the
permuted copies, the pair study (every method on every held-out pair) and the symmetry check measured on them.
PAPER scale trains its zoo on Fashion-MNIST from the data root.
"""

from __future__ import annotations

from typing import Mapping

from ..claims import Claim, Experiment
from ..registry import method

SLUG = "deep_align"
EXACT_MIN = 0.99  # "recovers the permutation (accuracy about 1)": the theory predicts exactly 1 on exact copies
NOISE_LEVEL = 1.0  # noisy copies: Gaussian noise of this many times each weight tensor's std (SNR 1)
N_UNTRAINED = 3  # the untrained control is the best of this many random initialisations of the same encoder
SYM_TOL = 1e-5  # the symmetries hold by construction, up to float32 rounding

ZOO = Experiment(f"{SLUG}/zoo", "experiments:run_zoo", paper_needs=("data:fashion-mnist",))


def _holds_exactness(m: Mapping[str, float]) -> bool:
    exact = m["da_perm_acc"] >= EXACT_MIN and m["wm_perm_acc"] >= EXACT_MIN
    untrained_fails = m["noisy_untrained_perm_acc"] < EXACT_MIN
    learned = m["noisy_da_minus_untrained"] > 2 * m["noisy_da_minus_untrained_se"]
    return exact and untrained_fails and learned


EXACTNESS = Claim(
    key=f"{SLUG}/exactness",
    statement=(
        "On a held-out network and a randomly permuted copy of it, the trained Deep-Align's one forward pass "
        f"recovers the permutation (accuracy >= {EXACT_MIN} of hidden neurons), as Weight Matching does; on "
        f"permuted copies perturbed by Gaussian noise of {NOISE_LEVEL} times each tensor's std, where an untrained "
        f"aligner of the same architecture (best of {N_UNTRAINED} initialisations) recovers less than {EXACT_MIN}, "
        "the trained aligner recovers more neurons than it (paired over copies, by more than 2 standard errors)."
    ),
    run=ZOO,
    holds=_holds_exactness,
    headline="noisy_da_perm_acc",
    baseline="noisy_untrained_perm_acc",
    paper="theory: can output the true alignment of an exact permuted copy; trained on noisy permuted copies",
)


def _holds_quality(m: Mapping[str, float]) -> bool:
    far_below = m["none_minus_da"] > 2 * m["none_minus_da_se"] and m["da_barrier"] <= 0.5 * m["none_barrier"]
    learned = m["untrained_minus_da"] > 2 * m["untrained_minus_da_se"]
    return far_below and learned


QUALITY = Claim(
    key=f"{SLUG}/quality",
    statement=(
        "On held-out pairs of independently trained networks, the test-loss barrier after the trained "
        "Deep-Align's one-shot alignment is below that of an untrained aligner of the same architecture (best "
        f"of {N_UNTRAINED} initialisations) by more than 2 standard errors of the paired difference, far below "
        "that of no alignment (less than half, lower by more than 2 standard errors). Its comparison with "
        "Weight Matching is the beats-wm finding."
    ),
    run=ZOO,
    holds=_holds_quality,
    headline="da_barrier",
    baseline="wm_barrier",
    paper="one pass merges held-out pairs far better than no alignment (MNIST/CIFAR10 MLPs)",
)


def _holds_beats_wm(m: Mapping[str, float]) -> bool:
    return m["da_minus_wm"] < -2 * m["da_minus_wm_se"]


BEATS_WM = Claim(
    key=f"{SLUG}/beats-wm",
    statement=(
        "On held-out pairs of independently trained networks, the test-loss barrier after the trained "
        "Deep-Align's one-shot alignment is below Weight Matching's by more than 2 standard errors of the "
        "paired difference (the paper: better or equal)."
    ),
    run=ZOO,
    holds=_holds_beats_wm,
    headline="da_barrier",
    baseline="wm_barrier",
    paper="one pass gives barrier/AUC better or equal to WM, AM, Sinkhorn (MNIST/CIFAR10 MLPs)",
    expected=False,
    finding=(
        "Deep-Align is never better than Weight Matching here; whether it is 'equal' (DA - WM barrier within 2 "
        "standard errors of the paired difference, the paper's 'or equal') depends on the aligner's size and "
        "training seed. DA - WM, mean +- s.e.: quick (190 test pairs) -0.001 +- 0.012, -0.007 +- 0.012, +0.015 "
        "+- 0.012 on seeds 0, 1, 2 (equal on all three); smoke (120 pairs, the smaller aligner) -0.000 +- 0.012, "
        "+0.002 +- 0.012, +0.034 +- 0.013 (equal, equal, worse). With 45 quick pairs it had read +0.032 +- "
        "0.022, +0.030 +- 0.021, -0.021 +- 0.023. So 'equal' is not declared either way, while 'better' is false "
        "on every seed at both scales (barriers WM 0.17-0.22, DA 0.17-0.22). Likely reason: our aligner is "
        "small (quick: 16 channels, 2 DWS layers, 300 steps; smoke: 8 channels, 1 layer) and trained on 32-60 "
        "networks, where the paper trains the full encoder for 100 epochs on thousands of networks; how well "
        "such an aligner trains varies with the seed by more than the 0.012 standard error of the comparison."
    ),
)


def _holds_init(m: Mapping[str, float]) -> bool:
    fewer = m["sweeps_saved"] > 2 * m["sweeps_saved_se"]
    as_good = m["objective_gain"] >= -2 * m["objective_gain_se"]
    return fewer and as_good


INIT = Claim(
    key=f"{SLUG}/init",
    statement=(
        "Weight Matching started from Deep-Align's alignment needs fewer coordinate-descent sweeps than "
        "Weight Matching from the identity (by more than 2 standard errors) and ends at a weight-matching "
        "objective at least as good (within 2 standard errors or better)."
    ),
    run=ZOO,
    holds=_holds_init,
    headline="dawm_sweeps",
    baseline="wm_sweeps",
    paper="as WM's initialisation: improved solutions, significant speedup in convergence",
)


def _holds_symmetries(m: Mapping[str, float]) -> bool:
    return (
        m["equivariance_err"] <= m["tolerance"]
        and m["swap_err"] <= m["tolerance"]
        and m["equivariant_alignment_frac"] == 1.0
        and m["swap_alignment_frac"] == 1.0
    )


SYMMETRIES = Claim(
    key=f"{SLUG}/symmetries",
    statement=(
        f"Permuting the two input networks by (g, h) permutes Deep-Align's score matrices to g S h^T and "
        f"swapping the inputs transposes them, to within {SYM_TOL} (float32), so its alignments transform "
        "the same way (paper Prop. 4)."
    ),
    run=ZOO,
    holds=_holds_symmetries,
    headline="equivariance_err",
    baseline="tolerance",
    paper="proved: alignment is equivariant to (g, h) and transposes on swap; exact by construction",
)

METHOD = method(SLUG, (EXACTNESS, QUALITY, BEATS_WM, INIT, SYMMETRIES))
