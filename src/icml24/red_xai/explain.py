"""Explain and name: heatmaps of a torch classifier, their clusters, and the concept behind them.

Biecek & Samek (ICML 2024, arXiv 2402.13914) argue that explanations should serve to *question* a model (find its
bugs and shortcuts, validate it), not only to justify its decisions, and that no single tool ships that loop. The
loop is built from the cited RED literature on Captum (attributions) and scikit-learn (spectral clustering, linear
probes); this module explains and names, :mod:`.correct` removes the shortcut, :mod:`.measure` re-measures and checks
the explanations, and :func:`~icml24.red_xai.loop.question` runs them all:

- :func:`attribute`: gradient x input, saliency, Integrated Gradients and LRP (epsilon, z+) through Captum;
- :func:`spray`: Spectral Relevance Analysis (Lapuschkin et al. 2019);
- :func:`concept_vector`, :func:`tcav` and :func:`tcav_score`: CAVs and TCAV scores with a significance test
  (Kim et al. 2018).

LRP runs on Captum's rules, set fresh on every call and removed afterwards (Captum's rule objects keep state between
calls); ``nn.Flatten`` gets the epsilon rule (exact for a reshape). Other models get LRP only where Captum supports
their layers; elsewhere :func:`attribute` refuses with :class:`~icml24.errors.InputError`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from ..extras import require
from ..validation import check_choice, check_float, check_int, check_probability, check_seed, check_tensor
from .checks import check_eval, check_images, check_labels, check_target, get_layer, n_outputs
from .nets import Projection

__all__ = [
    "METHODS",
    "attribute",
    "SprayResult",
    "spray",
    "ConceptVector",
    "concept_vector",
    "tcav",
    "tcav_score",
]

METHODS = ("input_x_gradient", "saliency", "integrated_gradients", "lrp_epsilon", "lrp_zplus")


# --------------------------------------------------------------------------------------------------- attributions


def attribute(
    model: nn.Module,
    x: torch.Tensor,
    target,
    method: str = "input_x_gradient",
    *,
    steps: int = 32,
    epsilon: float = 1e-6,
) -> torch.Tensor:
    """Heatmaps of ``model``'s logit for ``target`` on images ``x``, through Captum.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode, returning logits ``(N, classes)``.
    x : torch.Tensor
        Images ``(N, C, H, W)``, float, finite.
    target : int or torch.Tensor
        One class for every image, or a tensor of ``N`` classes.
    method : {"input_x_gradient", "saliency", "integrated_gradients", "lrp_epsilon", "lrp_zplus"}
        Gradient x input, the absolute gradient, Integrated Gradients (zero baseline, Gauss-Legendre, ``steps``;
        completeness: the heatmap sums to f(x) - f(0)), or LRP through Captum's rules (only for models whose layers
        Captum's LRP supports: Linear, Conv, ReLU, pooling; each module used once): ``lrp_epsilon`` puts the
        epsilon rule ``R_j = sum_k a_j w_jk / (z_k + eps sign(z_k)) R_k`` on every layer; ``lrp_zplus`` puts the
        z+ rule ``R_j = sum_k a_j w_jk^+ / sum_j a_j w_jk^+ R_k`` (Captum's alpha1-beta0 with the bias dropped) on
        every weighted layer but the last and epsilon on the last (the logits), the composite of Montavon et al.
        (2019) for ReLU networks; z+ assumes non-negative layer inputs (pixels in [0, 1], ReLU outputs). "Last"
        is the last weighted module in registration order, which is the execution order of a ``Sequential``.
    steps : int, default 32
        Integration steps of Integrated Gradients.
    epsilon : float, default 1e-6
        Stabiliser of the LRP-epsilon rule (Captum's default 1e-9 is kept when 0).

    Returns
    -------
    torch.Tensor
        Relevance of every input pixel, shape of ``x``, detached.
    """
    require("captum", extra="xai", what="red_xai")
    check_eval(model)
    x = check_images(x)
    method = check_choice(method, "method", METHODS)
    steps = check_int(steps, "steps", min_val=1)
    epsilon = check_float(epsilon, "epsilon", min_val=0.0)
    classes = n_outputs(model, x)
    if isinstance(target, torch.Tensor) and target.ndim == 1:
        t = check_labels(target, len(x), "target", classes)
    else:
        t = check_target(target, classes)
    from captum import attr

    x = x.detach().clone().requires_grad_(True)
    if method == "input_x_gradient":
        r = attr.InputXGradient(model).attribute(x, target=t)
    elif method == "saliency":
        r = attr.Saliency(model).attribute(x, target=t, abs=True)
    elif method == "integrated_gradients":
        r = attr.IntegratedGradients(model).attribute(x, baselines=0.0, target=t, n_steps=steps)
    else:
        from captum.attr._core.lrp import SUPPORTED_LAYERS_WITH_RULES
        from captum.attr._utils.lrp_rules import Alpha1_Beta0_Rule, EpsilonRule

        weighted_types = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
        # the epsilon rule on a reshape passes relevance on unchanged (R_in = x * R / x), so nn.Flatten gets it too;
        # any other module keeps Captum's own handling (ReLU, Dropout, Tanh) or its refusal (unknown layers)
        ruled = (*weighted_types, *SUPPORTED_LAYERS_WITH_RULES, nn.Flatten, Projection)
        every = [m for m in model.modules() if len(list(m.children())) == 0]
        leaves = [(n, m) for n, m in model.named_modules() if isinstance(m, ruled) and not list(m.children())]
        weighted = [name for name, m in leaves if isinstance(m, weighted_types)]
        zplus = set(weighted[:-1]) if method == "lrp_zplus" else set()
        # what Captum may leave on a module when it stops half-way (a rule, saved activations) is put back after
        absent = object()
        saved = [(m, {a: m.__dict__.get(a, absent) for a in ("rule", "activations")}) for m in every]
        try:
            for name, m in leaves:
                m.rule = Alpha1_Beta0_Rule(set_bias_to_zero=True) if name in zplus else EpsilonRule(epsilon or 1e-9)
            r = attr.LRP(model).attribute(x, target=t)
        except TypeError as error:
            msg = f"Captum's LRP does not support a layer of model: {error}"
            raise InputError(msg, "use input_x_gradient") from None
        finally:
            for m, attrs in saved:
                for a, v in attrs.items():
                    if v is not absent:
                        setattr(m, a, v)
                    elif a in m.__dict__:
                        delattr(m, a)
    return r.detach()


# --------------------------------------------------------------------------------------------------- SpRAy


@dataclass(frozen=True)
class SprayResult:
    """What Spectral Relevance Analysis found.

    Parameters
    ----------
    labels : numpy.ndarray
        Cluster id of every heatmap.
    eigenvalues : numpy.ndarray
        The smallest eigenvalues of the normalised graph Laplacian, ascending.
    clusters : int
        The cluster count, chosen at the largest eigengap (at least 2, at most the number of distinct maps).
    embedding : numpy.ndarray
        The spectral embedding ``(N, clusters)``.
    means : numpy.ndarray
        The mean normalised heatmap of each cluster ``(clusters, H, W)``.
    """

    labels: np.ndarray
    eigenvalues: np.ndarray
    clusters: int
    embedding: np.ndarray
    means: np.ndarray


def spray(
    heatmaps: torch.Tensor,
    *,
    neighbors: int = 10,
    max_clusters: int = 8,
    clusters: int | None = None,
    seed: int = 0,
) -> SprayResult:
    """Spectral Relevance Analysis (Lapuschkin et al. 2019) of one class's heatmaps.

    Heatmaps are summed over channels and normalised to unit absolute mass; a symmetric k-nearest-neighbour graph
    (scikit-learn) gives the normalised Laplacian whose smallest eigenvalues form the spectrum; the cluster count
    is the position of the largest eigengap among the first ``max_clusters``, at least 2 but never more than the
    number of distinct normalised maps (1 for identical maps), unless ``clusters`` is given; k-means on the spectral
    embedding assigns the clusters.

    Parameters
    ----------
    heatmaps : torch.Tensor
        ``(N, C, H, W)`` or ``(N, H, W)`` relevance maps, finite; at least 4.
    neighbors : int, default 10
        k of the k-NN affinity graph (capped at N - 1).
    max_clusters : int, default 8
        Largest cluster count the eigengap may pick (at least 2).
    clusters : int, optional
        Fix the cluster count instead of reading it off the eigengap (at most the number of distinct maps).
    seed : int, default 0
        Seed of k-means.

    Returns
    -------
    SprayResult
    """
    h = check_tensor(heatmaps, "heatmaps", finite=True)
    if h.ndim not in (3, 4):
        raise InputError(f"heatmaps must be (N, C, H, W) or (N, H, W), got shape {tuple(h.shape)}", "pass maps")
    if len(h) < 4:
        raise InputError(f"heatmaps holds {len(h)} maps", "SpRAy needs at least 4 heatmaps")
    neighbors = check_int(neighbors, "neighbors", min_val=1)
    max_clusters = check_int(max_clusters, "max_clusters", min_val=2)
    if clusters is not None:
        clusters = check_int(clusters, "clusters", min_val=1, max_val=len(h))
    seed = check_seed(seed)
    h = h.detach().double()
    if h.ndim == 4:
        h = h.sum(1)
    n = len(h)
    flat = h.reshape(n, -1).numpy()
    flat = flat / np.maximum(np.abs(flat).sum(1, keepdims=True), 1e-12)
    distinct = len(np.unique(flat, axis=0))
    if clusters is not None and clusters > distinct:
        raise InputError(f"clusters={clusters} but heatmaps holds {distinct} distinct maps", "ask for fewer clusters")
    from scipy.sparse.csgraph import laplacian
    from sklearn.cluster import KMeans
    from sklearn.neighbors import kneighbors_graph

    k = min(neighbors, n - 1)
    a = kneighbors_graph(flat, k, mode="connectivity", include_self=False)
    a = 0.5 * (a + a.T)
    lap = laplacian(a.toarray(), normed=True)
    vals, vecs = np.linalg.eigh(lap)
    top = min(max_clusters + 1, n)
    spectrum = vals[:top]
    if clusters is None:
        gaps = np.diff(spectrum)
        clusters = min(max(int(np.argmax(gaps[:max_clusters])) + 1, 2), distinct)
    emb = vecs[:, :clusters]
    norm = np.linalg.norm(emb, axis=1, keepdims=True)
    emb = emb / np.maximum(norm, 1e-12)
    labels = KMeans(clusters, n_init=10, random_state=seed).fit_predict(emb)
    means = np.stack([flat[labels == c].mean(0) for c in range(clusters)]).reshape(clusters, *h.shape[1:])
    return SprayResult(labels=labels, eigenvalues=spectrum, clusters=clusters, embedding=emb, means=means)


# --------------------------------------------------------------------------------------------------- CAV / TCAV


def activations(model: nn.Module, layer: str, x: torch.Tensor, grad_target: int | None = None):
    """The flattened output of ``layer`` on ``x``, and with ``grad_target`` its gradient of that class's logit sum.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier.
    layer : str
        Name of a module in ``model.named_modules()``.
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    grad_target : int, optional
        The class whose summed logit is differentiated (no gradient when None).

    Returns
    -------
    (torch.Tensor, torch.Tensor or None)
        Activations ``(N, D)`` and their gradients ``(N, D)`` (None without ``grad_target``), detached. The gradient
        is taken with ``torch.autograd.grad``: no ``.grad`` is left on the model's parameters, and frozen models work.
    """
    mod = get_layer(model, layer)
    store = {}
    handle = mod.register_forward_hook(lambda _m, _i, out: store.__setitem__("a", out))
    try:
        with torch.set_grad_enabled(grad_target is not None):
            out = model(x.detach().clone().requires_grad_(grad_target is not None))
    finally:
        handle.remove()
    a = store.get("a")
    if not isinstance(a, torch.Tensor):
        raise InputError(f"layer {layer!r} gives {type(a).__name__}, not a tensor", "pick a layer with a tensor output")
    if grad_target is None:
        return a.flatten(1).detach(), None
    (g,) = torch.autograd.grad(out[:, grad_target].sum(), a)
    return a.flatten(1).detach(), g.flatten(1).detach()


@dataclass(frozen=True)
class ConceptVector:
    """A concept activation vector at one layer.

    Parameters
    ----------
    layer : str
        The module whose output was probed.
    vector : torch.Tensor
        The unit direction (flattened activation space): a finite float tensor ``(D,)`` of norm 1 (within 1e-3).
    accuracy : float
        The linear probe's held-out accuracy (concept vs random), in [0, 1].

    Raises
    ------
    InputError
        When a field is not of that kind (a NaN, zero or unnormalised vector included).
    """

    layer: str
    vector: torch.Tensor
    accuracy: float

    def __post_init__(self):
        if not isinstance(self.layer, str) or not self.layer:
            raise InputError(f"layer must be a module name (str), got {self.layer!r}", "e.g. 'net.1'")
        _check_direction(self.vector, "vector")
        check_probability(self.accuracy, "accuracy")


def _check_direction(v, name: str) -> None:
    """Refuse anything but a finite unit vector ``(D,)`` of floats (NaN, zero and unnormalised ones included)."""
    check_tensor(v, name, ndim=1, dtype="float")
    norm = float(v.detach().double().norm())
    if not abs(norm - 1.0) <= 1e-3:
        raise InputError(f"{name} must be a unit vector, got norm {norm:.4g}", "divide it by its norm")


def check_cav(cav, name: str = "cav") -> ConceptVector:
    """``cav`` when it is a :class:`ConceptVector` whose vector is (still) a finite unit vector, else an InputError.

    Parameters
    ----------
    cav : ConceptVector
    name : str, default "cav"

    Returns
    -------
    ConceptVector
    """
    if not isinstance(cav, ConceptVector):
        raise InputError(f"{name} must be a ConceptVector, got {type(cav).__name__}", "use concept_vector(...)")
    _check_direction(cav.vector, f"{name}.vector")  # a tensor can have been edited in place since construction
    return cav


def concept_vector(
    model: nn.Module, layer: str, concept_x: torch.Tensor, random_x: torch.Tensor, *, seed: int = 0
) -> ConceptVector:
    """Fit a CAV (Kim et al. 2018): the unit normal of a linear probe separating concept from random activations.

    The probe is scikit-learn's ``LogisticRegression`` on the activations of ``layer``, fitted on a random 70 %
    and scored on the rest.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode.
    layer : str
        Name of a module in ``model.named_modules()``.
    concept_x, random_x : torch.Tensor
        Images with the concept, and random images; at least 2 of each.
    seed : int, default 0

    Returns
    -------
    ConceptVector
    """
    check_eval(model)
    concept_x = check_images(concept_x, "concept_x")
    random_x = check_images(random_x, "random_x", like=concept_x)
    if len(concept_x) < 2 or len(random_x) < 2:
        raise InputError("concept_x and random_x need at least 2 images each (one class only)", "pass more")
    get_layer(model, layer)
    seed = check_seed(seed)
    n_outputs(model, concept_x, "concept_x")
    from sklearn.linear_model import LogisticRegression

    a = torch.cat([activations(model, layer, concept_x)[0], activations(model, layer, random_x)[0]]).double()
    y = np.r_[np.ones(len(concept_x)), np.zeros(len(random_x))]
    rng = np.random.default_rng(seed)
    perm = rng.permutation(len(y))
    cut = max(2, int(0.7 * len(y)))
    tr, te = perm[:cut], perm[cut:]
    if len(np.unique(y[tr])) < 2:
        tr = perm
    clf = LogisticRegression(max_iter=2000, C=1.0).fit(a.numpy()[tr], y[tr])
    acc = float(clf.score(a.numpy()[te], y[te])) if len(te) else float(clf.score(a.numpy(), y))
    v = torch.from_numpy(clf.coef_[0]).float()
    if not float(v.norm()) > 0:
        raise InputError(f"no direction at layer {layer!r} separates concept_x from random_x", "pick another layer")
    v = v / v.norm().clamp_min(1e-12)
    return ConceptVector(layer=layer, vector=v, accuracy=acc)


def tcav(
    model: nn.Module,
    layer: str,
    x: torch.Tensor,
    target,
    concept_x: torch.Tensor,
    random_x: torch.Tensor,
    *,
    runs: int = 10,
    seed: int = 0,
) -> dict:
    """TCAV score of a concept for class ``target``, with a significance test over random concept sets.

    The score is the fraction of ``x`` whose directional derivative of the target logit along the CAV is
    positive. ``runs`` CAVs are fitted against disjoint random halves of ``random_x``; as many random-vs-random
    CAVs give the null scores; a two-sided Welch t-test compares them (Kim et al. 2018, Sec. 3.3).

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode.
    layer : str
        Name of a module.
    x : torch.Tensor
        Inputs of class ``target``.
    target : int
        The class.
    concept_x, random_x : torch.Tensor
        Concept images and a pool of random images (at least 4).
    runs : int, default 10
        Repetitions (at least 2).
    seed : int, default 0

    Returns
    -------
    dict
        ``score`` (mean), ``scores``, ``null_scores``, ``p_value``, ``accuracy`` (mean probe accuracy).
    """
    check_eval(model)
    x = check_images(x)
    concept_x = check_images(concept_x, "concept_x", like=x)
    random_x = check_images(random_x, "random_x", like=x)
    if len(random_x) < 4:
        raise InputError(f"random_x holds {len(random_x)} images", "pass at least 4 random images")
    target = check_target(target, n_outputs(model, x))
    get_layer(model, layer)
    runs = check_int(runs, "runs", min_val=2)
    seed = check_seed(seed)
    from scipy.stats import ttest_ind

    _, grads = activations(model, layer, x, grad_target=target)
    rng = np.random.default_rng(seed)
    scores, null, accs = [], [], []
    half = len(random_x) // 2
    for r in range(runs):
        perm = torch.from_numpy(rng.permutation(len(random_x)))
        ra, rb = random_x[perm[:half]], random_x[perm[half : 2 * half]]
        c = concept_vector(model, layer, concept_x, ra, seed=seed + r)
        z = concept_vector(model, layer, rb, ra, seed=seed + r)
        scores.append(float((grads @ c.vector > 0).float().mean()))
        null.append(float((grads @ z.vector > 0).float().mean()))
        accs.append(c.accuracy)
    s, nl = np.array(scores), np.array(null)
    if np.ptp(np.r_[s, nl]) == 0:
        p = 1.0
    else:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # near-constant scores: the p-value is still usable
            p = float(ttest_ind(s, nl, equal_var=False).pvalue)
        p = 0.0 if np.isnan(p) and s.mean() != nl.mean() else (1.0 if np.isnan(p) else p)
    return {"score": float(s.mean()), "scores": s, "null_scores": nl, "p_value": p, "accuracy": float(np.mean(accs))}


def tcav_score(model: nn.Module, x: torch.Tensor, target, cav: ConceptVector) -> float:
    """TCAV score of one direction: the fraction of ``x`` whose ``target`` logit grows along ``cav.vector``.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode.
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    target : int
        The class.
    cav : ConceptVector
        The direction and the layer it lives in.

    Returns
    -------
    float
        In [0, 1]; a random direction scores 0.5 in expectation (``v`` and ``-v`` sum to 1).
    """
    check_eval(model)
    x = check_images(x)
    check_cav(cav)
    target = check_target(target, n_outputs(model, x))
    get_layer(model, cav.layer)
    _, grads = activations(model, cav.layer, x, grad_target=target)
    if grads.shape[1] != cav.vector.numel():
        raise InputError(f"cav has {cav.vector.numel()} dimensions, layer {cav.layer!r} {grads.shape[1]}", "refit it")
    return float((grads @ cav.vector.to(grads.dtype) > 0).float().mean())
