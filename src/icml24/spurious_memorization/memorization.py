"""Min-norm interpolation on a feature map, solved through the kernel, and the paper's quantities of
memorization: spurious and test accuracy, leave-one-out error, feature alignment, and its predicted limit.

Bombari & Mondelli (ICML 2024, arXiv 2305.12100). With ``theta* = Phi^+ G`` the min-norm interpolator and
``theta*_{-i}`` the one fitted without sample ``i``,

    f(z_i^s) - f_{-i}(z_i^s) = F(z_i^s, z_i) * (g_i - f_{-i}(z_i)),
    F(z^s, z) = phi(z^s)^T P_i phi(z) / ||P_i phi(z)||^2,

``P_i`` the projector onto the orthogonal complement of the other samples' features: the change of the
prediction on the spurious query is the feature alignment times the leave-one-out error (the stability
term). Through the kernel ``K = Phi Phi^T`` every term is exact and costs one ``N x N`` factorisation:

* ``f(z) = kappa(z, Z) K^{-1} G`` (no ``k x N`` pseudo-inverse);
* ``g_i - f_{-i}(z_i) = (K^{-1} G)_i / (K^{-1})_ii`` (the classical leave-one-out identity);
* ``F(z_i^s, z_i) = (kappa(z_i^s, Z) K^{-1})_i`` (block inversion: ``||P_i phi(z_i)||^2 = 1 / (K^{-1})_ii`` and
  ``phi(z^s)^T P_i phi(z_i) = (kappa(z^s, Z) K^{-1})_i / (K^{-1})_ii``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.linalg

from ..errors import InputError
from ..validation import check_choice, check_float, check_int
from .features import ACTIVATIONS, FEATURE_MAPS, FeatureMap, activation_energy, as_array, hermite_coefficients

__all__ = [
    "MinNormInterpolator",
    "check_mask",
    "check_labels",
    "check_model",
    "check_feature_map",
    "predictions",
    "spurious_queries",
    "accuracy",
    "spurious_accuracy",
    "test_accuracy",
    "loo_errors",
    "feature_alignment",
    "predicted_gamma",
    "REGIMES",
]

REGIMES = ("few", "many")  # N << d and N >> d


def check_mask(mask: Any, d: int, name: str = "mask") -> np.ndarray:
    """A boolean mask of length ``d`` that marks the spurious coordinates (True) and leaves some core ones.

    Parameters
    ----------
    mask : array-like of bool or torch.Tensor
    d : int
        The input dimension.
    name : str, default "mask"

    Returns
    -------
    numpy.ndarray
        ``(d,)`` booleans.
    """
    if type(mask).__module__.startswith("torch"):
        mask = mask.detach().cpu().numpy()
    arr = np.asarray(mask)
    if arr.dtype != bool:
        raise InputError(f"{name} must hold booleans (True on spurious coordinates), got dtype {arr.dtype}")
    if arr.shape != (d,):
        raise InputError(f"{name} must have shape ({d},), got {arr.shape}")
    if not arr.any():
        raise InputError(f"{name} selects no spurious coordinate", "set True where the spurious feature lives")
    if arr.all():
        raise InputError(f"{name} selects no core coordinate", "leave False where the core feature lives")
    return arr.copy()


def check_model(model: Any, name: str = "model") -> Any:
    """An object with a callable ``predict`` (a fitted interpolator, ridge or network).

    Parameters
    ----------
    model : object
    name : str, default "model"

    Returns
    -------
    object
        ``model`` itself.
    """
    if not callable(getattr(model, "predict", None)):
        raise InputError(f"{name} must have a predict method (a fitted model), got {type(model).__name__}")
    return model


def predictions(model: Any, z: Any, name: str) -> np.ndarray:
    """``model.predict(z)``, one finite value per row of ``z``; a failing ``predict`` is the caller's bad model.

    Parameters
    ----------
    model : object with ``predict``
    z : numpy.ndarray or torch.Tensor
        ``(n, d)`` queries.
    name : str
        The argument's name, for the message.

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64.
    """
    check_model(model)
    z = as_array(z, name)
    try:
        f = model.predict(z)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's model failed on these queries
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        raise InputError(f"model.predict({name}) failed: {type(exc).__name__}: {first}") from None
    f = as_array(f, f"model.predict({name})", ndim=1)
    if f.shape[0] != z.shape[0]:
        raise InputError(f"model.predict({name}) must give one value per row of {name}, got shape {f.shape}")
    return f


def check_feature_map(feature_map: Any, name: str = "feature_map") -> FeatureMap:
    """A :class:`FeatureMap` (``RandomFeatures`` or ``NTKFeatures``).

    Parameters
    ----------
    feature_map : FeatureMap
    name : str, default "feature_map"

    Returns
    -------
    FeatureMap
    """
    if not isinstance(feature_map, FeatureMap):
        raise InputError(f"{name} must be a FeatureMap, got {type(feature_map).__name__}")
    return feature_map


def check_labels(g: Any, n: int, name: str = "g") -> np.ndarray:
    """Labels in {-1, +1}, one per sample.

    Parameters
    ----------
    g : array-like or torch.Tensor
    n : int
        The number of samples.
    name : str, default "g"

    Returns
    -------
    numpy.ndarray
        ``(n,)`` float64.
    """
    g = as_array(g, name, ndim=1)
    if g.shape != (n,):
        raise InputError(f"{name} must have shape ({n},), one label per sample, got {g.shape}")
    if not np.isin(g, (-1.0, 1.0)).all():
        raise InputError(f"{name} must hold -1 and +1 only")
    return g


class MinNormInterpolator:
    """The min-norm interpolator ``theta* = Phi^+ G`` of a feature map, solved through its ``N x N`` kernel.

    Parameters
    ----------
    feature_map : FeatureMap
        :class:`~icml24.spurious_memorization.RandomFeatures` or
        :class:`~icml24.spurious_memorization.NTKFeatures` (finite or infinite width).

    Notes
    -----
    ``fit`` refuses ``N`` larger than the feature dimension (no interpolator is unique then) and a singular
    kernel matrix (repeated samples). Refitting replaces the previous fit.
    """

    def __init__(self, feature_map: FeatureMap) -> None:
        self.feature_map = check_feature_map(feature_map)
        self._z = None

    def fit(self, z: Any, g: Any) -> "MinNormInterpolator":
        """Interpolate ``g`` on ``z``.

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(N, d)`` training inputs, ``N <= p``.
        g : array-like or torch.Tensor
            ``(N,)`` real targets (labels in {-1, +1} for the accuracies).

        Returns
        -------
        MinNormInterpolator
            ``self``.
        """
        z = self.feature_map.check_inputs(z, "z")
        n = z.shape[0]
        if n > self.feature_map.num_features:
            raise InputError(
                f"z has N = {n} samples but the map has only {int(self.feature_map.num_features)} features",
                "an interpolator needs N <= p: raise the width",
            )
        g = as_array(g, "g", ndim=1)
        if g.shape != (n,):
            raise InputError(f"g must have shape ({n},), got {g.shape}")
        k = self.feature_map._kernel(z, z, "z")
        try:
            chol = scipy.linalg.cho_factor(k, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            raise InputError(
                "the kernel matrix of z is singular (repeated samples, or N above the features' rank)",
                "remove duplicates or raise the width",
            ) from None
        kinv = scipy.linalg.cho_solve(chol, np.eye(n), check_finite=False)
        self._z, self._g, self._k, self._kinv = z, g, k, kinv
        self._coef = kinv @ g
        return self

    def _fitted(self) -> None:
        if self._z is None:
            raise InputError("the interpolator is not fitted", "call fit(z, g) first")

    @property
    def kernel_matrix(self) -> np.ndarray:
        """A copy of the training kernel matrix ``K = Phi Phi^T``.

        Returns
        -------
        numpy.ndarray
        """
        self._fitted()
        return self._k.copy()

    def predict(self, z: Any) -> np.ndarray:
        """``f(z) = phi(z)^T theta* = kappa(z, Z) K^{-1} G``.

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(n, d)``.

        Returns
        -------
        numpy.ndarray
            ``(n,)``.
        """
        self._fitted()
        z = self.feature_map.check_inputs(z, "z")
        return self.feature_map._kernel(z, self._z, "z") @ self._coef

    def loo_errors(self) -> np.ndarray:
        """Leave-one-out errors ``g_i - f_{-i}(z_i) = (K^{-1} G)_i / (K^{-1})_ii`` (the stability term).

        Returns
        -------
        numpy.ndarray
            ``(N,)``.
        """
        self._fitted()
        return self._coef / np.diag(self._kinv)

    def loo_predictions(self, z: Any) -> np.ndarray:
        """``f_{-i}(z_i')`` for every training index ``i``: the prediction on row ``i`` of ``z`` by the
        interpolator fitted without sample ``i``, from the one factorisation (``f - F (g_i - f_{-i}(z_i))``).

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(N, d)``: one query per training sample.

        Returns
        -------
        numpy.ndarray
            ``(N,)``.
        """
        self._fitted()
        z = self.feature_map.check_inputs(z, "z")
        if z.shape[0] != self._z.shape[0]:
            raise InputError(f"z must have one row per training sample ({self._z.shape[0]}), got {z.shape[0]}")
        c = self.feature_map._kernel(z, self._z, "z") @ self._kinv
        return c @ self._g - np.diag(c) * self.loo_errors()

    def feature_alignment(self, z_spurious: Any) -> np.ndarray:
        """``F(z_i^s, z_i) = phi(z_i^s)^T P_i phi(z_i) / ||P_i phi(z_i)||^2 = (kappa(z_i^s, Z) K^{-1})_i``.

        Parameters
        ----------
        z_spurious : numpy.ndarray or torch.Tensor
            ``(N, d)``: row ``i`` is the spurious query of training sample ``i``.

        Returns
        -------
        numpy.ndarray
            ``(N,)``.
        """
        self._fitted()
        zs = self.feature_map.check_inputs(z_spurious, "z_spurious")
        if zs.shape[0] != self._z.shape[0]:
            raise InputError(
                f"z_spurious must have one row per training sample ({self._z.shape[0]}), got {zs.shape[0]}"
            )
        c = self.feature_map._kernel(zs, self._z, "z_spurious")
        return np.einsum("ij,ji->i", c, self._kinv)


def spurious_queries(z: Any, mask: Any, core: Any = None) -> np.ndarray:
    """Spurious queries ``z^s = [x~, y]``: the spurious part kept, the core part blanked (0) or replaced.

    Parameters
    ----------
    z : numpy.ndarray or torch.Tensor
        ``(N, d)`` training inputs.
    mask : array-like of bool
        ``(d,)``, True on spurious coordinates.
    core : array-like, optional
        ``(N, d_x)`` replacement core parts (fresh samples, as the official synthetic code); zeros when None
        (the official image code).

    Returns
    -------
    numpy.ndarray
        ``(N, d)``.
    """
    z = as_array(z, "z")
    mask = check_mask(mask, z.shape[1])
    out = z.copy()
    if core is None:
        out[:, ~mask] = 0.0
    else:
        core = as_array(core, "core")
        want = (z.shape[0], int((~mask).sum()))
        if core.shape != want:
            raise InputError(f"core must have shape {want}, got {core.shape}")
        out[:, ~mask] = core
    return out


def accuracy(f: Any, g: Any) -> float:
    """Fraction of ``sign(f) = g`` (a zero prediction counts as wrong, as ``f g > 0`` in the official code).

    Parameters
    ----------
    f : array-like
        Predictions ``(n,)``.
    g : array-like
        Labels ``(n,)`` in {-1, +1}.

    Returns
    -------
    float
    """
    f = as_array(f, "f", ndim=1)
    g = check_labels(g, f.shape[0])
    return float(np.mean(f * g > 0))


def spurious_accuracy(model: MinNormInterpolator, z_spurious: Any, g: Any) -> float:
    """The memorization metric: fraction of training samples whose spurious query is classified as the sample
    (``sign(f(z_i^s)) = g_i``); 0.5 means no memorization.

    Parameters
    ----------
    model : MinNormInterpolator or any object with ``predict``
        Fitted on the training samples.
    z_spurious : numpy.ndarray or torch.Tensor
        ``(N, d)`` spurious queries, in the order of the training samples.
    g : array-like
        ``(N,)`` training labels.

    Returns
    -------
    float
    """
    return accuracy(predictions(model, z_spurious, "z_spurious"), g)


def test_accuracy(model: MinNormInterpolator, z_test: Any, g_test: Any) -> float:
    """Accuracy on fresh samples.

    Parameters
    ----------
    model : MinNormInterpolator or any object with ``predict``
    z_test : numpy.ndarray or torch.Tensor
        ``(M, d)``.
    g_test : array-like
        ``(M,)`` labels in {-1, +1}.

    Returns
    -------
    float
    """
    return accuracy(predictions(model, z_test, "z_test"), g_test)


test_accuracy.__test__ = False  # not a pytest test


def loo_errors(feature_map: FeatureMap, z: Any, g: Any) -> np.ndarray:
    """Leave-one-out errors ``g_i - f_{-i}(z_i)`` of the min-norm interpolator, for every ``i``.

    Parameters
    ----------
    feature_map : FeatureMap
    z : numpy.ndarray or torch.Tensor
        ``(N, d)``.
    g : array-like
        ``(N,)``.

    Returns
    -------
    numpy.ndarray
        ``(N,)``.
    """
    return MinNormInterpolator(feature_map).fit(z, g).loo_errors()


def feature_alignment(feature_map: FeatureMap, z: Any, z_spurious: Any) -> np.ndarray:
    """The feature alignment ``F(z_i^s, z_i)`` of every training sample, exactly, through the kernel.

    Parameters
    ----------
    feature_map : FeatureMap
    z : numpy.ndarray or torch.Tensor
        ``(N, d)`` training inputs.
    z_spurious : numpy.ndarray or torch.Tensor
        ``(N, d)`` their spurious queries.

    Returns
    -------
    numpy.ndarray
        ``(N,)``.
    """
    z = as_array(z, "z")
    return MinNormInterpolator(feature_map).fit(z, np.zeros(z.shape[0])).feature_alignment(z_spurious)


def predicted_gamma(
    features: str, act: str, alpha: float, regime: str = "few", max_degree: int = 40, n_train: int | None = None
) -> float:
    """The limit ``gamma`` of the feature alignment for inputs with ``||z||^2 = d``, ``<z^s, z> = alpha d``.

    The paper's feature-alignment theorems for RF and NTK (Bombari & Mondelli 2024) state that ``F``
    concentrates to a constant set by ``alpha`` and the Hermite coefficients; the formulas here are the
    kernel limits of ``F`` in two regimes:

    * ``"few"`` (``N << d``; only the constant component is spanned by the other samples):
      ``gamma_RF = sum_{l>=1} mu_l^2 alpha^l / sum_{l>=1} mu_l^2`` and
      ``gamma_NTK = alpha sum_{l>=0} mu'_l^2 alpha^l / sum_{l>=0} mu'_l^2``;
    * ``"many"`` (``d << N << d^2``; the degree-1 RF / degree-0 NTK component is spanned too): the same sums
      from ``l >= 2`` (RF) and ``l >= 1`` (NTK).

    Both are the Hermite-series limits for ``N -> infinity`` inside the regime. With ``n_train`` given, the
    finite-``N`` value of an RF map whose activation has a constant component (``mu_0 != 0``, e.g. ReLU) is
    returned instead: the other ``N - 1`` samples span the constant direction only partly, and in the idealised
    kernel ``c 1 1^T + R I`` (``c = mu_0^2``, ``R`` the energy of the kept degrees, ``S = R gamma``)
    ``F_N = (S + c R / (R + (N - 1) c)) / (R + c R / (R + (N - 1) c))``, which tends to ``gamma`` as ``1/N``
    (our derivation; it changes nothing for NTK maps or activations with ``mu_0 = 0``).

    Parameters
    ----------
    features : {"rf", "ntk"}
    act : {"phi2", "phi4", "relu"}
    alpha : float
        The spurious fraction, in (0, 1).
    regime : {"few", "many"}, default "few"
    max_degree : int, default 40
        Truncation of the numerator's series (exact for phi2 and phi4; for ReLU its tail is below
        ``alpha^(max_degree + 1) / 2``); the denominator is the exact energy ``E[f^2]``.
    n_train : int, optional
        ``N`` (at least 2) for the finite-``N`` value described above; None for the limit.

    Returns
    -------
    float
    """
    features = check_choice(features, "features", FEATURE_MAPS)
    act = check_choice(act, "act", ACTIVATIONS)
    alpha = check_float(alpha, "alpha", min_val=0.0, max_val=1.0, include_boundaries="neither")
    regime = check_choice(regime, "regime", REGIMES)
    max_degree = check_int(max_degree, "max_degree", min_val=4)
    mu2 = hermite_coefficients(features, act, max_degree) ** 2
    degrees = np.arange(len(mu2))
    start = (1 if features == "rf" else 0) + (1 if regime == "many" else 0)
    keep = degrees >= start
    # the denominator is the exact energy E[f^2] less the excluded low degrees: the step's series converges
    # slowly (its coefficients^2 fall as l^(-3/2)), so a truncated sum would leave out ~4% of it at l = 40;
    # the numerator's tail is below alpha^(max_degree + 1) E[f^2]
    energy = activation_energy(features, act) - float(np.sum(mu2[~keep]))
    n_train = check_int(n_train, "n_train", min_val=2, allow_none=True)
    ratio = float(np.sum(mu2[keep] * alpha ** degrees[keep]) / energy)
    if n_train is not None and features == "rf" and mu2[0] > 0:
        c, spanned = float(mu2[0]), energy * ratio
        left = c * energy / (energy + (n_train - 1) * c)  # the constant component the others do not span
        ratio = (spanned + left) / (energy + left)
    return ratio * (alpha if features == "ntk" else 1.0)
