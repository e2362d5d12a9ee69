"""gnn_certify: exact robustness verification of message-passing GNNs by MIP with topology-based bounds.

"Verifying message-passing neural networks via topology-based bounds tightening" (Hojny, Zhang, Campos,
Misener; ICML 2024; arXiv 2402.13937; official code github.com/christopherhojny/SCIP-MPNN, read at 0b8d73c).

>>> from icml24.gnn_certify import certify, SAGEGraphClassifier
>>> report = certify(model, data, budget=0.1, strength=2, bounds="sbt")      # doctest: +SKIP
>>> report.verdict, report.certificates[0].flips                              # doctest: +SKIP

- :func:`certify` -- the MIP of the paper solved by SCIP (PySCIPOpt); bounds ``basic`` / ``sbt`` / ``abt``.
- :func:`certify_dataset` -- every graph of a PyG ``Batch`` / ``Dataset`` / ``DataLoader``: per-graph time
  limit, progress bar, resumable ``.jsonl`` results, and the summary of the paper's tables.
- :func:`topology_bounds` (sbt, and abt under local fixings), :func:`basic_bounds` (the baseline),
  :func:`brute_force_minimum` (the exact reference for small budgets).
- :func:`load_model_json`, :func:`read_instance`, :func:`mutag_model`, :func:`mutag_instance` -- the official
  artefacts; :class:`SAGEGraphClassifier`, :class:`SAGENodeClassifier` -- the official architectures in PyG.
- Any PyG model of ``SAGEConv(aggr="sum")`` / ``GINConv`` layers, PyG's ``GraphSAGE(aggr="sum")`` and ``GIN``
  model classes, ReLU, ``global_add_pool`` and ``Linear`` layers (GIN is not in the paper: its layer is the same
  MIP with a per-node MLP; see :mod:`icml24.gnn_certify.reading`).

Deviations from the official code (each is also noted where it is implemented):

- SCIP 10 through PySCIPOpt instead of the C plugin on SCIP 8; default ``settings="fast"`` also switches off
  SCIP's aggregation (c-MIR) separator, which spends most of the root time on these models; ``"official"``
  keeps SCIP's defaults. The official ``.set`` files only choose the bounds and the separator (``bounds=``).
- Input bounds: sbt uses the feature box itself (official: clipped to [0, 1]); basic uses the hull of [0, 1]
  and the box (official: [0, 1], i.e. ``useinputbasedbounds = FALSE``); identical for the paper's binary
  features, sound for others.
- Equivalent reformulations in the MIP (explicit pre-activation variables, stable ReLUs without binaries,
  unflippable slots as constants, node classification restricted to what reaches the target) and a starting
  solution (the clean graph): see :mod:`icml24.gnn_certify.mip`.
- Feature boxes are modelled in the MIP (the official MIP asserts fixed inputs).
- Graph classification refuses self-loops, directed and duplicate edges (the official code ignores
  self-loops and symmetrises the edge list); a ``robust`` verdict needs a dual bound > 1e-6 and a
  ``not_robust`` one an attack the user's PyG model confirms, otherwise the verdict is ``unknown``.
- ``greedy_start=True`` (the default; not in the paper) hands SCIP the greedy attack as a second starting
  solution, and decision mode also stops at a negative primal bound (``limits/primal``), so an attack it finds
  decides at once; ``greedy_start=False`` is the paper's setting.
- ``attack_first=True`` adds a greedy attack before the MIP, skipping SCIP when it succeeds (off by default).
"""

from ..extras import require
from ..lazy import lazy_package

# Names are imported on first use (PEP 562): importing the package, its paper.py or cli.py stays light.
_EXPORTS = {
    ".certify": ("certify",),
    ".report": (
        "Certificate",
        "Report",
        "ROBUST",
        "NOT_ROBUST",
        "UNKNOWN",
    ),
    ".problem": (
        "build_space",
        "compute_bounds",
    ),
    ".dataset": (
        "certify_dataset",
        "DatasetReport",
    ),
    ".bounds": (
        "topology_bounds",
        "Bounds",
        "MODES",
    ),
    ".baselines": (
        "basic_bounds",
        "brute_force_minimum",
        "margins",
    ),
    ".space": (
        "AttackSpace",
        "official_graph_budgets",
    ),
    ".models": (
        "SAGEGraphClassifier",
        "SAGENodeClassifier",
        "module_from_network",
    ),
    ".network": (
        "SageNetwork",
        "network_to_json",
    ),
    ".reading": (
        "network_from_module",
        "run_model",
    ),
    ".io": (
        "GraphInstance",
        "load_model_json",
        "read_instance",
        "mutag_model",
        "mutag_instance",
        "network_from_json",
    ),
}
__getattr__, __dir__, __all__ = lazy_package(
    __name__, _EXPORTS, require=lambda: require("torch_geometric", "pyscipopt", extra="graphs", what="gnn_certify")
)
