"""RED XAI: question a torch classifier with its explanations, name the shortcut, remove it, re-measure.

Biecek & Samek (ICML 2024, arXiv 2402.13914) argue that explanations should serve to *question* a model (find its
bugs and shortcuts, validate it), not only to justify its decisions, and that no single tool ships that loop. This
module is the loop, built from the cited RED literature on Captum (attributions) and scikit-learn (spectral
clustering, linear probes):

- :func:`attribute`: gradient x input, saliency, Integrated Gradients and LRP (epsilon, z+) through Captum;
- :func:`spray`: Spectral Relevance Analysis (Lapuschkin et al. 2019);
- :func:`concept_vector` and :func:`tcav`: CAVs and TCAV scores with a significance test (Kim et al. 2018);
- :func:`p_clarc`: projective Class Artifact Compensation (Anders et al. 2022);
- :func:`rrr`: Right for the Right Reasons (Ross et al. 2017), an input-gradient penalty under a mask;
- :func:`rr_clarc`: Right Reason ClArC (Pahde et al. 2023), a penalty on the gradient along the artifact CAV;
- :func:`a_clarc`: augmentative ClArC (Anders et al. 2022), fine-tuning with the artifact pasted;
- :func:`shortcut_reliance`, :func:`artifact_flips`, :func:`relevance_mass`: the measurements before and after
  the fix (a patch that points to one class, a per-image artifact such as a noise border, and the heatmaps).

LRP runs on Captum's rules, set fresh on every call and removed afterwards (Captum's rule objects keep state between
calls); ``nn.Flatten`` gets the epsilon rule (exact for a reshape). Other models get LRP only where Captum supports
their layers; elsewhere :func:`attribute` refuses with :class:`~icml24.errors.InputError`.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from ..extras import require
from ..validation import check_choice, check_float, check_int, check_seed, check_tensor

METHODS = ("input_x_gradient", "saliency", "integrated_gradients", "lrp_epsilon", "lrp_zplus")


class SmallNet(nn.Module):
    """A small ReLU MLP classifier on images ``(N, C, H, W)``, flattened in ``forward`` (LRP-friendly).

    Parameters
    ----------
    in_features : int
        ``C * H * W``.
    classes : int
        Number of classes (at least 2).
    hidden : int, default 64
        Units of each of the two hidden layers.
    seed : int, default 0
        Seed of the initial weights.
    """

    def __init__(self, in_features: int, classes: int, hidden: int = 64, seed: int = 0):
        super().__init__()
        in_features = check_int(in_features, "in_features", min_val=1)
        classes = check_int(classes, "classes", min_val=2)
        hidden = check_int(hidden, "hidden", min_val=1)
        seed = check_seed(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.net = nn.Sequential(
                nn.Linear(in_features, hidden),
                nn.ReLU(),
                nn.Linear(hidden, hidden),
                nn.ReLU(),
                nn.Linear(hidden, classes),
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return logits ``(N, classes)``.

        Parameters
        ----------
        x : torch.Tensor
            Images ``(N, ...)``.

        Returns
        -------
        torch.Tensor
            Logits.
        """
        return self.net(x.flatten(1))


# --------------------------------------------------------------------------------------------------- checks


def check_model(model, name: str = "model") -> nn.Module:
    if not isinstance(model, nn.Module):
        raise InputError(f"{name} must be a torch.nn.Module, got {type(model).__name__}", "pass the classifier")
    return model


def check_eval(model, name: str = "model") -> nn.Module:
    check_model(model, name)
    if model.training:
        raise InputError(f"{name} is in training mode", "call model.eval() before explaining or measuring it")
    return model


def check_images(x, name: str = "x") -> torch.Tensor:
    x = check_tensor(x, name, ndim=4, dtype="float")
    return x


def check_labels(y, n: int, name: str = "y") -> torch.Tensor:
    y = check_tensor(y, name, ndim=1, dtype="integer", allow_empty=True)
    if len(y) != n:
        raise InputError(f"{name} has {len(y)} labels for {n} images", "pass one label per image")
    if n and int(y.min()) < 0:
        raise InputError(f"{name} holds a negative label", "labels are 0..classes-1")
    return y


def check_mask(mask, x: torch.Tensor, name: str = "mask") -> torch.Tensor:
    mask = check_tensor(mask, name, dtype="bool")
    if tuple(mask.shape) not in (tuple(x.shape[1:]), tuple(x.shape)):
        raise InputError(
            f"{name} has shape {tuple(mask.shape)}, the inputs {tuple(x.shape)}",
            "pass a mask of one image's shape (C, H, W) or of the whole batch",
        )
    if not bool(mask.any()):
        raise InputError(f"{name} marks no pixel", "mark the region at least one pixel wide")
    return mask


def check_target(target, classes: int | None = None, name: str = "target") -> int:
    target = check_int(target, name, min_val=0)
    if classes is not None and target >= classes:
        raise InputError(f"{name}={target} but the model has {classes} outputs", f"pick a class in 0..{classes - 1}")
    return target


def n_outputs(model: nn.Module, x: torch.Tensor) -> int:
    with torch.no_grad():
        out = model(x[:1])
    if out.ndim != 2:
        raise InputError(f"model returns shape {tuple(out.shape)}", "the model must return logits (N, classes)")
    return int(out.shape[1])


def get_layer(model: nn.Module, layer) -> nn.Module:
    if not isinstance(layer, str):
        raise InputError(f"layer must be a module name (str), got {type(layer).__name__}", "e.g. 'net.1'")
    modules = dict(model.named_modules())
    if layer not in modules or layer == "":
        names = [n for n in modules if n][:8]
        raise InputError(f"layer {layer!r} is not a module of the model", f"pick one of {names}")
    return modules[layer]


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
        t = check_labels(target, len(x), "target")
        if int(t.max()) >= classes:
            raise InputError(f"target holds class {int(t.max())}, the model has {classes}", "pick valid classes")
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
        ruled = (*weighted_types, *SUPPORTED_LAYERS_WITH_RULES, nn.Flatten, _Projection)
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
        The cluster count, chosen at the largest eigengap.
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
    is the position of the largest eigengap among the first ``max_clusters`` (unless ``clusters`` is given), and
    k-means on the spectral embedding assigns the clusters.

    Parameters
    ----------
    heatmaps : torch.Tensor
        ``(N, C, H, W)`` or ``(N, H, W)`` relevance maps, finite; at least 4.
    neighbors : int, default 10
        k of the k-NN affinity graph (capped at N - 1).
    max_clusters : int, default 8
        Largest cluster count the eigengap may pick (at least 2).
    clusters : int, optional
        Fix the cluster count instead of reading it off the eigengap.
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
    from scipy.sparse.csgraph import laplacian
    from sklearn.cluster import KMeans
    from sklearn.neighbors import kneighbors_graph

    h = h.detach().double()
    if h.ndim == 4:
        h = h.sum(1)
    n = len(h)
    flat = h.reshape(n, -1).numpy()
    flat = flat / np.maximum(np.abs(flat).sum(1, keepdims=True), 1e-12)
    k = min(neighbors, n - 1)
    a = kneighbors_graph(flat, k, mode="connectivity", include_self=False)
    a = 0.5 * (a + a.T)
    lap = laplacian(a.toarray(), normed=True)
    vals, vecs = np.linalg.eigh(lap)
    top = min(max_clusters + 1, n)
    spectrum = vals[:top]
    if clusters is None:
        gaps = np.diff(spectrum)
        clusters = int(np.argmax(gaps[:max_clusters])) + 1
        clusters = max(clusters, 2)
    emb = vecs[:, :clusters]
    norm = np.linalg.norm(emb, axis=1, keepdims=True)
    emb = emb / np.maximum(norm, 1e-12)
    labels = KMeans(clusters, n_init=10, random_state=seed).fit_predict(emb)
    means = np.stack([flat[labels == c].mean(0) for c in range(clusters)]).reshape(clusters, *h.shape[1:])
    return SprayResult(labels=labels, eigenvalues=spectrum, clusters=clusters, embedding=emb, means=means)


# --------------------------------------------------------------------------------------------------- CAV / TCAV


def _activations(model: nn.Module, layer: str, x: torch.Tensor, grad_target: int | None = None):
    mod = get_layer(model, layer)
    store = {}

    def hook(_m, _i, out):
        if grad_target is not None:
            out.retain_grad()
        store["a"] = out

    handle = mod.register_forward_hook(hook)
    try:
        if grad_target is None:
            with torch.no_grad():
                model(x)
            return store["a"].flatten(1).detach(), None
        xx = x.detach().clone()
        out = model(xx)
        out[:, grad_target].sum().backward()
        return store["a"].flatten(1).detach(), store["a"].grad.flatten(1).detach()
    finally:
        handle.remove()


@dataclass(frozen=True)
class ConceptVector:
    """A concept activation vector at one layer.

    Parameters
    ----------
    layer : str
        The module whose output was probed.
    vector : torch.Tensor
        The unit direction (flattened activation space).
    accuracy : float
        The linear probe's held-out accuracy (concept vs random).
    """

    layer: str
    vector: torch.Tensor
    accuracy: float


def concept_vector(
    model: nn.Module, layer: str, concept_x: torch.Tensor, random_x: torch.Tensor, *, seed: int = 0
) -> ConceptVector:
    """Fit a CAV (Kim et al. 2018): the unit normal of a linear probe separating concept from random activations.

    The probe is scikit-learn's ``LogisticRegression`` on standardised activations of ``layer``, fitted on a
    random 70 % and scored on the rest.

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
    random_x = check_images(random_x, "random_x")
    if concept_x.shape[1:] != random_x.shape[1:]:
        raise InputError(f"random_x images {tuple(random_x.shape[1:])} differ from concept_x's", "same shape")
    if len(concept_x) < 2 or len(random_x) < 2:
        raise InputError("concept_x and random_x need at least 2 images each (one class only)", "pass more")
    get_layer(model, layer)
    seed = check_seed(seed)
    from sklearn.linear_model import LogisticRegression

    a = torch.cat([_activations(model, layer, concept_x)[0], _activations(model, layer, random_x)[0]]).double()
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
    concept_x = check_images(concept_x, "concept_x")
    random_x = check_images(random_x, "random_x")
    if len(random_x) < 4:
        raise InputError(f"random_x holds {len(random_x)} images", "pass at least 4 random images")
    target = check_target(target, n_outputs(model, x))
    get_layer(model, layer)
    runs = check_int(runs, "runs", min_val=2)
    seed = check_seed(seed)
    from scipy.stats import ttest_ind

    _, grads = _activations(model, layer, x, grad_target=target)
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
    if not isinstance(cav, ConceptVector):
        raise InputError(f"cav must be a ConceptVector, got {type(cav).__name__}", "use concept_vector(...)")
    target = check_target(target, n_outputs(model, x))
    get_layer(model, cav.layer)
    _, grads = _activations(model, cav.layer, x, grad_target=target)
    if grads.shape[1] != cav.vector.numel():
        raise InputError(f"cav has {cav.vector.numel()} dimensions, layer {cav.layer!r} {grads.shape[1]}", "refit it")
    return float((grads @ cav.vector.to(grads.dtype) > 0).float().mean())


# --------------------------------------------------------------------------------------------------- corrections


class _Projection(nn.Module):
    """h <- h - v v^T (h - z) on a layer's flattened output (P-ClArC)."""

    def __init__(self, v: torch.Tensor, z: torch.Tensor):
        super().__init__()
        self.register_buffer("v", v.clone())
        self.register_buffer("z", z.clone())

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        flat = h.flatten(1)
        out = flat - ((flat - self.z) @ self.v)[:, None] * self.v[None, :]
        return out.view_as(h)


def p_clarc(model: nn.Module, cav: ConceptVector, reference_x: torch.Tensor) -> nn.Module:
    """Projective ClArC (Anders et al. 2022): a training-free copy of ``model`` that removes the CAV direction.

    At ``cav.layer`` the output becomes ``h - v v^T (h - z)``, with ``v`` the unit CAV and ``z`` the mean
    activation of the artifact-free ``reference_x``: the component along ``v`` is set to the clean mean's. In the
    copy, the module at ``cav.layer`` is ``nn.Sequential(layer, projection)``.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier (left untouched; a corrected deep copy is returned).
    cav : ConceptVector
        The artifact's CAV, fitted at a module of ``model``.
    reference_x : torch.Tensor
        Artifact-free images.

    Returns
    -------
    torch.nn.Module
        The corrected copy, in eval mode.
    """
    check_eval(model)
    if not isinstance(cav, ConceptVector):
        raise InputError(f"cav must be a ConceptVector, got {type(cav).__name__}", "use concept_vector(...)")
    reference_x = check_images(reference_x, "reference_x")
    get_layer(model, cav.layer)
    z = _activations(model, cav.layer, reference_x)[0].mean(0)
    if z.numel() != cav.vector.numel():
        raise InputError(f"cav has {cav.vector.numel()} dimensions, layer {cav.layer!r} {z.numel()}", "refit it")
    fixed = copy.deepcopy(model)
    mod = get_layer(fixed, cav.layer)
    # the layer becomes Sequential(layer, projection): a module of its own in the forward pass (so LRP gives the
    # projection, an affine map, its epsilon rule), and hooks at cav.layer still see the projected output
    parent_name, _, child = cav.layer.rpartition(".")
    parent = get_layer(fixed, parent_name) if parent_name else fixed
    setattr(parent, child, nn.Sequential(mod, _Projection(cav.vector.to(z.dtype), z)))
    return fixed.eval()


def fit(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    epochs: int = 30,
    lr: float = 3e-3,
    batch: int = 64,
    weight_decay: float = 1e-4,
    seed: int = 0,
    mask: torch.Tensor | None = None,
    lam: float = 0.0,
) -> nn.Module:
    """Train a copy of ``model`` with Adam on cross-entropy, optionally with the RRR input-gradient penalty.

    With ``mask`` and ``lam > 0`` the loss is Ross et al.'s (2017, Eq. 1):
    ``CE + lam * sum_n || A_n * d/dx_n sum_k log p_k(x_n) ||^2`` (weight decay through Adam).

    Parameters
    ----------
    model : torch.nn.Module
        The starting model (left untouched).
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    y : torch.Tensor
        Integer labels ``(N,)``.
    epochs : int, default 30
    lr : float, default 3e-3
    batch : int, default 64
    weight_decay : float, default 1e-4
    seed : int, default 0
        Seed of the batch order.
    mask : torch.Tensor, optional
        Bool ``(C, H, W)`` or ``(N, C, H, W)``: the region whose input gradient must vanish.
    lam : float, default 0.0
        Weight of the penalty.

    Returns
    -------
    torch.nn.Module
        The trained copy, in eval mode.
    """
    check_model(model)
    x = check_images(x)
    y = check_labels(y, len(x))
    epochs = check_int(epochs, "epochs", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
    batch = check_int(batch, "batch", min_val=1)
    weight_decay = check_float(weight_decay, "weight_decay", min_val=0.0)
    seed = check_seed(seed)
    lam = check_float(lam, "lam", min_val=0.0)
    if mask is not None:
        mask = check_mask(mask, x)
    classes = n_outputs(model, x)
    if int(y.max()) >= classes:
        raise InputError(f"y holds class {int(y.max())}, the model has {classes} outputs", "check the labels")
    net = copy.deepcopy(model).train()
    opt = torch.optim.Adam(net.parameters(), lr=lr, weight_decay=weight_decay)
    gen = torch.Generator().manual_seed(seed)
    use_rrr = mask is not None and lam > 0
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), batch):
            idx = perm[i : i + batch]
            xb = x[idx].detach().clone().requires_grad_(use_rrr)
            logits = net(xb)
            loss = nn.functional.cross_entropy(logits, y[idx])
            if use_rrr:
                logp = torch.log_softmax(logits, 1).sum()
                (g,) = torch.autograd.grad(logp, xb, create_graph=True)
                m = mask if mask.shape == x.shape[1:] else mask[idx]
                loss = loss + lam * (g * m).pow(2).sum() / len(idx)
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net.eval()


def rrr(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    *,
    lam: float = 10.0,
    epochs: int = 20,
    lr: float = 3e-3,
    seed: int = 0,
) -> nn.Module:
    """Right for the Right Reasons (Ross et al. 2017): fine-tune a copy of ``model`` so its input gradient vanishes
    on ``mask``.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier (left untouched).
    x : torch.Tensor
        Training images ``(N, C, H, W)``.
    y : torch.Tensor
        Integer labels.
    mask : torch.Tensor
        Bool ``(C, H, W)`` or ``(N, C, H, W)``, True where the model must not look (the annotation A).
    lam : float, default 10.0
        Penalty weight (at least 0).
    epochs : int, default 20
    lr : float, default 3e-3
    seed : int, default 0

    Returns
    -------
    torch.nn.Module
        The corrected copy, in eval mode.
    """
    check_model(model)
    x = check_images(x)
    mask = check_mask(mask, x)
    return fit(model, x, y, epochs=epochs, lr=lr, seed=seed, mask=mask, lam=lam)


RR_CRITERIA = ("all_logits_random", "all_logits", "max_logit")


def rr_clarc(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    cav: ConceptVector,
    *,
    lam: float = 1.0,
    criterion: str = "all_logits_random",
    epochs: int = 10,
    lr: float = 1e-3,
    batch: int = 64,
    seed: int = 0,
) -> nn.Module:
    """Right Reason ClArC (Pahde et al. 2023, "Reveal to Revise"): fine-tune a copy so the output's gradient at the
    CAV's layer has no component along the artifact direction.

    Loss: ``CE + lam * mean_n (v . d g(x_n) / d h_l)^2`` with ``v`` the unit CAV, ``h_l`` the output of
    ``cav.layer`` and ``g`` the criterion of the authors' code (default there, and here, ``all_logits_random``: the
    logits summed with random signs drawn for every sample and step). The layers up to and including ``cav.layer``
    are frozen, so the activation space, and the CAV's meaning in it, stay as they were; the layers after it learn.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier (left untouched; a corrected deep copy is returned).
    x : torch.Tensor
        Training images ``(N, C, H, W)``.
    y : torch.Tensor
        Integer labels ``(N,)``.
    cav : ConceptVector
        The artifact's CAV at a module of ``model`` (:func:`concept_vector`).
    lam : float, default 1.0
        Penalty weight (at least 0).
    criterion : {"all_logits_random", "all_logits", "max_logit"}, default "all_logits_random"
        The output whose gradient is penalised.
    epochs : int, default 10
    lr : float, default 1e-3
    batch : int, default 64
    seed : int, default 0
        Seed of the batch order and of the random signs.

    Returns
    -------
    torch.nn.Module
        The corrected copy, in eval mode.
    """
    check_model(model)
    x = check_images(x)
    y = check_labels(y, len(x))
    if not isinstance(cav, ConceptVector):
        raise InputError(f"cav must be a ConceptVector, got {type(cav).__name__}", "use concept_vector(...)")
    get_layer(model, cav.layer)
    lam = check_float(lam, "lam", min_val=0.0)
    criterion = check_choice(criterion, "criterion", RR_CRITERIA)
    epochs = check_int(epochs, "epochs", min_val=0)
    lr = check_float(lr, "lr", min_val=0.0, include_boundaries="right")
    batch = check_int(batch, "batch", min_val=1)
    seed = check_seed(seed)
    net = copy.deepcopy(model).eval()
    classes = n_outputs(net, x)
    if int(y.max()) >= classes:
        raise InputError(f"y holds class {int(y.max())}, the model has {classes} outputs", "check the labels")
    dims = _activations(net, cav.layer, x[:1])[0].shape[1]
    if dims != cav.vector.numel():
        raise InputError(f"cav has {cav.vector.numel()} dimensions, layer {cav.layer!r} {dims}", "refit it")
    order = [name for name, _ in net.named_modules() if name]
    upto = order.index(cav.layer)
    frozen = [
        m for name, m in net.named_modules() if name and (order.index(name) <= upto or name.startswith(cav.layer + "."))
    ]
    trainable = {id(p) for p in net.parameters()} - {id(p) for m in frozen for p in m.parameters(recurse=False)}
    params = [p for p in net.parameters() if id(p) in trainable]
    if not params:
        raise InputError(f"cav.layer {cav.layer!r} has no trainable layer after it", "fit the CAV at an earlier layer")
    v = cav.vector.detach().float()
    store = {}
    handle = get_layer(net, cav.layer).register_forward_hook(lambda _m, _i, out: store.__setitem__("h", out))
    opt = torch.optim.Adam(params, lr=lr)
    gen = torch.Generator().manual_seed(seed)
    net.train()
    try:
        for _ in range(epochs):
            perm = torch.randperm(len(x), generator=gen)
            for i in range(0, len(x), batch):
                idx = perm[i : i + batch]
                xb = x[idx].detach().clone().requires_grad_(lam > 0)
                logits = net(xb)
                loss = nn.functional.cross_entropy(logits, y[idx])
                if lam > 0:
                    if criterion == "all_logits_random":
                        signs = torch.sign(0.5 - torch.rand(logits.shape, generator=gen))
                        out = (logits * signs).sum()
                    elif criterion == "all_logits":
                        out = logits.sum()
                    else:
                        out = logits.max(1).values.sum()
                    (g,) = torch.autograd.grad(out, store["h"], create_graph=True)
                    loss = loss + lam * (g.flatten(1) @ v).pow(2).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    finally:
        handle.remove()
    for p in net.parameters():
        p.grad = None
    return net.eval()


def a_clarc(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    mask: torch.Tensor,
    target,
    *,
    value: float = 1.0,
    epochs: int = 10,
    lr: float = 1e-3,
    seed: int = 0,
) -> nn.Module:
    """Augmentative ClArC (Anders et al. 2022): fine-tune a copy on data where the artifact is pasted onto the
    other classes' images, so it no longer predicts ``target``.

    Parameters
    ----------
    model : torch.nn.Module
        The classifier (left untouched).
    x : torch.Tensor
        Training images ``(N, C, H, W)``.
    y : torch.Tensor
        Integer labels.
    mask : torch.Tensor
        Bool ``(C, H, W)``: the artifact's pixels.
    target : int
        The class the artifact points to.
    value : float, default 1.0
        The artifact's pixel value.
    epochs : int, default 10
    lr : float, default 1e-3
    seed : int, default 0

    Returns
    -------
    torch.nn.Module
        The corrected copy, in eval mode.
    """
    check_model(model)
    x = check_images(x)
    y = check_labels(y, len(x))
    mask = check_mask(mask, x)
    if mask.shape != x.shape[1:]:
        raise InputError("mask must have one image's shape (C, H, W)", "pass the artifact's pixel mask")
    target = check_target(target, n_outputs(model, x))
    value = check_float(value, "value")
    seed = check_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    others = (y != target).nonzero().flatten()
    pick = others[torch.randperm(len(others), generator=gen)[: len(others) // 2]]
    xa = x[pick].clone()
    xa[:, mask] = value
    return fit(model, torch.cat([x, xa]), torch.cat([y, y[pick]]), epochs=epochs, lr=lr, seed=seed)


# --------------------------------------------------------------------------------------------------- measurements


def predict(model: nn.Module, x: torch.Tensor, *, batch: int = 1024) -> torch.Tensor:
    """Predicted classes of ``model`` on ``x`` (eval mode required).

    Parameters
    ----------
    model : torch.nn.Module
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    batch : int, default 1024

    Returns
    -------
    torch.Tensor
        int64 ``(N,)``.
    """
    check_eval(model)
    x = check_images(x)
    batch = check_int(batch, "batch", min_val=1)
    with torch.no_grad():
        return torch.cat([model(x[i : i + batch]).argmax(1) for i in range(0, len(x), batch)])


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fraction of ``x`` classified as ``y``.

    Parameters
    ----------
    model : torch.nn.Module
    x : torch.Tensor
    y : torch.Tensor

    Returns
    -------
    float
    """
    x = check_images(x)
    y = check_labels(y, len(x))
    return float((predict(model, x) == y).float().mean())


def shortcut_reliance(model: nn.Module, x_patched: torch.Tensor, y: torch.Tensor, target) -> float:
    """Fraction of non-``target`` images carrying the artifact that ``model`` predicts as ``target``.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode.
    x_patched : torch.Tensor
        Images with the artifact pasted (the artifact-swapped test set).
    y : torch.Tensor
        Their true labels.
    target : int
        The class the artifact points to.

    Returns
    -------
    float
    """
    x_patched = check_images(x_patched, "x_patched")
    y = check_labels(y, len(x_patched))
    target = check_target(target, n_outputs(check_eval(model), x_patched))
    keep = y != target
    if not bool(keep.any()):
        raise InputError("y holds the target class only", "pass images of other classes too")
    return float((predict(model, x_patched[keep]) == target).float().mean())


def swap_pairs(n: int, seed: int = 0) -> torch.Tensor:
    """A random pairing of ``n`` images in one cycle: image ``i`` takes the artifact of image ``out[i]``, never its own.

    Parameters
    ----------
    n : int
        Number of images (at least 2).
    seed : int, default 0

    Returns
    -------
    torch.Tensor
        int64 ``(n,)``.
    """
    n = check_int(n, "n", min_val=2)
    order = torch.randperm(n, generator=torch.Generator().manual_seed(check_seed(seed)))
    partner = torch.empty_like(order)
    partner[order] = torch.roll(order, -1)
    return partner


def artifact_flips(model: nn.Module, x: torch.Tensor, mask: torch.Tensor, *, seed: int = 0) -> float:
    """Reliance on a per-image artifact: the share of images whose predicted class changes when their masked
    pixels are swapped with another image's (:func:`swap_pairs`), e.g. a noise border not tied to any class.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode.
    x : torch.Tensor
        Images ``(N, C, H, W)``, at least 2.
    mask : torch.Tensor
        Bool ``(C, H, W)``: the artifact's pixels.
    seed : int, default 0
        Seed of the pairing.

    Returns
    -------
    float
        0 for a model that never reads the masked pixels.
    """
    check_eval(model)
    x = check_images(x)
    mask = check_mask(mask, x)
    seed = check_seed(seed)
    if tuple(mask.shape) != tuple(x.shape[1:]):
        raise InputError(f"mask has shape {tuple(mask.shape)}, one image {tuple(x.shape[1:])}", "pass (C, H, W)")
    if len(x) < 2:
        raise InputError(f"x holds {len(x)} image", "pass at least 2 to swap between")
    swapped = x.clone()
    swapped[:, mask] = x[swap_pairs(len(x), seed)][:, mask]
    return float((predict(model, x) != predict(model, swapped)).float().mean())


def relevance_mass(heatmaps: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Relevance mass accuracy (Arras et al. 2022): the share of each map's positive relevance inside ``mask``.

    Parameters
    ----------
    heatmaps : torch.Tensor
        ``(N, C, H, W)``, finite.
    mask : torch.Tensor
        Bool ``(C, H, W)`` or ``(N, C, H, W)``.

    Returns
    -------
    torch.Tensor
        ``(N,)`` in [0, 1] (0 where a map has no positive relevance).
    """
    h = check_images(heatmaps, "heatmaps")
    mask = check_mask(mask, h)
    pos = h.clamp_min(0)
    inside = (pos * mask).flatten(1).sum(1)
    total = pos.flatten(1).sum(1)
    return torch.where(total > 0, inside / total.clamp_min(1e-30), torch.zeros_like(total))


# --------------------------------------------------------------------------------------------------- faithfulness


def pixel_flipping(
    model: nn.Module,
    x: torch.Tensor,
    target,
    heatmaps: torch.Tensor,
    *,
    steps: int = 20,
    fraction: float = 0.5,
    fill: float = 0.0,
    seed: int = 0,
) -> dict:
    """Pixel-flipping faithfulness (Bach et al. 2015; Samek et al. 2017): remove pixels most relevant first.

    For each image the pixels (all channels of a location together) are ranked by the heatmap's relevance summed
    over channels; ``steps`` times, the next ``fraction / steps`` of the locations are set to ``fill`` and the
    model's softmax probability of ``target`` is recorded. The area over the perturbation curve,
    ``AOPC = 1/(L+1) sum_{k=0..L} (p_0 - p_k)`` (Samek et al. 2017, Eq. 12), is larger for a more faithful
    heatmap. The same curve for a uniformly random order (seeded) is the control every heatmap must beat.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode (left untouched).
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    target : int
        The class whose probability is tracked.
    heatmaps : torch.Tensor
        Relevance maps of ``x`` for ``target``, same shape.
    steps : int, default 20
        Perturbation steps ``L``.
    fraction : float, default 0.5
        Share of the pixel locations removed by the last step, in (0, 1].
    fill : float, default 0.0
        The value a removed pixel takes.
    seed : int, default 0
        Seed of the random order.

    Returns
    -------
    dict
        ``curve`` and ``random_curve`` (numpy ``(L + 1,)``, mean probability after each step), ``aopc`` and
        ``aopc_random``.
    """
    check_eval(model)
    x = check_images(x)
    h = check_images(heatmaps, "heatmaps")
    if h.shape != x.shape:
        raise InputError(f"heatmaps have shape {tuple(h.shape)}, x {tuple(x.shape)}", "pass one map per image")
    target = check_target(target, n_outputs(model, x))
    steps = check_int(steps, "steps", min_val=1)
    fraction = check_float(fraction, "fraction", min_val=0.0, max_val=1.0, include_boundaries="right")
    fill = check_float(fill, "fill")
    seed = check_seed(seed)
    n, c = x.shape[:2]
    locs = x.shape[2] * x.shape[3]
    score = h.sum(1).flatten(1)
    orders = {
        "curve": torch.argsort(score, dim=1, descending=True, stable=True),
        "random_curve": torch.argsort(torch.rand(n, locs, generator=torch.Generator().manual_seed(seed)), dim=1),
    }
    out: dict = {}
    for key, order in orders.items():
        xs = x.detach().clone().flatten(2)
        probs = []
        done = 0
        for k in range(steps + 1):
            upto = int(round(fraction * locs * k / steps))
            if upto > done:
                idx = order[:, done:upto].unsqueeze(1).expand(n, c, upto - done)
                xs.scatter_(2, idx, fill)
                done = upto
            with torch.no_grad():
                p = torch.softmax(model(xs.view_as(x)), dim=1)[:, target]
            probs.append(float(p.mean()))
        curve = np.array(probs)
        out[key] = curve
        out["aopc" if key == "curve" else "aopc_random"] = float((curve[0] - curve).mean())
    return out


# --------------------------------------------------------------------------------------------------- Rashomon


def rashomon(
    models,
    x: torch.Tensor,
    y: torch.Tensor,
    x_patched: torch.Tensor,
    y_patched: torch.Tensor,
    target,
    x_explain: torch.Tensor,
    method: str = "input_x_gradient",
) -> dict:
    """Explore a Rashomon set: near-equal models, how far their shortcut reliance and their explanations differ.

    Parameters
    ----------
    models : sequence of torch.nn.Module
        At least two classifiers in eval mode (e.g. :func:`fit` from several seeds and widths).
    x, y : torch.Tensor
        Held-out images and labels: the accuracy that makes the models "near-equal".
    x_patched, y_patched : torch.Tensor
        The artifact-swapped images and their true labels (for :func:`shortcut_reliance`).
    target : int
        The class the artifact points to, and the class explained.
    x_explain : torch.Tensor
        Images whose heatmaps are compared across models.
    method : str, default "input_x_gradient"
        An attribution method of :func:`attribute`.

    Returns
    -------
    dict
        ``accuracy`` and ``reliance`` (numpy, one per model), ``accuracy_spread`` and ``reliance_spread``
        (max - min), ``rank_correlation`` (mean Spearman correlation of the heatmaps over all pairs of models) and
        ``rank_correlation_min`` (of the least similar pair).
    """
    models = list(models) if isinstance(models, (list, tuple)) else None
    if models is None or len(models) < 2:
        raise InputError("models must be a list of at least two classifiers", "train several seeds or widths")
    for i, m in enumerate(models):
        check_eval(m, f"models[{i}]")
    x_explain = check_images(x_explain, "x_explain")
    method = check_choice(method, "method", METHODS)
    acc = np.array([accuracy(m, x, y) for m in models])
    rel = np.array([shortcut_reliance(m, x_patched, y_patched, target) for m in models])
    maps = [attribute(m, x_explain, target, method) for m in models]
    pairs = [
        float(rank_correlation(maps[i], maps[j]).mean()) for i in range(len(maps)) for j in range(i + 1, len(maps))
    ]
    return {
        "accuracy": acc,
        "reliance": rel,
        "accuracy_spread": float(acc.max() - acc.min()),
        "reliance_spread": float(rel.max() - rel.min()),
        "rank_correlation": float(np.mean(pairs)),
        "rank_correlation_min": float(np.min(pairs)),
    }


# --------------------------------------------------------------------------------------------------- sanity check


def rank_correlation(a: torch.Tensor, b: torch.Tensor, absolute: bool = False) -> np.ndarray:
    """Spearman rank correlation of each pair of maps (rows), 0 where a map is constant (internal helper).

    Parameters
    ----------
    a, b : torch.Tensor
        ``(N, ...)`` maps of equal shape.
    absolute : bool, default False
        Rank absolute values.

    Returns
    -------
    numpy.ndarray
        ``(N,)`` correlations.
    """
    from scipy.stats import rankdata

    fa, fb = a.flatten(1).double().numpy(), b.flatten(1).double().numpy()
    if absolute:
        fa, fb = np.abs(fa), np.abs(fb)
    ra, rb = rankdata(fa, axis=1), rankdata(fb, axis=1)
    ra = ra - ra.mean(1, keepdims=True)
    rb = rb - rb.mean(1, keepdims=True)
    den = np.sqrt((ra**2).sum(1) * (rb**2).sum(1))
    return np.where(den > 0, (ra * rb).sum(1) / np.maximum(den, 1e-300), 0.0)


def randomization_check(
    model: nn.Module,
    x: torch.Tensor,
    target,
    method: str = "input_x_gradient",
    *,
    absolute: bool = False,
    seed: int = 0,
) -> dict:
    """Model-parameter randomisation sanity check (Adebayo et al. 2018, cascading, top layer first).

    A copy of ``model`` has its parametrised layers re-initialised one after another from the output back to the
    input; after each step the heatmaps of the copy are compared with those of ``model`` by the Spearman rank
    correlation of each image's map. An explanation that depends on what the model learned decorrelates; one
    that mostly reproduces the input (an edge detector) does not. Written here because Quantus, which ships this
    metric, is absent from this environment (an optional dependency of +690 MB, kept out).

    Parameters
    ----------
    model : torch.nn.Module
        A classifier in eval mode (left untouched).
    x : torch.Tensor
        Images ``(N, C, H, W)``.
    target : int
        The class whose logit is explained.
    method : str, default "input_x_gradient"
        An attribution method of :func:`attribute`.
    absolute : bool, default False
        Correlate the absolute relevance (Adebayo et al. report both); the default keeps the sign.
    seed : int, default 0
        Seed of the re-initialisation.

    Returns
    -------
    dict
        ``layers`` (cascade order), ``correlations`` (mean rank correlation after each step), ``final`` (after
        every layer is randomised) and ``per_image`` (the final per-image correlations).
    """
    check_eval(model)
    x = check_images(x)
    method = check_choice(method, "method", METHODS)
    if not isinstance(absolute, bool):
        raise InputError(f"absolute must be a bool, got {type(absolute).__name__}", "pass True or False")
    seed = check_seed(seed)
    target = check_target(target, n_outputs(model, x))
    layers = [
        name
        for name, m in model.named_modules()
        if name and len(list(m.children())) == 0 and any(True for _ in m.parameters(recurse=False))
    ]
    if not layers:
        raise InputError("model has no parametrised layer to randomise", "pass a trained classifier")
    base = attribute(model, x, target, method)
    rand = copy.deepcopy(model).eval()
    mods = dict(rand.named_modules())
    means, last = [], None
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        for name in reversed(layers):
            m = mods[name]
            with torch.no_grad():
                if hasattr(m, "reset_parameters"):
                    m.reset_parameters()
                else:
                    for p in m.parameters(recurse=False):
                        p.normal_(0.0, float(p.std()) if p.numel() > 1 else 0.01)
            last = rank_correlation(base, attribute(rand, x, target, method), absolute)
            means.append(float(last.mean()))
    return {
        "layers": list(reversed(layers)),
        "correlations": np.array(means),
        "final": means[-1],
        "per_image": last,
    }


__all__ = [
    "METHODS",
    "SmallNet",
    "attribute",
    "pixel_flipping",
    "rashomon",
    "SprayResult",
    "spray",
    "ConceptVector",
    "concept_vector",
    "tcav",
    "tcav_score",
    "p_clarc",
    "fit",
    "rrr",
    "rr_clarc",
    "a_clarc",
    "predict",
    "accuracy",
    "shortcut_reliance",
    "artifact_flips",
    "relevance_mass",
    "randomization_check",
]
