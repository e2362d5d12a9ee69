"""Synthetic graphs with known ground truth: the contextual stochastic block model (CSBM)."""

from __future__ import annotations

import math

import numpy as np
import torch

from ..extras import require

require("torch_geometric", extra="graphs", what="icml24.data.csbm")

from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from ..errors import InputError
from ..validation import check_seed


def _count(value: int | float, n: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise InputError(f"{name} must be a non-negative count or a fraction in [0, 1), got {value!r}")
    return int(round(value * n)) if isinstance(value, float) and value < 1 else int(value)


def csbm(
    n_nodes: int = 1000,
    *,
    n_classes: int = 3,
    avg_degree: float = 6.0,
    homophily: float = 0.8,
    snr: float = 1.0,
    n_features: int = 32,
    num_train_per_class: int = 20,
    num_val: int | float = 0.2,
    num_test: int | float = 0.4,
    features: str = "gaussian",
    words_per_node: int = 20,
    seed: int = 0,
) -> Data:
    """Generate a contextual stochastic block model (CSBM) node-classification graph.

    Classes are balanced. Undirected edges: ``round(n_nodes * avg_degree / 2)`` distinct pairs, of which a
    fraction ``homophily`` join two nodes of the same class (the *edge homophily ratio*) and the rest join
    nodes of different classes, each uniformly at random; so ``homophily = 1 / n_classes`` is an
    Erdos-Renyi graph that carries no label information. Features: ``x_i = snr * u_{y_i} + N(0, I)`` with
    orthonormal class directions ``u_c`` (random unit vectors when ``n_classes > n_features``), so two class
    means are ``snr * sqrt(2)`` apart in units of the noise; ``snr = 0`` makes features independent of labels.

    With ``features="bow"`` the features are instead binary bags of words, like Cora's: the vocabulary of
    ``n_features`` words is cut into one topic block per class, and each node draws ``words_per_node`` words,
    each from its class's block with probability ``snr / (1 + snr)`` and uniformly from the vocabulary
    otherwise (so ``snr = 0`` again carries no label information).

    Parameters
    ----------
    n_nodes : int, default 1000
        Number of nodes (>= 2).
    n_classes : int, default 3
        Number of classes (>= 2, at most ``n_nodes``).
    avg_degree : float, default 6.0
        Average node degree, in ``[0, n_nodes - 1]``.
    homophily : float, default 0.8
        Edge homophily ratio: the fraction of edges joining two nodes of the same class, in ``[0, 1]``.
    snr : float, default 1.0
        Signal-to-noise ratio of the features (finite, >= 0); 0 makes features independent of labels.
    n_features : int, default 32
        Feature dimension (Gaussian) or vocabulary size (bag of words; then at least ``n_classes``).
    num_train_per_class : int, default 20
        Training nodes per class.
    num_val, num_test : int or float, default 0.2 and 0.4
        Validation and test nodes, drawn with ``seed`` from the nodes left after the training nodes: ints
        are counts, floats in [0, 1) fractions of ``n_nodes``. The three splits together may not exceed
        ``n_nodes``.
    features : {"gaussian", "bow"}, default "gaussian"
        Gaussian features or binary bags of words.
    words_per_node : int, default 20
        Words drawn per node with ``features="bow"`` (>= 1).
    seed : int, default 0
        Seed of the graph, the features and the split.

    Returns
    -------
    torch_geometric.data.Data
        With ``x`` (float32), ``y`` (int64), ``edge_index`` (both directions, no self-loops, no duplicates),
        ``train_mask``, ``val_mask``, ``test_mask``, ``num_classes``, and ``class_means`` (the ground truth:
        class means for Gaussian features, the 0/1 topic blocks for bag-of-words).

    Raises
    ------
    InputError
        If an argument is out of range, the split sizes exceed ``n_nodes``, or ``avg_degree`` with
        ``homophily`` asks for more intra- or inter-class edges than exist.

    References
    ----------
    .. [1] Y. Deshpande, A. Montanari, E. Mossel and S. Sen, "Contextual stochastic block models",
       NeurIPS 2018.
    """
    check_seed(seed)
    for name, v, lo in (
        ("n_nodes", n_nodes, 2),
        ("n_classes", n_classes, 2),
        ("n_features", n_features, 1),
        ("num_train_per_class", num_train_per_class, 0),
    ):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise InputError(f"{name} must be an integer >= {lo}, got {v!r}")
    if n_classes > n_nodes:
        raise InputError(f"n_classes ({n_classes}) exceeds n_nodes ({n_nodes})")
    if not math.isfinite(avg_degree) or avg_degree < 0 or avg_degree > n_nodes - 1:
        raise InputError(f"avg_degree must be in [0, n_nodes - 1], got {avg_degree!r}")
    if not math.isfinite(homophily) or not 0.0 <= homophily <= 1.0:
        raise InputError(f"homophily must be in [0, 1], got {homophily!r}")
    if not math.isfinite(snr) or snr < 0:
        raise InputError(f"snr must be finite and >= 0, got {snr!r}")
    if features not in ("gaussian", "bow"):
        raise InputError(f"features must be 'gaussian' or 'bow', got {features!r}")
    if features == "bow" and (
        isinstance(words_per_node, bool)
        or not isinstance(words_per_node, int)
        or words_per_node < 1
        or n_features < n_classes
    ):
        raise InputError("bag-of-words features need words_per_node >= 1 and n_features >= n_classes")
    n_val, n_test = _count(num_val, n_nodes, "num_val"), _count(num_test, n_nodes, "num_test")
    if num_train_per_class * n_classes + n_val + n_test > n_nodes:
        raise InputError(
            f"split sizes ({num_train_per_class}x{n_classes} train + {n_val} val + {n_test} test) "
            f"exceed n_nodes={n_nodes}",
            "lower them or raise n_nodes",
        )

    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n_nodes) % n_classes)
    members = [np.flatnonzero(y == c) for c in range(n_classes)]
    sizes = np.array([len(m) for m in members])

    n_edges = int(round(n_nodes * avg_degree / 2))
    n_in = int(round(homophily * n_edges))
    n_out = n_edges - n_in
    max_in = int((sizes * (sizes - 1) // 2).sum())
    max_out = n_nodes * (n_nodes - 1) // 2 - max_in
    if n_in > max_in or n_out > max_out:
        raise InputError(
            f"avg_degree={avg_degree} with homophily={homophily} needs {n_in} intra- and {n_out} "
            f"inter-class edges; at most {max_in} and {max_out} exist",
            "lower avg_degree",
        )
    intra = _sample_pairs(rng, y, members, n_in, same=True)
    inter = _sample_pairs(rng, y, members, n_out, same=False)
    pairs = np.concatenate([intra, inter]) if n_edges else np.zeros((0, 2), dtype=np.int64)
    edge_index = to_undirected(torch.from_numpy(pairs.T.copy()).long(), num_nodes=n_nodes)

    if features == "gaussian":
        g = rng.standard_normal((n_features, n_classes))
        dirs = np.linalg.qr(g)[0].T[:n_classes] if n_classes <= n_features else (g / np.linalg.norm(g, axis=0)).T
        means = snr * dirs
        x = means[y] + rng.standard_normal((n_nodes, n_features))
    else:
        block = n_features // n_classes
        p_topic = snr / (1.0 + snr)
        from_topic = rng.random((n_nodes, words_per_node)) < p_topic
        topic_word = y[:, None] * block + rng.integers(0, block, size=(n_nodes, words_per_node))
        any_word = rng.integers(0, n_features, size=(n_nodes, words_per_node))
        words = np.where(from_topic, topic_word, any_word)
        x = np.zeros((n_nodes, n_features))
        np.put_along_axis(x, words, 1.0, axis=1)
        means = np.zeros((n_classes, n_features))
        for c in range(n_classes):  # expected word-presence rates would need inclusion-exclusion; keep topics
            means[c, c * block : (c + 1) * block] = 1.0

    train = np.zeros(n_nodes, dtype=bool)
    for m in members:
        train[rng.choice(m, size=min(num_train_per_class, len(m)), replace=False)] = True
    rest = rng.permutation(np.flatnonzero(~train))
    val = np.zeros(n_nodes, dtype=bool)
    test = np.zeros(n_nodes, dtype=bool)
    val[rest[:n_val]] = True
    test[rest[n_val : n_val + n_test]] = True

    data = Data(
        x=torch.from_numpy(x.astype(np.float32)),
        y=torch.from_numpy(y.astype(np.int64)),
        edge_index=edge_index,
        train_mask=torch.from_numpy(train),
        val_mask=torch.from_numpy(val),
        test_mask=torch.from_numpy(test),
    )
    data.num_classes = n_classes
    data.class_means = torch.from_numpy(means.astype(np.float32))
    return data


def _sample_pairs(
    rng: np.random.Generator, y: np.ndarray, members: list[np.ndarray], count: int, same: bool
) -> np.ndarray:
    """``count`` distinct unordered pairs (u < v), uniformly among intra- (``same``) or inter-class pairs."""
    n = len(y)
    sizes = np.array([len(m) for m in members])
    order = np.concatenate(members)
    offset = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    p_class = sizes * (sizes - 1) / 2.0
    codes = np.zeros(0, dtype=np.int64)
    while len(codes) < count:
        k = int((count - len(codes)) * 1.3) + 16
        if same:  # a class with probability proportional to its number of pairs, then two of its members
            c = rng.choice(len(sizes), size=k, p=p_class / p_class.sum())
            u = order[offset[c] + rng.integers(0, sizes[c])]
            v = order[offset[c] + rng.integers(0, sizes[c])]
        else:  # uniform ordered pairs, rejected when in one class: uniform over inter-class pairs
            u, v = rng.integers(0, n, size=k), rng.integers(0, n, size=k)
            keep = y[u] != y[v]
            u, v = u[keep], v[keep]
        keep = u != v
        new = np.minimum(u[keep], v[keep]) * n + np.maximum(u[keep], v[keep])
        both = np.concatenate([codes, new])
        _, first = np.unique(both, return_index=True)
        codes = both[np.sort(first)][:count]
    return np.stack([codes // n, codes % n], axis=1)
