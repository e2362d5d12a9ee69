"""What every sequential editor shares: input checks, the base accuracy, the edit log, undo, and save/load.

Subclasses provide the model (``logits``), one edit (``_edit``) and their state (``_state``/``_load_state``);
:class:`SequentialEditor` turns these into :meth:`~SequentialEditor.edit`, :meth:`~SequentialEditor.undo`,
:meth:`~SequentialEditor.state_dict` and the rest.
"""

from __future__ import annotations

import copy
import io
import os
import time
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import Tensor, nn

from ..extras import require

require("torch_geometric", extra="graphs", what="seed_gnn")  # one line naming the extra, not a raw ImportError

from torch_geometric.data import Data

from ..errors import InputError
from ..runs import atomic_write_bytes
from ..validation import check_bool, check_int, check_tensor
from .graph_input import chunked_outputs, gnn_outputs, prepare_graph
from .records import EditRecord, summarize

__all__ = ["SequentialEditor"]


def _check_same_layout(state: Any, current: dict[str, Any]) -> None:
    """Raise ``ValueError`` unless a saved state has the layout of the editor's own: the same parts, the same
    tensors (names and shapes) in each model, and optimizers with as many parameters per group."""
    if not isinstance(state, dict) or set(state) != set(current):
        raise ValueError(f"parts {sorted(state) if isinstance(state, dict) else type(state).__name__}")
    for key, mine in current.items():
        theirs = state[key]
        if not isinstance(theirs, dict):
            raise ValueError(f"{key} is a {type(theirs).__name__}")
        if "param_groups" in mine:
            groups = theirs.get("param_groups")
            if not isinstance(groups, list) or [len(g.get("params", ())) for g in groups] != [
                len(g["params"]) for g in mine["param_groups"]
            ]:
                raise ValueError(f"{key} has other parameter groups")
            continue
        shapes = {k: tuple(v.shape) for k, v in mine.items()}
        if {k: tuple(v.shape) if isinstance(v, Tensor) else None for k, v in theirs.items()} != shapes:
            raise ValueError(f"{key} holds other tensors")


def _path_arg(path: Any, name: str) -> Path:
    """A file path argument: a non-empty ``str`` or ``os.PathLike``."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise InputError(f"{name} must be a file path (str or pathlib.Path), got {type(path).__name__}")
    if not str(path).strip():
        raise InputError(f"{name} is empty", "give a file name")
    return Path(path)


class SequentialEditor:
    """What every editor shares: inputs, the base accuracy, the edit log, undo, and save/load.

    Parameters
    ----------
    gnn : torch.nn.Module
        A trained node classifier, ``gnn(x, edge_index) -> (nodes x classes)``.
    data : torch_geometric.data.Data
        The graph with ``x``, ``edge_index``, ``y`` and the three masks
        (:func:`~icml24.seed_gnn.graph_input.check_graph`).

    Attributes
    ----------
    base_acc : tuple of float
        Train, validation and test accuracy of the unedited GNN (drawdown is measured against the last).
    log : list of EditRecord
        One record per edit so far.
    """

    name = "editor"

    def __init__(self, gnn: nn.Module, data: Data, *, inference_batch: int | None = None) -> None:
        if not isinstance(gnn, nn.Module):
            raise InputError(f"gnn must be a torch.nn.Module, got {type(gnn).__name__}")
        self.data = data = prepare_graph(data, gnn, masks=self._required_masks)
        self.device = data.x.device
        self.inference_batch = check_int(inference_batch, "inference_batch", min_val=1, allow_none=True)
        if self.inference_batch is not None and not isinstance(getattr(gnn, "num_layers", None), int):
            raise InputError(
                "inference_batch needs the GNN's depth, read from gnn.num_layers",
                "give the model a num_layers attribute or leave inference_batch unset",
            )
        self._base_out = base = self.outputs_of(gnn)
        self.num_classes = int(base.size(1))
        if data.y.numel() and int(data.y.max()) >= self.num_classes:
            raise InputError(
                f"data.y has labels up to {int(data.y.max())} but the GNN outputs {self.num_classes} classes"
            )
        self.base_acc = self.accuracy_from(base.argmax(-1))
        self.log: list[EditRecord] = []
        self.targets: list[int] = []
        self.labels: list[int] = []
        self._snapshots: list[dict[str, Any]] = []
        self.closed = False

    _required_masks: tuple[str, ...] = ("train_mask",)

    def outputs_of(self, model: nn.Module) -> Tensor:
        """A GNN's outputs on the whole graph (eval mode): one full-graph forward, or chunk by chunk
        (:func:`chunked_outputs`) when the editor was given ``inference_batch``.

        Parameters
        ----------
        model : torch.nn.Module
            The GNN (or the editor's copy of it).

        Returns
        -------
        torch.Tensor
            Nodes x classes.
        """
        if self.inference_batch is None:
            return gnn_outputs(model, self.data.x, self.data.adj)
        return chunked_outputs(model, self.data, model.num_layers, self.inference_batch)

    # -- lifetime
    def close(self) -> None:
        """Release the editor's model, caches and history; later calls raise :class:`InputError`.

        The caller's GNN is never modified by an editor (no parameter, ``requires_grad`` flag or mode is
        left changed: the editors read it under ``torch.no_grad`` and restore its mode, or edit a copy), so
        closing only frees memory. Editors are also context managers (``with SeedGNNEditor(...) as ed:``).
        """
        self.closed = True
        self._snapshots = []
        self._release()

    def _release(self) -> None:
        """Drop the subclass's models and caches (see :meth:`close`)."""

    def __enter__(self) -> "SequentialEditor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _check_open(self) -> None:
        if getattr(self, "closed", False):
            raise InputError(f"this {self.name} editor is closed", "build a new one")

    # -- subclasses provide
    def logits(self) -> Tensor:  # pragma: no cover - abstract
        """The current model's outputs on the whole graph (eval mode).

        Returns
        -------
        torch.Tensor
            Nodes x classes.
        """
        raise NotImplementedError

    def _edit(self, node: int, label: int, index: int) -> tuple[int, int, int]:  # pragma: no cover
        """Apply one edit; return (steps, batch size, anchors near the target)."""
        raise NotImplementedError

    def _state(self) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _load_state(self, state: dict[str, Any]) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- the API
    def check_target(self, node, label) -> tuple[int, int]:
        """Validate an edit target.

        Parameters
        ----------
        node : int
            A node id: a Python or NumPy integer, or a one-element tensor.
        label : int
            A class of the GNN (the same types).

        Returns
        -------
        tuple of (int, int)
        """
        self._check_open()
        n = self.data.num_nodes
        if isinstance(node, Tensor) and node.numel() == 1:
            node = node.reshape(()).item()
        if isinstance(label, Tensor) and label.numel() == 1:
            label = label.reshape(()).item()
        node, label = int(check_int(node, "node")), int(check_int(label, "label"))
        if not 0 <= node < n:
            raise InputError(f"node={node!r} is out of range", f"node ids are 0..{n - 1}")
        if not 0 <= label < self.num_classes:
            raise InputError(f"label={label!r} is outside the classes", f"labels are 0..{self.num_classes - 1}")
        return node, label

    def predict(self) -> Tensor:
        """Predicted class of every node.

        Returns
        -------
        torch.Tensor
            Long, one class per node.
        """
        self._check_open()
        return self.logits().argmax(-1)

    def accuracy(self) -> tuple[float, float, float]:
        """Train, validation and test accuracy of the current model.

        Returns
        -------
        tuple of float
        """
        return self.accuracy_from(self.predict())

    def edit(self, node: int, label: int) -> EditRecord:
        """Make the model predict ``label`` for ``node``, on top of all earlier edits; log and return it.

        Parameters
        ----------
        node : int
            The target node.
        label : int
            The class it should be predicted as.

        Returns
        -------
        EditRecord
        """
        node, label = self.check_target(node, label)
        index = len(self.log)
        if not self._snapshots:
            self._snapshots.append(self._snapshot())
        self.targets.append(node)
        self.labels.append(label)
        t0 = time.perf_counter()
        steps, batch, near = self._edit(node, label, index)
        seconds = time.perf_counter() - t0
        pred = self.predict()
        tgt = torch.tensor(self.targets, device=pred.device)
        sr = float((pred[tgt] == torch.tensor(self.labels, device=pred.device)).float().mean())
        tr, va, te = self.accuracy_from(pred)
        rec = EditRecord(
            index,
            node,
            label,
            steps,
            seconds,
            bool(pred[node] == label),
            sr,
            tr,
            va,
            te,
            100.0 * (self.base_acc[2] - te),
            batch,
            near,
        )
        self.log.append(rec)
        self._snapshots.append(self._snapshot())
        return rec

    def accuracy_from(self, pred: Tensor) -> tuple[float, float, float]:
        """Train, validation and test accuracy of the given predictions.

        Parameters
        ----------
        pred : torch.Tensor
            One class per node.

        Returns
        -------
        tuple of float
        """
        self._check_open()
        d = self.data
        check_tensor(pred, "pred", shape=(d.num_nodes,), dtype="integer")
        if int(pred.min()) < 0 or int(pred.max()) >= self.num_classes:
            raise InputError(
                f"pred must hold classes 0..{self.num_classes - 1}, got {int(pred.min())}..{int(pred.max())}"
            )
        return tuple(
            float((pred[m] == d.y[m]).float().mean()) if int(m.sum()) else float("nan")
            for m in (d.train_mask, d.val_mask, d.test_mask)
        )

    def edit_many(self, nodes: Sequence[int], labels: Sequence[int], progress: bool = False) -> list[EditRecord]:
        """Edit the targets one after another.

        Parameters
        ----------
        nodes, labels : sequence of int
            The targets and their labels, in order.
        progress : bool, default False
            Show a progress bar.

        Returns
        -------
        list of EditRecord
        """
        self._check_open()
        for value, arg in ((nodes, "nodes"), (labels, "labels")):
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__") or not hasattr(value, "__iter__"):
                raise InputError(f"{arg} must be a sequence of integers, got {type(value).__name__}")
        if len(nodes) != len(labels):
            raise InputError(f"{len(nodes)} nodes but {len(labels)} labels", "give one label per node in labels")
        progress = check_bool(progress, "progress")
        # every target is checked before the first edit: a bad one leaves the editor as it was
        targets = [self.check_target(n, l) for n, l in zip(nodes, labels)]
        from tqdm.auto import tqdm

        out = []
        bar = tqdm(targets, disable=not progress, desc=self.name, unit="edit")
        for n, l in bar:
            rec = self.edit(n, l)
            bar.set_postfix(dd=f"{rec.drawdown:.1f}", sr=f"{rec.success_rate:.2f}")
            out.append(rec)
        return out

    def summary(self) -> dict[str, float]:
        """:func:`summarize` of this editor's log.

        Returns
        -------
        dict of str to float
        """
        return summarize(self.log)

    def undo(self, to_edit: int | None = None) -> None:
        """Return to the state after edit ``to_edit`` (a count: 0 is before any edit; default: drop the last).

        Model, optimizer state, targets and log are restored exactly as they were.

        Parameters
        ----------
        to_edit : int, optional
            Between 0 and the number of edits so far.
        """
        self._check_open()
        n = len(self.log)
        if to_edit is None:
            to_edit = n - 1
        to_edit = check_int(to_edit, "to_edit", min_val=0, max_val=n)
        if to_edit == n:
            return
        if self._snapshots[to_edit] is None:
            raise InputError(
                f"edit {to_edit} predates the state this editor was loaded from",
                f"undo can reach back to edit {len(self.log) - len(self._snapshots) + 1} at most",
            )
        self._restore(self._snapshots[to_edit])
        del self._snapshots[to_edit + 1 :]
        del self.log[to_edit:]
        del self.targets[to_edit:]
        del self.labels[to_edit:]

    def _snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self._state())

    def _restore(self, snap: dict[str, Any]) -> None:
        self._load_state(copy.deepcopy(snap))

    # -- persistence: plain tensors, ints, floats and lists, readable with torch.load(weights_only=True)
    def state_dict(self) -> dict[str, Any]:
        """The editor's state: model, optimizer, targets and log, as plain tensors and lists.

        Returns
        -------
        dict of str to object
        """
        self._check_open()
        return {
            "format": f"icml24.seed_gnn/{self.name}/1",
            "state": self._state(),
            "targets": list(self.targets),
            "labels": list(self.labels),
            "log": [r.as_dict() for r in self.log],
            "fingerprint": self._fingerprint(),
        }

    def load_state_dict(self, sd: dict[str, Any]) -> None:
        """Restore a state from :meth:`state_dict` of an editor built on the same GNN and graph.

        Parameters
        ----------
        sd : dict of str to object
        """
        if not isinstance(sd, dict) or sd.get("format") != f"icml24.seed_gnn/{self.name}/1":
            raise InputError(f"sd is not a saved {self.name} editor state", "give what state_dict() returned")
        self._check_open()
        fp = sd.get("fingerprint")
        if not isinstance(fp, Tensor) or fp.shape != self._fingerprint().shape:
            raise InputError("sd has no valid fingerprint", "give what state_dict() returned")
        if not torch.allclose(fp, self._fingerprint(), rtol=1e-5, atol=1e-6, equal_nan=True):
            raise InputError(
                "sd was saved by an editor made for another GNN or graph",
                "load it into an editor built from the same model and data",
            )
        try:  # everything is read before anything is changed; a failed load leaves the editor as it was
            targets, labels = [int(t) for t in sd["targets"]], [int(v) for v in sd["labels"]]
            log = [EditRecord(**r) for r in sd["log"]]
            if not len(targets) == len(labels) == len(log):
                raise ValueError("targets, labels and log differ in length")
            _check_same_layout(sd["state"], self._state())
            before = self._snapshot()
            try:
                self._load_state(sd["state"])
            except Exception:
                self._restore(before)
                raise
        except Exception as exc:  # noqa: BLE001 - a malformed state, reported as such
            raise InputError(f"sd is not a valid {self.name} editor state: {type(exc).__name__}: {exc}") from None
        self.targets, self.labels = targets, labels
        self.log = log
        # history before a load is not kept: undo reaches back to the loaded state only
        self._snapshots = [None] * len(self.log) + [self._snapshot()]  # type: ignore[list-item]

    def save(self, path: str | Path) -> Path:
        """Write the editor's state atomically (``torch.save`` of plain tensors; load with :meth:`load`).

        Parameters
        ----------
        path : str or pathlib.Path

        Returns
        -------
        pathlib.Path
            The file written.
        """
        path = _path_arg(path, "path")
        if path.is_dir():
            raise InputError(f"path {str(path)!r} is a folder", "give a file name")
        buf = io.BytesIO()
        torch.save(self.state_dict(), buf)
        try:
            return atomic_write_bytes(path, buf.getvalue())
        except OSError as exc:
            raise InputError(f"path {str(path)!r} cannot be written: {exc.strerror or exc}") from None

    def load(self, path: str | Path) -> None:
        """Read a state written by :meth:`save` (``weights_only=True``: nothing is unpickled).

        Parameters
        ----------
        path : str or pathlib.Path
        """
        path = _path_arg(path, "path")
        if not path.is_file():
            raise InputError(f"path {str(path)!r}: no saved editor there")
        try:
            sd = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:
            raise InputError(f"path {str(path)!r} is not a saved editor state: {type(exc).__name__}") from None
        self.load_state_dict(sd)

    def _fingerprint(self) -> Tensor:
        """A summary of the base model's outputs, to refuse loading a state into another model or graph."""
        return torch.tensor(self.base_acc + (float(self.data.num_nodes), float(self.num_classes)))
