"""Emergent equivariance of deep ensembles (Gerken & Kessel, ICML 2024, arXiv 2403.03103): a deep ensemble
trained with full orbit augmentation is equivariant in the mean, exactly in the NTK limit, for every input and
every training time. ``groups`` holds C4 and D4 as exact pixel permutations, the output actions (invariant,
image-valued and plane-vector outputs) and the orbit augmentation;
``ntk`` the analytic ReLU NTK and the closed-form ensemble mean; ``ensemble`` the ``torch.func`` (vmap) ensemble
trainer and the OSP and equivariance-error metrics; ``baselines`` test-time orbit averaging, a group-convolution
CNN and the member-by-member training loop.
"""

from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".groups": (
        "GROUPS",
        "MODES",
        "OUTPUTS",
        "Group",
        "group",
        "augment",
        "is_orbit_closed",
        "check_images",
    ),
    ".ntk": (
        "relu_ntk",
        "NTKEnsembleMean",
        "NTKMLP",
    ),
    ".ensemble": (
        "Ensemble",
        "train_ensemble",
        "make_members",
        "targets",
        "orbit_outputs",
        "orbit_same_prediction",
        "equivariance_error",
        "ensemble_metrics",
    ),
    ".baselines": (
        "OrbitAveraged",
        "GroupCNN",
        "train_members_loop",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(__name__, _EXPORTS)
