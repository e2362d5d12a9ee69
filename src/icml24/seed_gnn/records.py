"""The edit log: one :class:`EditRecord` per edit, and :func:`summarize`, the paper's figures of a sequence
(drawdown and success rate at checkpoints, their means, steps and time per edit)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Sequence

from ..errors import InputError
from ..validation import check_int

__all__ = ["EditRecord", "summarize"]


@dataclass
class EditRecord:
    """One edit of a sequence: what was asked, what it cost, and the model's quality after it.

    Parameters
    ----------
    index : int
        0-based position in the sequence.
    node, label : int
        The target and the label it was edited to.
    steps : int
        Optimizer steps (0: the target was already right and the edit was skipped).
    seconds : float
        Wall time of the edit.
    target_correct : bool
        The model predicts this target right after the edit.
    success_rate : float
        Fraction of all targets so far predicted right after the edit (the paper's SR).
    train_acc, val_acc, test_acc : float
        Accuracies after the edit.
    drawdown : float
        Base test accuracy minus test accuracy, in percentage points (the paper's DD).
    batch_size : int, default 1
        Rows of the edit's training batch.
    anchors_near : int, default 0
        Anchors drawn from the target's neighbourhood.
    """

    index: int  # 0-based position in the sequence
    node: int
    label: int
    steps: int  # optimizer steps (0: already right, skipped)
    seconds: float
    target_correct: bool  # the model predicts this target right after the edit
    success_rate: float  # fraction of all targets so far predicted right after the edit
    train_acc: float
    val_acc: float
    test_acc: float
    drawdown: float  # base test accuracy minus test accuracy, in percentage points
    batch_size: int = 1
    anchors_near: int = 0  # anchors drawn from the target's neighbourhood

    def as_dict(self) -> dict[str, Any]:
        """The record as a plain dictionary (for JSON).

        Returns
        -------
        dict of str to object
        """
        return asdict(self)


def summarize(records: Sequence[EditRecord], checkpoints: Sequence[int] = (1, 10, 25, 50)) -> dict[str, float]:
    """The paper's figures of an edit sequence.

    Parameters
    ----------
    records : sequence of EditRecord
        An editor's log.
    checkpoints : sequence of int, default (1, 10, 25, 50)
        The edits at which drawdown and success rate are reported (those reached).

    Returns
    -------
    dict of str to float
        ``dd@c`` and ``sr@c`` per checkpoint, ``edits``, ``dd_last``, ``sr_last``, ``max_dd``, ``mean_dd``
        (the paper's Avg DD), ``mean_sr``, ``mean_steps`` and ``ms_per_edit``; empty for an empty log.
    """
    if isinstance(records, (str, bytes)) or not isinstance(records, Sequence):
        raise InputError(f"records must be a list of EditRecord, got {type(records).__name__}")
    bad = next((r for r in records if not isinstance(r, EditRecord)), None)
    if bad is not None:
        raise InputError(f"records must hold EditRecord entries (an editor's log), got {type(bad).__name__}")
    if isinstance(checkpoints, (str, bytes)) or not isinstance(checkpoints, Sequence):
        raise InputError(f"checkpoints must be a sequence of edit counts, got {type(checkpoints).__name__}")
    checkpoints = [check_int(c, "checkpoints", min_val=1) for c in checkpoints]
    if not records:
        return {}
    out: dict[str, float] = {}
    for c in checkpoints:
        if c <= len(records):
            out[f"dd@{c}"] = records[c - 1].drawdown
            out[f"sr@{c}"] = records[c - 1].success_rate
    last = records[-1]
    out.update(
        {
            "edits": float(len(records)),
            "dd_last": last.drawdown,
            "sr_last": last.success_rate,
            "max_dd": max(r.drawdown for r in records),
            "mean_dd": sum(r.drawdown for r in records) / len(records),
            "mean_sr": sum(r.success_rate for r in records) / len(records),
            "mean_steps": sum(r.steps for r in records) / len(records),
            "ms_per_edit": 1e3 * sum(r.seconds for r in records) / len(records),
        }
    )
    return out
