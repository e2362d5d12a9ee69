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

from ..extras import require

require("torch_geometric", extra="graphs", what="icml24.data.planetoid")

from torch_geometric.data import Data

from ..errors import DataError, InputError
from ..validation import check_seed
from ._root import cache_dir, data_root, fingerprint, require_files

NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
_SUFFIXES = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")


def planetoid(
    name: str = "Cora",
    *,
    split: str = "public",
    root: str | os.PathLike | None = None,
    transform: Callable[[Data], Data] | None = None,
    seed: int = 0,
    num_train_per_class: int = 20,
    num_val: int = 500,
    num_test: int = 1000,
) -> Data:
    """Load a Planetoid graph with its split, without downloading and without writing into the data root.

    PyG processes the raw files into a ``processed/`` folder; that folder is built in a temporary directory
    of the writable cache (:func:`icml24.data.cache_dir`) and renamed into place, so an interrupted load
    leaves nothing half-written.

    Parameters
    ----------
    name : {"Cora", "CiteSeer", "PubMed"}, default "Cora"
        The graph (case-insensitive).
    split : {"public", "full", "random"}, default "public"
        "public" is the fixed split of Yang et al. 2016 (20 per class / 500 / 1000, as in the GCN paper);
        "full" makes all non-val/test nodes training nodes (as PyG's ``split="full"``); "random" draws
        ``num_train_per_class`` per class, then ``num_val`` and ``num_test`` nodes, with ``seed``.
    root : str or os.PathLike, optional
        The data root (default ``$ICML24_DATA`` or ``~/.cache/icml24``); the raw files are read from
        ``<root>/planetoid/<Name>/raw/ind.<name>.*``, as PyG lays them out. It may be read-only.
    transform : callable, optional
        Applied to the returned ``Data`` (e.g. ``torch_geometric.transforms.NormalizeFeatures()``).
    seed : int, default 0
        Seed of the ``"random"`` split.
    num_train_per_class : int, default 20
        Training nodes per class of the ``"random"`` split.
    num_val : int, default 500
        Validation nodes of the ``"random"`` split.
    num_test : int, default 1000
        Test nodes of the ``"random"`` split.

    Returns
    -------
    torch_geometric.data.Data
        With ``x``, ``edge_index``, ``y``, ``train_mask``, ``val_mask``, ``test_mask`` and ``num_classes``
        (an int); ``transform`` applied if given.

    Raises
    ------
    InputError
        If ``name`` or ``split`` is unknown, ``seed`` is invalid, or the ``"random"`` split sizes exceed the
        number of nodes.
    DataUnavailable
        If any of the raw ``ind.<name>.*`` files is missing under the data root, or no writable cache
        folder exists.
    DataError
        If the raw files are present but cannot be processed.

    Notes
    -----
    The Planetoid raw format is Python pickles (PyG unpickles them, as every Planetoid loader does); read
    only files from the original source (github.com/kimiyoung/planetoid, folder ``data/``).

    References
    ----------
    .. [1] Z. Yang, W. W. Cohen and R. Salakhutdinov, "Revisiting semi-supervised learning with graph
       embeddings", ICML 2016.
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
    files = require_files(
        raw_dir,
        [f"ind.{key}.{s}" for s in _SUFFIXES],
        f"Planetoid {proper}",
        "github.com/kimiyoung/planetoid, folder data/",
        fetch_name=key,
    )

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
            raise DataError(
                f"Planetoid {proper} files in {raw_dir} could not be processed: {exc}",
                "replace them with the original ind.* files",
            ) from None
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
    test[rest[num_val : num_val + num_test]] = True
    data.train_mask, data.val_mask, data.test_mask = train, val, test
    return data
