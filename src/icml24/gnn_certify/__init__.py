"""gnn_certify: exact robustness verification of message-passing GNNs by MIP with topology-based bounds.

"Verifying message-passing neural networks via topology-based bounds tightening" (Hojny, Zhang, Campos,
Misener; ICML 2024; arXiv 2402.13937; official code github.com/christopherhojny/SCIP-MPNN).

>>> from icml24.gnn_certify import certify, SAGEGraphClassifier
>>> report = certify(model, data, budget=0.1, strength=2, bounds="sbt")      # doctest: +SKIP
>>> report.verdict, report.certificates[0].flips                              # doctest: +SKIP

- :func:`certify` -- the MIP of the paper solved by SCIP (PySCIPOpt); bounds ``basic`` / ``sbt`` / ``abt``.
- :func:`topology_bounds` (sbt, and abt under local fixings), :func:`basic_bounds` (the baseline).
- :func:`load_model_json`, :func:`read_instance`, :func:`mutag_model`, :func:`mutag_instance` -- the official
  artefacts.
- :class:`SAGEGraphClassifier`, :class:`SAGENodeClassifier` -- the official architectures in PyG.
"""

from .baselines import basic_bounds, brute_force_minimum, margins
from .bounds import MODES, Bounds, topology_bounds
from .certify import NOT_ROBUST, ROBUST, UNKNOWN, Certificate, Report, build_space, certify, compute_bounds
from .io import GraphInstance, load_model_json, mutag_instance, mutag_model, network_from_json, read_instance
from .network import (SAGEGraphClassifier, SAGENodeClassifier, SageNetwork, module_from_network,
                      network_from_module, network_to_json, run_model)
from .space import AttackSpace, official_graph_budgets

__all__ = ["certify", "Certificate", "Report", "ROBUST", "NOT_ROBUST", "UNKNOWN", "build_space", "compute_bounds",
           "topology_bounds", "basic_bounds", "brute_force_minimum", "margins", "Bounds", "MODES", "AttackSpace",
           "official_graph_budgets", "SAGEGraphClassifier", "SAGENodeClassifier", "SageNetwork",
           "network_from_module", "module_from_network", "network_to_json", "run_model", "GraphInstance",
           "load_model_json", "read_instance", "mutag_model", "mutag_instance", "network_from_json"]
