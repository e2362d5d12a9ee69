"""Random-feature (RF) and neural-tangent (NTK) feature maps, their exact finite-width kernels and their
infinite-width kernels from the Hermite coefficients of the activation (Bombari & Mondelli, ICML 2024, Sec. 2).

* RF: ``phi(z) = act(V z) / sqrt(k)``, ``V_ij ~ N(0, 1/d)`` (official code: ``k = 100 000``).
* NTK (gradient of a two-layer net with respect to its first layer): ``phi(z) = z kron act'(W z) / sqrt(d k)``,
  ``W_ij ~ N(0, 1/d)`` (official code: ``k = 100``); ``kron`` in the official order (``z_i act'_j`` at
  ``i k + j``).

The scalings ``1/sqrt(k)`` and ``1/sqrt(d k)`` are ours (the official code leaves features unscaled); they
make ``phi(a)^T phi(b)`` converge as ``k`` grows and change no prediction of the min-norm interpolator, no
leave-one-out error and no feature alignment (all are invariant to a global scale of the features).

Activations (the official ``utils.py``; ``h_l`` the normalised probabilists' Hermite polynomials,
``h_2 = (t^2-1)/sqrt 2``, ``h_3 = (t^3-3t)/sqrt 6``, ``h_4 = (t^4-6t^2+3)/sqrt 24``):

====== ==================== ===========================
name   RF ``act``           NTK ``act'`` (derivative)
====== ==================== ===========================
phi2   ``h1 + h2``          ``h0 + h1``
phi4   ``h1 + h4``          ``h0 + h3``
relu   ``max(t, 0)``        ``1[t > 0]``
====== ==================== ===========================
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.polynomial import hermite_e as He
from numpy.polynomial import polynomial as P

from ..errors import InputError
from ..validation import check_array, check_choice, check_int, check_rng

__all__ = [
    "ACTIVATIONS",
    "FEATURE_MAPS",
    "hermite",
    "activation",
    "hermite_coefficients",
    "activation_energy",
    "as_array",
    "FeatureMap",
    "RandomFeatures",
    "NTKFeatures",
    "feature_map",
]

ACTIVATIONS = ("phi2", "phi4", "relu")
FEATURE_MAPS = ("rf", "ntk")

# Activations in the normalised Hermite basis: {degree: coefficient}. ReLU is not a polynomial.
_HERMITE = {
    ("rf", "phi2"): {1: 1.0, 2: 1.0},
    ("rf", "phi4"): {1: 1.0, 4: 1.0},
    ("ntk", "phi2"): {0: 1.0, 1: 1.0},
    ("ntk", "phi4"): {0: 1.0, 3: 1.0},
}


def hermite(degree: int, t: Any) -> np.ndarray:
    """The normalised probabilists' Hermite polynomial ``h_l(t) = He_l(t) / sqrt(l!)``: ``E[h_l h_m] = delta_lm``
    for ``t ~ N(0, 1)``.

    Parameters
    ----------
    degree : int
        ``l >= 0``.
    t : array-like
        Where to evaluate.

    Returns
    -------
    numpy.ndarray
    """
    degree = check_int(degree, "degree", min_val=0, max_val=170)  # 171! overflows a float
    t = as_array(t, "t", ndim=None)
    c = np.zeros(degree + 1)
    c[degree] = 1.0 / math.sqrt(math.factorial(degree))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        out = He.hermeval(t, c)
    return finite(out, "t")


def _poly(features: str, act: str) -> np.ndarray | None:
    """Monomial coefficients (lowest degree first) of the function applied to ``V z``, or None for ReLU."""
    spec = _HERMITE.get((features, act))
    if spec is None:
        return None
    c = np.zeros(max(spec) + 1)
    for degree, weight in spec.items():
        c[degree] += weight / math.sqrt(math.factorial(degree))
    return He.herme2poly(c)


def activation(features: str, act: str):
    """The scalar function a feature map applies: ``act`` for RF, ``act'`` for NTK (the official code's).

    Parameters
    ----------
    features : {"rf", "ntk"}
    act : {"phi2", "phi4", "relu"}

    Returns
    -------
    callable
        ``numpy.ndarray -> numpy.ndarray``, elementwise.
    """
    features = check_choice(features, "features", FEATURE_MAPS)
    act = check_choice(act, "act", ACTIVATIONS)
    poly = _poly(features, act)
    if poly is not None:
        return lambda t: P.polyval(t, poly)
    if features == "rf":
        return lambda t: np.maximum(t, 0.0)
    return lambda t: (t > 0).astype(np.float64)


def hermite_coefficients(features: str, act: str, max_degree: int = 8) -> np.ndarray:
    """Hermite coefficients ``mu_l = E[f(t) h_l(t)]``, ``t ~ N(0, 1)``, of the function the map applies
    (``mu_l`` of ``act`` for RF, ``mu'_l`` of ``act'`` for NTK, in the paper's notation).

    Exact: polynomial activations by Gauss-Hermite quadrature (exact for their degree), ReLU and its
    derivative in closed form (``E[relu h_l] = phi(0) He_{l-2}(0) / sqrt(l!)`` for ``l >= 2``).

    Parameters
    ----------
    features : {"rf", "ntk"}
    act : {"phi2", "phi4", "relu"}
    max_degree : int, default 8

    Returns
    -------
    numpy.ndarray
        ``(max_degree + 1,)``: ``mu_0 .. mu_max_degree``.
    """
    features = check_choice(features, "features", FEATURE_MAPS)
    act = check_choice(act, "act", ACTIVATIONS)
    max_degree = check_int(max_degree, "max_degree", min_val=0)
    poly = _poly(features, act)
    mu = np.zeros(max_degree + 1)
    if poly is not None:
        top = min(len(poly) - 1, max_degree)  # exactly zero beyond the polynomial's degree
        nodes, weights = He.hermegauss(len(poly) + 2)
        weights = weights / math.sqrt(2 * math.pi)
        f = P.polyval(nodes, poly)
        for degree in range(top + 1):
            mu[degree] = float(np.sum(weights * f * hermite(degree, nodes)))
        return mu
    pdf0 = 1.0 / math.sqrt(2 * math.pi)

    def he0_over_sqrt_fact(k: int, degree: int) -> float:
        """``He_k(0) / sqrt(degree!)`` in log space (``|He_{2m}(0)| = (2m - 1)!!``), finite at any degree."""
        if k % 2:
            return 0.0
        m = k // 2
        log_dfact = math.lgamma(k + 1) - m * math.log(2.0) - math.lgamma(m + 1)
        return (-1.0) ** m * math.exp(log_dfact - 0.5 * math.lgamma(degree + 1))

    for degree in range(max_degree + 1):
        if features == "rf":  # relu
            if degree <= 1:
                mu[degree] = pdf0 if degree == 0 else 0.5
            else:
                mu[degree] = pdf0 * he0_over_sqrt_fact(degree - 2, degree)
        else:  # step
            mu[degree] = 0.5 if degree == 0 else pdf0 * he0_over_sqrt_fact(degree - 1, degree)
    return mu


def activation_energy(features: str, act: str) -> float:
    """``E[f(t)^2] = sum_l mu_l^2``, ``t ~ N(0, 1)``, exactly: the full Hermite energy of the function the map
    applies (1/2 for ReLU and for its derivative, the step; the sum of the squared coefficients for phi2/phi4).

    Parameters
    ----------
    features : {"rf", "ntk"}
    act : {"phi2", "phi4", "relu"}

    Returns
    -------
    float
    """
    features = check_choice(features, "features", FEATURE_MAPS)
    act = check_choice(act, "act", ACTIVATIONS)
    if act == "relu":
        return 0.5
    return float(sum(w * w for w in _HERMITE[(features, act)].values()))


def as_array(value: Any, name: str, *, ndim: int | None = 2) -> np.ndarray:
    """A float64 numpy copy of a numpy array or a torch tensor, checked finite and non-empty.

    Parameters
    ----------
    value : numpy.ndarray or torch.Tensor or array-like
    name : str
        The argument's name, for the message.
    ndim : int, optional, default 2

    Returns
    -------
    numpy.ndarray
    """
    if type(value).__module__.startswith("torch"):
        value = value.detach().cpu().double().numpy()
    return check_array(value, name, ndim=ndim).astype(np.float64, copy=False)


def finite(out: np.ndarray, name: str) -> np.ndarray:
    """``out`` when it is finite; else an InputError saying that ``name`` is too large for float64."""
    if not np.isfinite(out).all():
        raise InputError(f"{name} is too large: the result overflows float64", "rescale the inputs")
    return out


def _gaussian_moment(j: int) -> float:
    """``E[t^j]`` for ``t ~ N(0, 1)``."""
    return 0.0 if j % 2 else float(np.prod(np.arange(j - 1, 0, -2))) if j else 1.0


def _poly_kernel(poly: np.ndarray, sa: np.ndarray, sb: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``E[f(u) f(w)]`` for ``(u, w)`` centred Gaussian with variances ``sa^2, sb^2`` and covariance ``c``, f a
    polynomial: ``sum_l c^l / l! E[f^(l)(u)] E[f^(l)(w)]`` (Mehler's formula, exact for polynomials)."""
    out = np.zeros_like(c)
    deriv = poly.copy()
    for degree in range(len(poly)):
        # m_l(s) = E[f^(l)(s t)] = sum_j coef_j s^j E[t^j]
        moments = np.array([deriv[j] * _gaussian_moment(j) for j in range(len(deriv))])
        ma, mb = P.polyval(sa, moments), P.polyval(sb, moments)
        out = out + c**degree / math.factorial(degree) * np.outer(ma, mb)
        deriv = P.polyder(deriv) if len(deriv) > 1 else np.zeros(1)
    return out


class FeatureMap:
    """A feature map ``phi`` with its kernel ``kappa(a, b) = phi(a)^T phi(b)``: the common shape of
    :class:`RandomFeatures` and :class:`NTKFeatures`.

    Parameters
    ----------
    d : int
        Input dimension.
    width : int or None
        ``k``, the number of random neurons; None for the infinite-width kernel (no explicit features).
    act : {"phi2", "phi4", "relu"}, default "phi2"
    seed : int or numpy.random.Generator, default 0
        Seeds the random weights (only).
    """

    kind = ""

    def __init__(self, d: int, width: int | None, act: str = "phi2", seed: Any = 0) -> None:
        self.d = check_int(d, "d", min_val=1)
        self.width = check_int(width, "width", min_val=1, allow_none=True)
        self.act = check_choice(act, "act", ACTIVATIONS)
        rng = check_rng(seed)
        if self.kind not in FEATURE_MAPS:
            raise InputError("FeatureMap is the common base of the maps", "build RandomFeatures or NTKFeatures")
        self._f = activation(self.kind, self.act)
        self._poly = _poly(self.kind, self.act)
        self._w = None if self.width is None else rng.standard_normal((self.width, self.d)) / math.sqrt(self.d)

    def __repr__(self) -> str:
        w = "inf" if self.width is None else self.width
        return f"{type(self).__name__}(d={self.d}, width={w}, act={self.act!r})"

    @property
    def weights(self) -> np.ndarray | None:
        """A copy of the random first-layer weights ``(k, d)`` (``nn.Linear``'s orientation), None at infinite width.

        Returns
        -------
        numpy.ndarray or None
        """
        return None if self._w is None else self._w.copy()

    @property
    def num_features(self) -> float:
        """The feature dimension ``p`` (``inf`` at infinite width).

        Returns
        -------
        float
        """
        raise NotImplementedError

    def check_inputs(self, z: Any, name: str = "z") -> np.ndarray:
        """``z`` as a float64 ``(n, d)`` array, checked finite, non-empty and of this map's ``d`` columns.

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
        name : str, default "z"
            The argument's name, for the message.

        Returns
        -------
        numpy.ndarray
        """
        return self._check(z, name)

    def _check(self, z: Any, name: str) -> np.ndarray:
        z = as_array(z, name)
        if z.shape[1] != self.d:
            raise InputError(f"{name} must have {self.d} columns (the map's d), got {z.shape[1]}")
        if not np.isfinite(np.einsum("ij,ij->i", z, z)).all():  # the kernels' norms and inner products need it
            raise InputError(f"{name} is too large: its squared norms overflow float64", "rescale the inputs")
        return z

    def features(self, z: Any) -> np.ndarray:
        """The explicit features ``phi(z)`` row by row (finite width only).

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(n, d)`` inputs.

        Returns
        -------
        numpy.ndarray
            ``(n, p)``.
        """
        raise NotImplementedError

    def kernel(self, a: Any, b: Any = None) -> np.ndarray:
        """The kernel matrix ``kappa(a_i, b_j) = phi(a_i)^T phi(b_j)``, exact for this map (finite or infinite width),
        computed without forming ``p``-dimensional features for NTK.

        Parameters
        ----------
        a : numpy.ndarray or torch.Tensor
            ``(n, d)``.
        b : numpy.ndarray or torch.Tensor, optional
            ``(m, d)``; ``a`` when None.

        Returns
        -------
        numpy.ndarray
            ``(n, m)``.
        """
        a = self._check(a, "a")
        return self._kernel(a, a if b is None else self._check(b, "b"), "a or b")

    def _kernel(self, a: np.ndarray, b: np.ndarray, name: str, *, infinite: bool = False) -> np.ndarray:
        """:meth:`kernel` (or :meth:`infinite_kernel`) of inputs already checked by :meth:`check_inputs`; an
        overflow is an InputError naming ``name``."""
        return finite(self._infinite(a, b) if infinite or self._w is None else self._finite(a, b), name)

    def infinite_kernel(self, a: Any, b: Any = None) -> np.ndarray:
        """The infinite-width kernel ``E_w[...]`` of this map, whatever its width: the limit of :meth:`kernel`.

        Polynomial activations: Mehler's formula with the exact norms (``sum_l mu_l^2 rho^l`` for inputs with
        ``||z||^2 = d``); ReLU: the arc-cosine kernels of degree 1 (RF) and 0 (NTK).

        Parameters
        ----------
        a : numpy.ndarray or torch.Tensor
            ``(n, d)``.
        b : numpy.ndarray or torch.Tensor, optional
            ``(m, d)``; ``a`` when None.

        Returns
        -------
        numpy.ndarray
            ``(n, m)``.
        """
        a = self._check(a, "a")
        return self._kernel(a, a if b is None else self._check(b, "b"), "a or b", infinite=True)

    def _scalar_kernel(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``E_w[f(w^T a) f(w^T b)]``, ``w ~ N(0, I/d)``."""
        sa = np.sqrt(np.sum(a * a, axis=1) / self.d)
        sb = np.sqrt(np.sum(b * b, axis=1) / self.d)
        c = a @ b.T / self.d
        if self._poly is not None:
            return _poly_kernel(self._poly, sa, sb, c)
        prod = np.outer(sa, sb)
        cos = np.divide(c, prod, out=np.zeros_like(c), where=prod > 0)
        theta = np.arccos(np.clip(cos, -1.0, 1.0))
        if self.kind == "rf":  # arc-cosine kernel of degree 1
            return prod / (2 * math.pi) * (np.sin(theta) + (math.pi - theta) * np.cos(theta))
        return (math.pi - theta) / (2 * math.pi)  # degree 0


class RandomFeatures(FeatureMap):
    """Random features ``phi(z) = act(V z) / sqrt(k)``, ``V_ij ~ N(0, 1/d)``: the paper's RF model.

    Parameters
    ----------
    d : int
        Input dimension.
    width : int or None
        ``k`` (official code: 100 000); None: the infinite-width kernel ``E_v[act(v^T a) act(v^T b)]``.
    act : {"phi2", "phi4", "relu"}, default "phi2"
    seed : int or numpy.random.Generator, default 0
    """

    kind = "rf"

    @property
    def num_features(self) -> float:
        """``k`` (``inf`` at infinite width).

        Returns
        -------
        float
        """
        return math.inf if self.width is None else float(self.width)

    def features(self, z: Any) -> np.ndarray:
        """``act(z V^T) / sqrt(k)``.

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(n, d)``.

        Returns
        -------
        numpy.ndarray
            ``(n, k)``.
        """
        if self._w is None:
            raise InputError("an infinite-width map has no explicit features", "give width=k")
        z = self._check(z, "z")
        return finite(self._f(z @ self._w.T) / math.sqrt(self.width), "z")

    def _finite(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        fa = self._f(a @ self._w.T)
        fb = fa if b is a else self._f(b @ self._w.T)
        return fa @ fb.T / self.width

    def _infinite(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self._scalar_kernel(a, b)


class NTKFeatures(FeatureMap):
    """NTK features ``phi(z) = z kron act'(W z) / sqrt(d k)``, ``W_ij ~ N(0, 1/d)``: the paper's NTK model,
    kernel ``(a^T b / d) act'(W a)^T act'(W b) / k``.

    Parameters
    ----------
    d : int
        Input dimension.
    width : int or None
        ``k`` (official code: 100); the feature dimension is ``d k``. None: infinite width,
        ``(a^T b / d) E_w[act'(w^T a) act'(w^T b)]``.
    act : {"phi2", "phi4", "relu"}, default "phi2"
        Named by the network's activation; the map applies its derivative (see the module table).
    seed : int or numpy.random.Generator, default 0
    """

    kind = "ntk"

    @property
    def num_features(self) -> float:
        """``d k`` (``inf`` at infinite width).

        Returns
        -------
        float
        """
        return math.inf if self.width is None else float(self.d * self.width)

    def features(self, z: Any) -> np.ndarray:
        """``z kron act'(W z) / sqrt(d k)``, row by row (memory ``n d k``: for small problems).

        Parameters
        ----------
        z : numpy.ndarray or torch.Tensor
            ``(n, d)``.

        Returns
        -------
        numpy.ndarray
            ``(n, d k)``.
        """
        if self._w is None:
            raise InputError("an infinite-width map has no explicit features", "give width=k")
        z = self._check(z, "z")
        g = self._f(z @ self._w.T)
        return finite((z[:, :, None] * g[:, None, :]).reshape(z.shape[0], -1) / math.sqrt(self.d * self.width), "z")

    def _finite(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        ga = self._f(a @ self._w.T)
        gb = ga if b is a else self._f(b @ self._w.T)
        return (a @ b.T / self.d) * (ga @ gb.T / self.width)

    def _infinite(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return (a @ b.T / self.d) * self._scalar_kernel(a, b)


def feature_map(features: str, d: int, width: int | None, act: str = "phi2", seed: Any = 0) -> FeatureMap:
    """Build an RF or NTK map by name.

    Parameters
    ----------
    features : {"rf", "ntk"}
    d : int
    width : int or None
        ``k``; None for the infinite-width kernel.
    act : {"phi2", "phi4", "relu"}, default "phi2"
    seed : int or numpy.random.Generator, default 0

    Returns
    -------
    FeatureMap
    """
    features = check_choice(features, "features", FEATURE_MAPS)
    cls = RandomFeatures if features == "rf" else NTKFeatures
    return cls(d, width, act, seed)
