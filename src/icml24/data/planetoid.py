"""Planetoid citation graphs (Cora, CiteSeer, PubMed) read from the data root through PyG's ``Planetoid``."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

import torch
from torch_geometric.data import Data

from ..errors import DataError, InputError
from ._root import cache_dir, check_seed, data_root, fingerprint, require_files

NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
_SUFFIXES = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def planetoid(name: str = "Cora", *, split: str = "public", root: str | os.PathLike | None = None,
              transform: Callable[[Data], Data] | None = None, seed: int = 0, num_train_per_class: int = 20,
              num_val: int = 500, num_test: int = 1000) -> Data:
    """Load a Planetoid graph with its split, without downloading and without writing into the data root.

    Parameters
    ----------
    name : "Cora", "CiteSeer" or "PubMed" (case-insensitive).
    split : "public" (the fixed split of Yang et al. 2016: 20 per class / 500 / 1000, as in the GCN paper),
        "full" (all non-val/test nodes train, as PyG's ``split="full"``) or "random" (``num_train_per_class``
        per class, then ``num_val`` and ``num_test`` nodes, drawn with ``seed``).
    root : the data root (default ``$ICML24_DATA`` or ``~/.cache/icml24``); the raw files are read from
        ``<root>/planetoid/<Name>/raw/ind.<name>.*``, as PyG lays them out. It may be read-only.
    transform : applied to the returned ``Data`` (e.g. ``torch_geometric.transforms.NormalizeFeatures()``).

    Returns
    -------
    ``torch_geometric.data.Data`` with ``x``, ``edge_index``, ``y``, ``train_mask``, ``val_mask``,
    ``test_mask`` and ``num_classes`` (an int).

    PyG processes the raw files into a ``processed/`` folder; that folder is built in a temporary directory
    of the writable cache (:func:`icml24.data.cache_dir`) and renamed into place, so an interrupted load
    leaves nothing half-written.

    Note: the Planetoid raw format is Python pickles (PyG unpickles them, as every Planetoid loader does);
    read only files from the original source.
    """
    from torch_geometric.datasets import Planetoid

    key = str(name).strip().lower()
    if key not in NAMES:
        raise InputError(f"unknown Planetoid name {name!r}", f"choose one of: {', '.join(NAMES.values())}")
    if split not in ("public", "full", "random"):
        raise InputError(f"split must be 'public', 'full' or 'random', got {split!r}")
    check_seed(seed)
    proper = NAMES[key]
    raw_dir = data_root(root) / "planetoid" / proper / "raw"
    files = require_files(raw_dir, [f"ind.{key}.{s}" for s in _SUFFIXES], f"Planetoid {proper}",
                          "github.com/kimiyoung/planetoid, folder data/")

    base = cache_dir("planetoid", fingerprint(files))
    final = base / proper
    if not (final / "processed").is_dir():
        tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=base))
        try:
            (tmp / proper / "raw").mkdir(parents=True)
            for f in files:
                os.symlink(f.resolve(), tmp / proper / "raw" / f.name)
            quiet = io.StringIO()
            with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
                Planetoid(root=str(tmp), name=proper)
            with contextlib.suppress(FileExistsError, OSError):
                if final.exists():  # a broken earlier attempt; a concurrent success wins
                    if not (final / "processed").is_dir():
                        shutil.rmtree(final)
                os.replace(tmp / proper, final)
        except Exception as exc:  # the raw format is pickled numpy/scipy objects: any failure is corruption
            raise DataError(f"Planetoid {proper} files in {raw_dir} could not be processed: {exc}",
                            "replace them with the original ind.* files") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    dataset = Planetoid(root=str(base), name=proper)
    data = dataset[0]
    data.num_classes = int(dataset.num_classes)
    if split == "full":
        data.train_mask = ~(data.val_mask | data.test_mask)
    elif split == "random":
        data = _random_split(data, seed, num_train_per_class, num_val, num_test)
    return transform(data) if transform is not None else data


def _random_split(data: Data, seed: int, per_class: int, num_val: int, num_test: int) -> Data:
    n, c = data.num_nodes, data.num_classes
    if per_class * c + num_val + num_test > n:
        raise InputError(f"split sizes ({per_class}x{c} train + {num_val} val + {num_test} test) exceed {n} nodes")
    g = torch.Generator().manual_seed(seed)
    train = torch.zeros(n, dtype=torch.bool)
    for k in range(c):
        idx = (data.y == k).nonzero().view(-1)
        idx = idx[torch.randperm(idx.numel(), generator=g)[:per_class]]
        train[idx] = True
    rest = (~train).nonzero().view(-1)
    rest = rest[torch.randperm(rest.numel(), generator=g)]
    val = torch.zeros(n, dtype=torch.bool)
    test = torch.zeros(n, dtype=torch.bool)
    val[rest[:num_val]] = True
    test[rest[num_val:num_val + num_test]] = True
    data.train_mask, data.val_mask, data.test_mask = train, val, test
    return data
