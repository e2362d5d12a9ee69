"""Finite groups acting exactly on square images: C4 (rotations by 90 degrees) and D4 (rotations and flips).

Every element acts on the last two axes of an image as a pixel permutation (``numpy.rot90`` after an optional
flip), so the representation rho_X(g) is orthogonal, as the theorem of Gerken & Kessel (ICML 2024, Sec. 3)
requires. Outputs transform by rho_Y(g): the identity for invariant targets (classification), the same
pixel permutation for image-valued equivariant targets, or the 2x2 signed permutation of :meth:`Group.vector_rep`
for plane vectors (e.g. the intensity-weighted centre of an image), the equivariant-output case.
:func:`augment` builds the fully augmented training set of the theorem (every orbit element exactly once)
or, for contrast, one sampled element per example.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_array, check_choice, check_int, check_rng, check_tensor

GROUPS = ("c4", "d4")
OUTPUTS = ("invariant", "image", "vector")
MODES = ("orbit", "sampled")

__all__ = [
    "GROUPS",
    "OUTPUTS",
    "MODES",
    "Group",
    "group",
    "augment",
    "is_orbit_closed",
    "check_images",
    "check_vectors",
]


def check_images(x: Any, name: str = "x", *, finite: bool = True):
    """Check that ``x`` is a torch tensor or numpy array of square images ``(..., H, H)`` with H >= 1.

    Parameters
    ----------
    x : torch.Tensor or numpy.ndarray
        At least two dimensions; the last two are the (equal) image sides.
    name : str, default "x"
        The argument's name in error messages.
    finite : bool, default True
        Refuse NaN and infinite entries.

    Returns
    -------
    torch.Tensor or numpy.ndarray
        ``x`` itself (tensors) or a checked copy (arrays and lists).
    """
    x = check_values(x, name, finite=finite, numpy_dtype="float")
    if x.ndim < 2:
        raise InputError(f"{name} must be images with shape (..., H, W), got shape {tuple(x.shape)}")
    if x.shape[-1] != x.shape[-2]:
        raise InputError(
            f"{name} must be square images for rotations, got (H, W) = {tuple(x.shape[-2:])}",
            "crop or pad the images to a square",
        )
    return x


def check_values(y: Any, name: str = "y", *, finite: bool = True, numpy_dtype: str | None = None):
    """A tensor (returned as it is) or an array (a checked copy) of real numbers: booleans, complex numbers and
    strings are refused.

    Parameters
    ----------
    y : torch.Tensor or numpy.ndarray or array-like
    name : str, default "y"
    finite : bool, default True
        Refuse NaN and infinite entries.
    numpy_dtype : {"float"} or None, default None
        ``"float"`` converts integer arrays to float64; None keeps their dtype.

    Returns
    -------
    torch.Tensor or numpy.ndarray
    """
    if isinstance(y, torch.Tensor):
        y = check_tensor(y, name, dtype="any", finite=finite)
        kind = "c" if y.is_complex() else "b" if y.dtype == torch.bool else "f"
    else:
        y = check_array(y, name, dtype=numpy_dtype, finite=finite)
        kind = y.dtype.kind
    if kind not in "fiu":
        raise InputError(f"{name} must hold real numbers, got dtype {y.dtype}")
    return y


def check_vectors(y: Any, name: str = "y") -> None:
    """Check that ``y`` has plane vectors on its last axis (``(..., 2)``), the shape rho_Y acts on for
    ``output="vector"``.

    Parameters
    ----------
    y : torch.Tensor or numpy.ndarray
        Already checked for type and finiteness.
    name : str, default "y"
        The argument's name in error messages.
    """
    if y.ndim < 1 or y.shape[-1] != 2:
        raise InputError(
            f"{name} must hold plane vectors (..., 2) for output='vector', got shape {tuple(y.shape)}",
            "use output='invariant' for class scores",
        )


class Group:
    """A finite group of symmetries of the square pixel grid, acting by exact pixel permutations.

    Element ``g`` (``0 <= g < order``) is ``r^k s^f`` with ``k = g % 4`` quarter turns (``numpy.rot90`` on the
    last two axes) applied after ``f = g // 4`` flips of the last axis (D4 only). Element 0 is the identity.

    Parameters
    ----------
    name : {"c4", "d4"}
        C4: the four rotations; D4: rotations and reflections (order 8).
    """

    def __init__(self, name: str = "c4") -> None:
        if not isinstance(name, str) or name != name.strip().lower():
            raise InputError(f"group must be one of {GROUPS} (lower case), got {name!r}")
        self.name = check_choice(name, "group", GROUPS)
        self.order = 4 if self.name == "c4" else 8
        probe = np.arange(9).reshape(3, 3)
        perms = [self._act_np(probe, g).ravel() for g in range(self.order)]
        index = {tuple(p): g for g, p in enumerate(perms)}
        # table[a, b] = element a * b, i.e. acting with b first, then a
        self.table = np.array(
            [
                [index[tuple(self._act_np(self._act_np(probe, b), a).ravel())] for b in range(self.order)]
                for a in range(self.order)
            ]
        )
        self.inverses = np.array([int(np.flatnonzero(self.table[g] == 0)[0]) for g in range(self.order)])

    def __repr__(self) -> str:
        return f"Group({self.name!r}, order={self.order})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Group) and other.name == self.name

    def __hash__(self) -> int:
        return hash(("Group", self.name))

    @staticmethod
    def _act_np(x, g: int):
        k, f = g % 4, g // 4
        if f:
            x = x[..., ::-1]
        return np.rot90(x, k, axes=(-2, -1))

    def _element(self, g: Any) -> int:
        return check_int(g, "g", min_val=0, max_val=self.order - 1)

    def act(self, x, g: int):
        """Apply element ``g`` to square images (a pixel permutation of the last two axes).

        Parameters
        ----------
        x : torch.Tensor or numpy.ndarray
            Images ``(..., H, H)``.
        g : int
            The element, ``0 <= g < order``.

        Returns
        -------
        torch.Tensor or numpy.ndarray
            A new tensor or array of the same shape and type.
        """
        g = self._element(g)
        x = check_images(x, finite=False)
        return self._apply(x, g)

    def _apply(self, x, g: int):
        k, f = g % 4, g // 4
        if isinstance(x, torch.Tensor):
            if f:
                x = torch.flip(x, dims=(-1,))
            return torch.rot90(x, k, dims=(-2, -1)).clone()
        return np.ascontiguousarray(self._act_np(x, g))

    def orbit(self, x):
        """All images ``g x`` for ``g = 0..order-1``, stacked on a new leading axis.

        Parameters
        ----------
        x : torch.Tensor or numpy.ndarray
            Images ``(..., H, H)``.

        Returns
        -------
        torch.Tensor or numpy.ndarray
            Shape ``(order, ..., H, H)``; entry 0 is ``x`` itself.
        """
        x = check_images(x, finite=False)
        parts = [self._apply(x, g) for g in range(self.order)]
        return torch.stack(parts) if isinstance(x, torch.Tensor) else np.stack(parts)

    def permutation(self, g: int, size: int, channels: int = 1) -> np.ndarray:
        """The index permutation ``p`` of element ``g`` on flattened ``(channels, size, size)`` images.

        ``(g x).ravel() == x.ravel()[p]``: rho_X(g) as a permutation matrix.

        Parameters
        ----------
        g : int
            The element.
        size : int
            The image side H.
        channels : int, default 1
            Channels in front of the two image axes.

        Returns
        -------
        numpy.ndarray
            ``int64`` of length ``channels * size * size``.
        """
        g = self._element(g)
        size = check_int(size, "size", min_val=1)
        channels = check_int(channels, "channels", min_val=1)
        idx = np.arange(channels * size * size).reshape(channels, size, size)
        return self._apply(idx, g).ravel().astype(np.int64)

    def vector_rep(self, g: int) -> np.ndarray:
        """rho_Y(g) on plane vectors ``(row, column)`` measured from the image centre: a 2x2 signed permutation.

        It is the action on pixel positions: if element ``g`` moves the pixel at offset ``v`` from the centre
        to offset ``w``, then ``w = R v``; so the first moment ``sum_p x_p v_p`` of an image maps to ``R`` times
        itself (``moment(g x) = R moment(x)``).

        Parameters
        ----------
        g : int
            The element.

        Returns
        -------
        numpy.ndarray
            ``(2, 2)`` float64, orthogonal.
        """
        g = self._element(g)
        return self._vector_rep(g)

    def _vector_rep(self, g: int) -> np.ndarray:
        cols = []
        for r, c in ((2, 1), (1, 2)):  # offsets (1, 0) and (0, 1) from the centre of a 3x3 grid
            probe = np.zeros((3, 3))
            probe[r, c] = 1.0
            rr, cc = np.argwhere(self._act_np(probe, g))[0]
            cols.append((rr - 1.0, cc - 1.0))
        return np.array(cols, dtype=np.float64).T

    def act_output(self, y, g: int, output: str = "invariant"):
        """Apply rho_Y(g) to outputs: the identity (``"invariant"``), the pixel action (``"image"``) or the
        2x2 matrix of :meth:`vector_rep` on the last axis (``"vector"``).

        Parameters
        ----------
        y : torch.Tensor or numpy.ndarray
            Outputs; for ``"image"``, square images ``(..., H, H)``; for ``"vector"``, ``(..., 2)``.
        g : int
            The element.
        output : {"invariant", "image", "vector"}, default "invariant"
            How the targets transform.

        Returns
        -------
        torch.Tensor or numpy.ndarray
            A new tensor or array.
        """
        output = check_choice(output, "output", OUTPUTS)
        g = self._element(g)
        if output == "invariant":
            y = check_values(y, finite=False)
            return y.clone() if isinstance(y, torch.Tensor) else y
        if output == "vector":
            if isinstance(y, torch.Tensor):
                y = check_tensor(y, "y", dtype="float", finite=False)
            else:
                y = check_array(y, "y", dtype="float", finite=False)
            check_vectors(y, "y")
            return self._apply_vector(y, g)
        y = check_images(y, "y", finite=False)
        return self._apply(y, g)

    def _apply_vector(self, y, g: int):
        r = self._vector_rep(g)
        if isinstance(y, torch.Tensor):
            return y @ torch.as_tensor(r.T, dtype=y.dtype, device=y.device)
        return y @ r.T


def group(name: str) -> Group:
    """The group called ``name``.

    Parameters
    ----------
    name : {"c4", "d4"}

    Returns
    -------
    Group
    """
    return Group(name)


def as_group(g: Any, name: str = "group") -> Group:
    """A :class:`Group` from itself or its name, refusing anything else with an error naming ``name``.

    Parameters
    ----------
    g : Group or str
    name : str, default "group"
        The argument's name in error messages.

    Returns
    -------
    Group
    """
    if isinstance(g, Group):
        return g
    if isinstance(g, str):
        return Group(check_choice(g, name, GROUPS))
    raise InputError(f"{name} must be a Group or one of {GROUPS}, got {type(g).__name__}")


def augment(x, y, grp: Any = "c4", *, mode: str = "orbit", output: str = "invariant", seed: Any = 0):
    """Augment a data set with a group: the full orbit of every example, or one sampled element each.

    ``mode="orbit"`` is the full data augmentation of the theorem (Gerken & Kessel, Sec. 3): for every
    ``(x_i, y_i)`` the set holds ``(rho_X(g) x_i, rho_Y(g) y_i)`` for every ``g``, each exactly once, ordered
    ``g``-major (row ``g * N + i`` is ``g x_i``). ``mode="sampled"`` draws one element per example (random
    augmentation of one epoch), which is not orbit-closed.

    Parameters
    ----------
    x : torch.Tensor or numpy.ndarray
        Images ``(N, ..., H, H)``, N >= 1.
    y : torch.Tensor or numpy.ndarray
        Targets with leading dimension N (labels for ``"invariant"``; images for ``"image"``; ``(N, 2)``
        plane vectors for ``"vector"``).
    grp : Group or {"c4", "d4"}, default "c4"
        The group.
    mode : {"orbit", "sampled"}, default "orbit"
    output : {"invariant", "image", "vector"}, default "invariant"
        How the targets transform (see :meth:`Group.act_output`).
    seed : int or numpy.random.Generator, default 0
        Used by ``mode="sampled"`` only.

    Returns
    -------
    (x_aug, y_aug)
        Same types as the inputs; ``order * N`` rows (orbit) or ``N`` rows (sampled).
    """
    grp = as_group(grp, "grp")
    mode = check_choice(mode, "mode", MODES)
    output = check_choice(output, "output", OUTPUTS)
    rng = check_rng(seed)
    x = check_images(x)
    if x.ndim < 3 or x.shape[0] < 1:
        raise InputError(f"x must be a batch of images (N, ..., H, H) with N >= 1, got shape {tuple(x.shape)}")
    y = check_values(y)
    if isinstance(y, torch.Tensor) != isinstance(x, torch.Tensor):
        raise InputError(f"y must be of x's kind ({type(x).__name__}), got {type(y).__name__}")
    if y.ndim < 1 or y.shape[0] != x.shape[0]:
        raise InputError(f"y must have {x.shape[0]} rows like x, got shape {tuple(y.shape)}")
    if output == "image":
        check_images(y, "y")
    if output == "vector":
        if y.dtype.is_floating_point if isinstance(y, torch.Tensor) else np.issubdtype(y.dtype, np.floating):
            check_vectors(y, "y")
        else:
            raise InputError(f"y must hold float plane vectors for output='vector', got dtype {y.dtype}")
    is_t = isinstance(x, torch.Tensor)
    cat = torch.cat if is_t else np.concatenate

    def out_act(v, g):
        if output == "image":
            return grp._apply(v, g)
        if output == "vector":
            return grp._apply_vector(v, g)
        return v.clone() if isinstance(v, torch.Tensor) else v.copy()

    if mode == "orbit":
        xs = [grp._apply(x, g) for g in range(grp.order)]
        ys = [out_act(y, g) for g in range(grp.order)]
        return cat(xs), cat(ys)
    gs = rng.integers(0, grp.order, size=x.shape[0])
    xs = [grp._apply(x[i : i + 1], int(g)) for i, g in enumerate(gs)]
    ys = [out_act(y[i : i + 1], int(g)) for i, g in enumerate(gs)]
    return cat(xs), cat(ys)


def is_orbit_closed(x, grp: Any = "c4") -> bool:
    """Whether the set of images ``x`` is closed under the group, exactly (every ``g x_i`` is some ``x_j``).

    Parameters
    ----------
    x : torch.Tensor or numpy.ndarray
        Images ``(N, ..., H, H)``.
    grp : Group or {"c4", "d4"}, default "c4"

    Returns
    -------
    bool
    """
    grp = as_group(grp, "grp")
    x = check_images(x)
    if x.ndim < 3:
        raise InputError(f"x must be a batch of images (N, ..., H, H), got shape {tuple(x.shape)}")
    a = x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x
    a = np.ascontiguousarray(a, dtype=np.float64)
    seen = {r.tobytes() for r in a.reshape(len(a), -1)}
    for g in range(1, grp.order):
        moved = np.ascontiguousarray(grp._apply(a, g)).reshape(len(a), -1)
        if any(r.tobytes() not in seen for r in moved):
            return False
    return True
