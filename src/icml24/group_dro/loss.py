"""Group DRO as a torch loss for minibatch training of any ``nn.Module``.

:class:`GroupDROLoss` is the online group DRO of Sagawa et al. (ICLR 2020, Algorithm 1), in the form of their
reference code's ``LossComputer`` (github.com/kohpangwei/group_DRO, ``loss.py``): it takes the per-example
losses of a minibatch and their group ids, updates the group weights ``q`` by one exponentiated-gradient step
on the minibatch's group losses, and returns the ``q``-weighted loss to backpropagate::

    from icml24.group_dro import GroupDROLoss
    robust = GroupDROLoss(n_groups, eta=0.01)                  # the reference code's --robust_step_size
    for x, y, g in loader:
        losses = F.cross_entropy(model(x), y, reduction="none")  # one loss per example
        loss = robust(losses, g)                                # updates robust.q, returns sum_g q_g L_g
        optimizer.zero_grad(); loss.backward(); optimizer.step()

:class:`VRGroupDROLoss` replaces the minibatch group losses in the ``q``-step by the variance-reduced estimate
of ALEG (Yu, Cai, Jiang, Zhang, ICML 2024, the q-block of the estimator ``F(z_bar) + F_xi(z) - F_xi(z_bar)``
of Algorithm 1): the group risks of a snapshot model, computed on the whole training set every ``K`` steps,
plus the minibatch's difference between the current and the snapshot model's losses.

Both are ``nn.Module`` s: their state (``q``, and the snapshot of the variance-reduced one) is kept in buffers,
so it follows ``.to(device)``, is saved by ``state_dict()`` and restored by ``load_state_dict()``. The state
persists across calls by design (it is the online adversary); call :meth:`GroupDROLoss.reset` (or build a new
loss) before training another model. ``q`` is only updated in training mode (``loss.train()``, the default);
in ``loss.eval()`` mode the call returns the weighted loss with the current ``q`` and changes nothing.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import InputError
from ..validation import check_array, check_float, check_int, check_tensor
from .domain import COUNT_MAX

#: The reference code's default step size of the q-update (``--robust_step_size 0.01``).
ROBUST_STEP_SIZE = 0.01


def _vector(value: Any, name: str, m: int) -> torch.Tensor:
    """A length-``m`` vector of finite reals (tensor, array or sequence) as a float64 CPU tensor."""
    if isinstance(value, torch.Tensor):
        t = check_tensor(value, name, shape=(m,), dtype=None, copy=True)
        if t.is_complex() or t.dtype == torch.bool:
            raise InputError(f"{name} must hold real numbers, got dtype {t.dtype}")
        return t.to("cpu", torch.float64)
    return torch.from_numpy(check_array(value, name, shape=(m,)).astype(np.float64))


def group_means(losses: torch.Tensor, groups: torch.Tensor, n_groups: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean loss and number of examples of every group in a batch (0 loss for a group absent from it).

    Differentiable in ``losses``. No validation: the loss classes check their inputs before calling it.

    Parameters
    ----------
    losses : torch.Tensor
        Per-example losses ``(B,)``.
    groups : torch.Tensor
        Group ids ``(B,)`` in ``0 .. n_groups - 1``, on ``losses``' device.
    n_groups : int

    Returns
    -------
    means : torch.Tensor
        ``(n_groups,)``, in ``losses``' dtype.
    counts : torch.Tensor
        ``(n_groups,)`` int64.
    """
    counts = torch.bincount(groups, minlength=n_groups)
    sums = torch.zeros(n_groups, dtype=losses.dtype, device=losses.device).index_add(0, groups, losses)
    return sums / counts.clamp(min=1).to(losses.dtype), counts


class GroupDROLoss(nn.Module):
    """Group-weighted loss with an online exponentiated-gradient update of the group weights ``q``.

    A call with per-example losses ``l_j`` and group ids ``g_j`` of a minibatch computes the group means
    ``L_g = mean_{j: g_j = g} l_j`` (0 for a group absent from the batch), the adjusted losses
    ``A_g = L_g + C_g / sqrt(n_g)``, and, in training mode, the step (Sagawa et al. 2020, Algorithm 1)::

        q_g <- q_g exp(eta A_g) / sum_h q_h exp(eta A_h)

    then returns ``sum_g q_g A_g`` with the *updated* ``q`` (as the reference code does). Its gradient is
    ``sum_g q_g grad L_g``: ``q`` is a constant for autograd and the adjustment is constant in the model.

    Parameters
    ----------
    n_groups : int
        Number of groups ``m`` (>= 1); group ids are ``0 .. m - 1``.
    eta : float, default 0.01
        Step size of the q-update (> 0), the reference code's ``--robust_step_size`` default.
    group_counts : tensor or sequence of int, optional
        Training examples per group ``n_g`` (all > 0); needed when ``adjustment`` is not zero.
    adjustment : float or tensor or sequence of float, default 0.0
        The generalisation adjustment ``C`` (one value for every group, or one per group; >= 0), the reference
        code's ``--generalization_adjustment``: ``C_g / sqrt(n_g)`` is added to group ``g``'s loss, which
        favours small groups, whose training loss underestimates their test loss. Sagawa et al. tune ``C``
        over ``{0, 1, 2, 3, 4, 5}``.

    Attributes
    ----------
    adv_probs : torch.Tensor
        The live buffer of ``q`` (float64; named as in the reference code), saved by ``state_dict``. Read
        :attr:`q` for a copy.
    adjust : torch.Tensor
        The buffer of ``C_g / sqrt(n_g)`` (zeros without adjustment).

    Raises
    ------
    InputError
        If ``n_groups`` < 1, ``eta`` <= 0 or not finite, ``adjustment`` is negative, or ``group_counts`` is
        missing or not positive while ``adjustment`` is not zero.

    Notes
    -----
    State: ``q`` starts uniform and persists across calls; :meth:`reset` makes it uniform again. It lives in
    a buffer, so it follows ``.to(device)``, and if the losses arrive on another device the buffers move
    there. Inputs are checked at every call: 1-d floating per-example losses (``reduction="none"``), all
    finite, and 1-d integer group ids of the same length in ``0 .. m - 1``; otherwise :class:`InputError`.

    References
    ----------
    Sagawa, Koh, Hashimoto, Liang, "Distributionally robust neural networks for group shifts: on the
    importance of regularization for worst-case generalization", ICLR 2020 (Algorithm 1; the group
    adjustment ``C / sqrt(n_g)``); reference code github.com/kohpangwei/group_DRO, ``loss.py``
    (``LossComputer.compute_robust_loss``).

    Examples
    --------
    >>> import torch
    >>> from icml24.group_dro import GroupDROLoss
    >>> robust = GroupDROLoss(2, eta=0.5)
    >>> loss = robust(torch.tensor([1.0, 3.0, 2.0]), torch.tensor([0, 1, 1]))
    >>> robust.q  # softmax(0.5 * [1.0, 2.5]): the group with the larger mean loss gains weight
    tensor([0.3208, 0.6792], dtype=torch.float64)
    >>> round(float(loss), 4)  # 0.3208 * 1.0 + 0.6792 * 2.5
    2.0188
    """

    def __init__(
        self,
        n_groups: int,
        *,
        eta: float = ROBUST_STEP_SIZE,
        group_counts: Any = None,
        adjustment: Any = 0.0,
    ) -> None:
        super().__init__()
        self.n_groups = check_int(n_groups, "n_groups", min_val=1, max_val=COUNT_MAX)
        self.eta = check_float(eta, "eta", min_val=0.0, include_boundaries="neither")
        m = self.n_groups
        if isinstance(adjustment, (int, float, np.number)) and not isinstance(adjustment, bool):
            adj = torch.full((m,), check_float(adjustment, "adjustment", min_val=0.0), dtype=torch.float64)
        else:
            adj = _vector(adjustment, "adjustment", m)
            if bool((adj < 0).any()):
                raise InputError(f"adjustment must be >= 0 for every group, got {adj.tolist()}")
        if group_counts is not None:
            counts = _vector(group_counts, "group_counts", m)
            if bool((counts <= 0).any()) or bool((counts != counts.round()).any()):
                raise InputError(f"group_counts must be positive integers, got {counts.tolist()}")
        elif bool((adj > 0).any()):
            raise InputError("group_counts is required when adjustment is not zero", "pass the n_g of every group")
        else:
            counts = torch.ones(m, dtype=torch.float64)
        self.register_buffer("adv_probs", torch.full((m,), 1.0 / m, dtype=torch.float64))
        self.register_buffer("adjust", adj / counts.sqrt())

    # ------------------------------------------------------------------------------------------- state

    @property
    def q(self) -> torch.Tensor:
        """The group weights ``q`` (float64, on the simplex), a copy.

        Returns
        -------
        torch.Tensor
        """
        return self.adv_probs.detach().clone()

    def reset(self) -> None:
        """Make ``q`` uniform again, as before the first call (and drop any other state of a subclass)."""
        self.adv_probs.fill_(1.0 / self.n_groups)

    def extra_repr(self) -> str:
        return f"n_groups={self.n_groups}, eta={self.eta:g}, adjusted={bool((self.adjust > 0).any())}"

    # ----------------------------------------------------------------------------------------- helpers

    def _follow(self, device: torch.device) -> None:
        """Move the buffers to ``device`` if they live elsewhere."""
        if self.adv_probs.device != device:
            self.to(device)

    def _check(self, losses: Any, groups: Any, name: str = "losses") -> tuple[torch.Tensor, torch.Tensor]:
        losses = check_tensor(losses, name, ndim=1, dtype="float")
        groups = check_tensor(groups, "groups", ndim=1, dtype="integer")
        if len(losses) != len(groups):
            raise InputError(
                f"{name} and groups must have the same length, got {len(losses)} and {len(groups)}",
                "pass one per-example loss (reduction='none') and one group id per example",
            )
        groups = groups.to(losses.device, torch.int64)
        lo, hi = int(groups.min()), int(groups.max())
        if lo < 0 or hi >= self.n_groups:
            raise InputError(f"groups must hold ids in 0..{self.n_groups - 1}, got values in {lo}..{hi}")
        self._follow(losses.device)
        return losses, groups

    def _step_q(self, estimate: torch.Tensor) -> None:
        """One exponentiated-gradient step of ``q`` on the (adjusted, detached) group loss ``estimate``."""
        logits = torch.log(self.adv_probs) + self.eta * estimate.detach().to(self.adv_probs.dtype)
        self.adv_probs.copy_(torch.softmax(logits, dim=0))

    def _weighted(self, group_loss: torch.Tensor) -> torch.Tensor:
        adjusted = group_loss + self.adjust.to(group_loss.dtype)
        return (self.adv_probs.to(group_loss.dtype) * adjusted).sum()

    # ----------------------------------------------------------------------------------------- forward

    def forward(self, losses: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """Update ``q`` (training mode only) and return the group-weighted loss of the minibatch.

        Parameters
        ----------
        losses : torch.Tensor
            Per-example losses ``(B,)`` (floating, finite), e.g. ``F.cross_entropy(out, y, reduction="none")``.
        groups : torch.Tensor
            Group ids ``(B,)`` (integer) in ``0 .. n_groups - 1``.

        Returns
        -------
        torch.Tensor
            The scalar ``sum_g q_g (L_g + C_g / sqrt(n_g))`` in ``losses``' dtype, differentiable in ``losses``.

        Raises
        ------
        InputError
            If ``losses`` is not a finite 1-d floating tensor, ``groups`` is not a 1-d integer tensor of the
            same length, or a group id is out of range.
        """
        losses, groups = self._check(losses, groups)
        group_loss, _ = group_means(losses, groups, self.n_groups)
        if self.training:
            self._step_q(group_loss + self.adjust.to(group_loss.dtype))
        return self._weighted(group_loss)


class VRGroupDROLoss(GroupDROLoss):
    """Group DRO loss whose q-step uses ALEG's variance-reduced estimate of the group risks.

    The online q-update of :class:`GroupDROLoss` steps on the minibatch's group means ``L_g(w)``, whose
    variance is large for small groups (and which are 0 for a group absent from the batch). This class keeps
    a *snapshot*: the full training-set group risks ``R_g(w_bar)`` of a snapshot model ``w_bar``, given to
    :meth:`refresh` (every ``refresh_every`` steps, say once an epoch). At every step it receives, besides the
    current model's per-example losses ``l_j(w)``, the snapshot model's losses ``l_j(w_bar)`` on the same
    minibatch, and steps ``q`` on

    ``E_g = R_g(w_bar) + mean_{j: g_j = g} [l_j(w) - l_j(w_bar)]``  (``E_g = R_g(w_bar)`` if ``g`` is absent),

    the q-block of ALEG's estimator ``v = F(z_bar) + F_xi(z) - F_xi(z_bar)`` (Yu et al. 2024, Algorithm 1) with
    the minibatch in place of one sample per group. ``E_g`` is an unbiased estimate of ``R_g(w)`` for every
    group present in the batch, and its variance vanishes as ``w`` approaches ``w_bar``. The step itself and
    the returned loss are those of :class:`GroupDROLoss` (``q <- q exp(eta (E + C / sqrt(n))) / Z``, then
    ``sum_g q_g (L_g(w) + C_g / sqrt(n_g))``).

    What it does not do: it reduces the variance of the q-block only. The model's update is the user's
    optimiser on the returned loss (ALEG also variance-reduces the w-block and takes an extragradient step with
    anchoring to the snapshot, which need full per-example gradients); the snapshot is the model at the time
    of :meth:`refresh` (SVRG's option, not ALEG's one-index-shifted average of the epoch's iterates).

    Parameters
    ----------
    n_groups : int
        Number of groups (>= 1).
    eta : float, default 0.01
        Step size of the q-update (> 0), as in :class:`GroupDROLoss`.
    refresh_every : int, optional
        Steps between snapshots (>= 1); :attr:`needs_refresh` turns True after so many training steps. When
        None, :attr:`needs_refresh` is True only before the first :meth:`refresh`.
    group_counts, adjustment
        As in :class:`GroupDROLoss`.

    Attributes
    ----------
    adv_probs, adjust : torch.Tensor
        As in :class:`GroupDROLoss`.
    snapshot_risks : torch.Tensor
        The buffer of ``R_g(w_bar)`` (float64), saved by ``state_dict``.
    steps_since_refresh : torch.Tensor
        The buffer counting training steps since the last :meth:`refresh` (-1 before the first).

    Raises
    ------
    InputError
        As :class:`GroupDROLoss`, or if ``refresh_every`` < 1.

    Notes
    -----
    Cost per step: one more forward pass (the snapshot model on the minibatch, without gradients); per
    refresh: one forward pass over the training set. A training loop::

        snapshot = copy.deepcopy(model).requires_grad_(False)
        vr = VRGroupDROLoss(m, refresh_every=len(loader))
        for x, y, g in loader:
            if vr.needs_refresh:
                snapshot.load_state_dict(model.state_dict())
                with torch.no_grad():
                    vr.refresh(F.cross_entropy(snapshot(X), Y, reduction="none"), G)   # whole training set
            losses = F.cross_entropy(model(x), y, reduction="none")
            with torch.no_grad():
                snap = F.cross_entropy(snapshot(x), y, reduction="none")
            loss = vr(losses, g, snap)
            optimizer.zero_grad(); loss.backward(); optimizer.step()

    Calling it before the first :meth:`refresh` raises :class:`InputError`; :meth:`reset` drops the snapshot
    as well as ``q``.

    References
    ----------
    Yu, Cai, Jiang, Zhang, "Efficient algorithms for empirical group distributionally robust optimization and
    beyond", ICML 2024, arXiv 2403.03562 (Algorithm 1, ALEG: variance reduction for all groups against a
    snapshot); Sagawa et al., ICLR 2020 (Algorithm 1, the online q-update); Johnson, Zhang, "Accelerating
    stochastic gradient descent using predictive variance reduction", NeurIPS 2013 (SVRG's snapshot).
    """

    def __init__(
        self,
        n_groups: int,
        *,
        eta: float = ROBUST_STEP_SIZE,
        refresh_every: int | None = None,
        group_counts: Any = None,
        adjustment: Any = 0.0,
    ) -> None:
        super().__init__(n_groups, eta=eta, group_counts=group_counts, adjustment=adjustment)
        self.refresh_every = check_int(refresh_every, "refresh_every", min_val=1, allow_none=True)
        self.register_buffer("snapshot_risks", torch.zeros(self.n_groups, dtype=torch.float64))
        self.register_buffer("steps_since_refresh", torch.tensor(-1, dtype=torch.int64))

    @property
    def has_snapshot(self) -> bool:
        """Whether :meth:`refresh` has been called since construction or the last :meth:`reset`.

        Returns
        -------
        bool
        """
        return int(self.steps_since_refresh) >= 0

    @property
    def needs_refresh(self) -> bool:
        """True before the first :meth:`refresh`, and after ``refresh_every`` training steps since the last.

        Returns
        -------
        bool
        """
        k = int(self.steps_since_refresh)
        return k < 0 or (self.refresh_every is not None and k >= self.refresh_every)

    def reset(self) -> None:
        """Make ``q`` uniform and drop the snapshot, as before the first call."""
        super().reset()
        self.snapshot_risks.zero_()
        self.steps_since_refresh.fill_(-1)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", refresh_every={self.refresh_every}"

    def refresh(self, losses: torch.Tensor, groups: torch.Tensor) -> torch.Tensor:
        """Store the snapshot's group risks ``R_g(w_bar)`` from its per-example losses on the training set.

        Parameters
        ----------
        losses : torch.Tensor
            The snapshot model's per-example losses ``(N,)`` on the whole training set (or a large, fixed
            sample of it), finite.
        groups : torch.Tensor
            Their group ids ``(N,)``. A group with no example gets risk 0.

        Returns
        -------
        torch.Tensor
            A copy of the stored risks ``(n_groups,)`` (float64).

        Raises
        ------
        InputError
            As for a call of the loss.
        """
        losses, groups = self._check(losses, groups)
        means, _ = group_means(losses.detach().to(torch.float64), groups, self.n_groups)
        self.snapshot_risks.copy_(means)
        self.steps_since_refresh.fill_(0)
        return means.clone()

    def forward(self, losses: torch.Tensor, groups: torch.Tensor, snapshot_losses: torch.Tensor) -> torch.Tensor:
        """Step ``q`` on the variance-reduced group risks (training mode only); return the weighted loss.

        Parameters
        ----------
        losses : torch.Tensor
            The current model's per-example losses ``(B,)`` (floating, finite).
        groups : torch.Tensor
            Group ids ``(B,)`` in ``0 .. n_groups - 1``.
        snapshot_losses : torch.Tensor
            The snapshot model's per-example losses on the same examples ``(B,)`` (floating, finite; no
            gradient is taken through them).

        Returns
        -------
        torch.Tensor
            The scalar ``sum_g q_g (L_g(w) + C_g / sqrt(n_g))``, differentiable in ``losses``.

        Raises
        ------
        InputError
            On bad ``losses`` or ``groups`` (as :class:`GroupDROLoss`), ``snapshot_losses`` of another shape or
            not finite, or before the first :meth:`refresh`.
        """
        losses, groups = self._check(losses, groups)
        snap = check_tensor(snapshot_losses, "snapshot_losses", shape=(len(losses),), dtype="float")
        if not self.has_snapshot:
            raise InputError(
                "VRGroupDROLoss has no snapshot", "call refresh(snapshot losses, groups) before the first step"
            )
        group_loss, counts = group_means(losses, groups, self.n_groups)
        if self.training:
            snap_mean, _ = group_means(snap.detach().to(losses.device, torch.float64), groups, self.n_groups)
            diff = torch.where(counts > 0, group_loss.detach().to(torch.float64) - snap_mean, 0.0)
            estimate = self.snapshot_risks.to(torch.float64) + diff
            self._step_q(estimate + self.adjust.to(torch.float64))
            self.steps_since_refresh.add_(1)
        return self._weighted(group_loss)


__all__ = ["GroupDROLoss", "VRGroupDROLoss", "group_means", "ROBUST_STEP_SIZE"]
