"""Certify every graph of a data set as users hold it: a PyG ``Batch``, ``Dataset``, ``DataLoader`` or a list.

``certify_dataset(model, dataset, out="runs/mutag.jsonl")`` runs :func:`~icml24.gnn_certify.certify` on each
graph with a per-graph time limit, shows a progress bar, appends one JSON line per finished graph (flushed and
fsynced in one write, so a killed run loses at most the graph in flight; a truncated last line is dropped on
resume) and returns a :class:`DatasetReport`: one :class:`~icml24.gnn_certify.report.Report` per graph and the
summary the paper's tables report (robust / not robust / unknown, solved within the limit, shifted geometric
mean time, branch-and-bound nodes).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import torch

from ..errors import InputError
from ..validation import check_bool, check_choice, check_float, check_int, check_seed
from ._checks import TIME_MAX, as_array, kept_modes
from .bounds import MODES
from .certify import MARGIN_TOL, certify
from .models import module_from_network
from .network import GRAPH, SageNetwork, network_to_json
from .reading import network_from_module
from .report import NOT_ROBUST, ROBUST, UNKNOWN, Report
from .scip_settings import SETTINGS, check_scip_params

log = logging.getLogger(__name__)
REFUSED = "refused"
FORMAT = "icml24.gnn_certify.certify_dataset/1"
#: The :func:`certify` options ``certify_dataset`` passes on (``time_limit`` is per graph there).
OPTIONS = (
    "budget",
    "global_budget",
    "strength",
    "local_budget",
    "target",
    "bounds",
    "feature_lb",
    "feature_ub",
    "seed",
    "threads",
    "relu",
    "max_nodes",
    "decision",
    "clock",
    "settings",
    "scip_params",
    "attack_first",
    "margin_tol",
)


@dataclass
class DatasetReport:
    """The verdicts on every graph of a data set.

    Parameters
    ----------
    reports : list of Report or None
        One per graph, in the data set's order; None where the graph was refused (see ``refused``).
    refused : dict of int to str
        Graph index -> why :func:`certify` refused it (too many nodes, self-loops, ...).
    hashes : list of str
        A digest of each graph's ``x`` and ``edge_index`` (how a resumed run knows it is the same graph).
    time_limit : float
        Seconds per graph.
    path : pathlib.Path, optional
        The results file.
    resumed : int
        Graphs read back from ``path`` instead of being certified again.
    """

    reports: list[Report | None]
    refused: dict[int, str] = field(default_factory=dict)
    hashes: list[str] = field(default_factory=list)
    time_limit: float = 60.0
    path: Path | None = None
    resumed: int = 0

    def __len__(self) -> int:
        return len(self.reports)

    def __getitem__(self, index: int) -> Report | None:
        return self.reports[index]

    @property
    def verdicts(self) -> list[str]:
        """One verdict per graph: robust / not_robust / unknown / refused."""
        return [REFUSED if r is None else r.verdict for r in self.reports]

    @property
    def summary(self) -> dict[str, float]:
        """Counts, solved within the limit, times and nodes, as the paper's tables report them.

        ``sgm_seconds`` is the shifted geometric mean of the per-graph times (shift 1 s; unsolved graphs count
        their full time), ``solved`` the graphs with a robust or not-robust verdict.
        """
        done = [r for r in self.reports if r is not None]
        verdicts = self.verdicts
        times = np.array([r.seconds for r in done], dtype=np.float64)
        sgm = float(np.exp(np.mean(np.log(times + 1.0))) - 1.0) if times.size else math.nan
        return {
            "graphs": len(self.reports),
            "robust": verdicts.count(ROBUST),
            "not_robust": verdicts.count(NOT_ROBUST),
            "unknown": verdicts.count(UNKNOWN),
            "refused": verdicts.count(REFUSED),
            "solved": verdicts.count(ROBUST) + verdicts.count(NOT_ROBUST),
            "seconds_total": float(times.sum()),
            "sgm_seconds": sgm,
            "nodes_total": int(sum(r.nodes for r in done)),
            "time_limit": float(self.time_limit),
        }


def _check_options(options: dict, net: SageNetwork) -> dict:
    """Refuse unknown or bad :func:`certify` options before any graph is touched."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        name = unknown[0]
        hint = "node: certify_dataset certifies graphs" if name == "node" else f"valid options: {', '.join(OPTIONS)}"
        raise InputError(f"{name} is not an option of certify_dataset", hint)
    o = dict(options)
    if "bounds" in o:
        check_choice(o["bounds"], "bounds", MODES)
    if "clock" in o:
        check_choice(o["clock"], "clock", ("wall", "cpu"))
    if "settings" in o:
        check_choice(o["settings"], "settings", SETTINGS)
    for name in ("decision", "attack_first"):
        if name in o:
            check_bool(o[name], name)
    if "seed" in o:
        check_seed(o["seed"])
    if "threads" in o:
        check_int(o["threads"], "threads", min_val=1)
    if "max_nodes" in o:
        check_int(o["max_nodes"], "max_nodes", min_val=1)
    if "strength" in o:
        check_int(o["strength"], "strength", min_val=0)
    if "margin_tol" in o:
        check_float(o["margin_tol"], "margin_tol", min_val=MARGIN_TOL)
    check_float(o.get("budget", 0.1), "budget", min_val=0.0, max_val=1.0, allow_none=True)
    check_int(o.get("global_budget"), "global_budget", min_val=0, allow_none=True)
    if o.get("budget", 0.1) is None and o.get("global_budget") is None:
        raise InputError("budget and global_budget are both None", "give a fraction of the edges or a number of flips")
    if o.get("local_budget") is not None:
        check_int(o["local_budget"], "local_budget", min_val=0)  # graphs differ in size: one integer for all
    if o.get("target") is not None:
        targets = o["target"] if isinstance(o["target"], (list, tuple)) else [o["target"]]
        if not targets:
            raise InputError("target is empty", "give a class index, a list of them, or None")
        for t in targets:
            check_int(t, "target", min_val=0, max_val=net.num_classes - 1)
    if o.get("scip_params") is not None:
        o["scip_params"] = check_scip_params(o["scip_params"])
    for name in ("feature_lb", "feature_ub"):
        if o.get(name) is not None:
            o[name] = as_array(o[name], name, ndim=(0, 1))  # broadcast to each graph's [n, F]
    return o


def _graphs(dataset) -> tuple[Iterator, int | None]:
    """Single graphs (PyG ``Data``) of a Batch, Dataset, DataLoader, list or tuple, and how many if known."""
    from torch_geometric.data import Batch, Data, Dataset
    from torch_geometric.loader import DataLoader

    if dataset is None or isinstance(dataset, (str, bytes, dict, np.ndarray, torch.Tensor)):
        raise InputError(
            f"dataset must be a PyG Batch, Dataset, DataLoader or a list of Data, got {type(dataset).__name__}"
        )
    if isinstance(dataset, Batch) or (isinstance(dataset, Data) and getattr(dataset, "batch", None) is not None):
        if not hasattr(dataset, "to_data_list"):
            raise InputError("dataset has a batch vector but is not a PyG Batch", "build it with Batch.from_data_list")
        items = dataset.to_data_list()
        return iter(items), len(items)
    if isinstance(dataset, Data):
        return iter([dataset]), 1
    if isinstance(dataset, DataLoader):

        def from_loader():
            for batch in dataset:
                yield from (batch.to_data_list() if hasattr(batch, "to_data_list") else [batch])

        n = len(dataset.dataset) if hasattr(dataset.dataset, "__len__") else None
        return from_loader(), n
    if isinstance(dataset, (Dataset, list, tuple)):
        if len(dataset) == 0:
            raise InputError("dataset is empty", "give at least one graph")
        return (dataset[i] for i in range(len(dataset))), len(dataset)
    if hasattr(dataset, "__iter__"):
        return iter(dataset), (len(dataset) if hasattr(dataset, "__len__") else None)
    raise InputError(
        f"dataset must be a PyG Batch, Dataset, DataLoader or a list of Data, got {type(dataset).__name__}"
    )


def _digest(data) -> str:
    h = hashlib.sha256()
    for name in ("x", "edge_index"):
        value = getattr(data, name, None)
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu().numpy()
        arr = np.ascontiguousarray(np.asarray(value))
        h.update(f"{name}{arr.dtype.str}{arr.shape}".encode())
        h.update(arr.tobytes())
    return h.hexdigest()[:16]


def _config(net: SageNetwork, options: dict, time_limit: float) -> dict:
    weights = hashlib.sha256(json.dumps(network_to_json(net)).encode()).hexdigest()[:16]

    def plain(v: Any) -> Any:
        if isinstance(v, np.ndarray):
            return v.tolist()
        if isinstance(v, (list, tuple)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {str(k): plain(x) for k, x in sorted(v.items())}
        return v

    return {"format": FORMAT, "model": weights, "time_limit": time_limit, "options": plain(options)}


def _read(path: Path) -> tuple[dict | None, dict[int, dict]]:
    """The header and graph records of a results file; a truncated last line is dropped from the file."""
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    header, records = None, {}
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            rec = json.loads(line.decode("utf-8"))
            if not isinstance(rec, dict) or rec.get("kind") not in ("config", "graph"):
                raise ValueError("not a record")
        except (ValueError, UnicodeDecodeError):
            if i == len(lines) - 1:  # no newline after it: the write was interrupted
                log.warning("dropping the truncated last line of %s", path)
                from ..runs import atomic_write_bytes

                atomic_write_bytes(path, b"\n".join(lines[:i]) + (b"\n" if i else b""))
                break
            raise InputError(
                f"out: line {i + 1} of {path} is not a certify_dataset record", "move the file away or pick another out"
            ) from None
        if rec["kind"] == "config":
            header = rec
        else:
            records[int(rec["index"])] = rec
    return header, records


def _append(path: Path, record: dict) -> None:
    line = (json.dumps(record, sort_keys=True) + "\n").encode("utf-8")
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
    try:
        os.write(fd, line)
        os.fsync(fd)
    finally:
        os.close(fd)


def certify_dataset(
    model,
    dataset,
    *,
    time_limit: float = 60.0,
    out: str | os.PathLike | None = None,
    resume: bool = True,
    progress: bool | None = None,
    **options,
) -> DatasetReport:
    """Certify each graph of a PyG ``Batch``, ``Dataset``, ``DataLoader`` or list (graph classification).

    Parameters
    ----------
    model : torch.nn.Module or SageNetwork
        A graph classifier :func:`certify` accepts; read once, and left in the train/eval mode it was in.
    dataset : torch_geometric Batch, Dataset, DataLoader, Data, or list of Data
        The graphs; a Batch or DataLoader batch is split into its graphs (``to_data_list``).
    time_limit : float, default 60
        Seconds per graph, over all its target classes (official runs: 60 s per instance).
    out : str or os.PathLike, optional
        A ``.jsonl`` results file: a configuration line, then one line per finished graph.
    resume : bool, default True
        When ``out`` exists, keep the graphs it already holds (same configuration and same graphs required)
        and certify the rest; False refuses an existing non-empty file.
    progress : bool, optional
        Show a progress bar (default: when stderr is a terminal).
    **options
        Passed to :func:`certify`: ``budget`` (a fraction in [0, 1]), ``global_budget`` (a count), ``strength``,
        ``local_budget`` (one integer), ``target``, ``bounds``, ``settings``, ``scip_params``, ``seed``,
        ``threads``, ``clock``, ``decision``, ``attack_first``, ``margin_tol``, ``max_nodes``, ``relu``,
        ``feature_lb``/``feature_ub`` (broadcast to each graph).

    Returns
    -------
    DatasetReport
        One report per graph (None for a graph :func:`certify` refused, with the reason in ``refused``) and
        ``summary``.
    """
    time_limit = check_float(time_limit, "time_limit", min_val=0.0, max_val=TIME_MAX, include_boundaries="right")
    resume = check_bool(resume, "resume")
    if progress is not None:
        progress = check_bool(progress, "progress")
    path = None
    if out is not None:
        if isinstance(out, bool) or not isinstance(out, (str, os.PathLike)) or not os.fspath(out).strip():
            raise InputError(f"out must be a path to a .jsonl file, got {out!r}")
        path = Path(out)
        if path.exists() and not path.is_file():
            raise InputError(f"out must be a file, but {path} is a directory")
        if path.exists() and path.stat().st_size > 0 and not resume:
            raise InputError(f"out: {path} already holds results", "pass resume=True to continue it, or another path")
    if isinstance(model, SageNetwork):
        net, module = model, module_from_network(model)
    elif isinstance(model, torch.nn.Module):
        module, net = model, network_from_module(model, relu=options.get("relu"))
    else:
        raise InputError(f"model must be a PyG torch.nn.Module or a SageNetwork, got {type(model).__name__}")
    if net.task != GRAPH:
        raise InputError(
            "model classifies nodes; certify_dataset certifies graph classifiers",
            "certify each node with certify(model, data, node=v)",
        )
    options = _check_options(options, net)
    graphs, total = _graphs(dataset)
    config = _config(net, options, time_limit)
    done: dict[int, dict] = {}
    if path is not None and path.exists() and path.stat().st_size > 0:
        header, done = _read(path)
        if header is not None and header.get("config") != config:
            raise InputError(
                f"out: {path} holds results of another model or other options",
                "use another out, or the same model and options to resume",
            )
    if path is not None and (not path.exists() or path.stat().st_size == 0):
        path.parent.mkdir(parents=True, exist_ok=True)
        _append(path, {"kind": "config", "config": config})

    from tqdm.auto import tqdm

    report = DatasetReport(reports=[], time_limit=time_limit, path=path)
    kw = dict(options)
    bar = tqdm(total=total, desc="certify", unit="graph", disable=(None if progress is None else not progress))
    with kept_modes(module), bar:
        for index, data in enumerate(graphs):
            digest = _digest(data)
            report.hashes.append(digest)
            rec = done.get(index)
            if rec is not None:
                if rec.get("hash") != digest:
                    raise InputError(
                        f"out: graph {index} in {path} is another graph than dataset[{index}]",
                        "resume with the same data set in the same order, or use another out",
                    )
                if "refused" in rec:
                    report.reports.append(None)
                    report.refused[index] = rec["refused"]
                else:
                    report.reports.append(Report.from_dict(rec["report"]))
                report.resumed += 1
                bar.update(1)
                continue
            record: dict[str, Any] = {"kind": "graph", "index": index, "hash": digest}
            try:
                r = certify(module, data, time_limit=time_limit, graph_time_limit=time_limit, **kw)
            except InputError as exc:  # this graph only (too large, self-loops, ...): recorded, the run goes on
                report.reports.append(None)
                report.refused[index] = exc.one_line()
                record["refused"] = exc.one_line()
            else:
                report.reports.append(r)
                record["report"] = r.as_dict()
                bar.set_postfix_str(r.verdict)
            if path is not None:
                _append(path, record)
            bar.update(1)
    if not report.reports:
        raise InputError("dataset is empty", "give at least one graph")
    return report


__all__ = ["certify_dataset", "DatasetReport", "REFUSED", "OPTIONS"]
