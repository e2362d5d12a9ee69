"""Every public callable of gnn_certify refuses bad input with a one-line InputError naming the argument, and
leaves the user's objects (models and their train/eval modes, Data, arrays) exactly as they were."""

import json

import numpy as np
import pytest
import torch
from torch import nn
from torch_geometric.data import Batch, Data
from torch_geometric.nn import GCNConv, global_add_pool

import icml24.gnn_certify as gc
from icml24.gnn_certify import (
    AttackSpace,
    SAGEGraphClassifier,
    SageNetwork,
    SAGENodeClassifier,
    basic_bounds,
    brute_force_minimum,
    build_space,
    certify,
    certify_dataset,
    compute_bounds,
    load_model_json,
    margins,
    module_from_network,
    mutag_instance,
    mutag_model,
    network_from_json,
    network_from_module,
    network_to_json,
    official_graph_budgets,
    read_instance,
    run_model,
    topology_bounds,
)
from icml24.testing import assert_refuses, bad, coverage_gaps


def _graph(n=5, f=3, seed=0):
    rng = np.random.default_rng(seed)
    adj = np.triu(rng.random((n, n)) < 0.5, 1)
    adj = adj | adj.T
    return Data(
        x=torch.tensor(rng.integers(0, 2, (n, f)).astype(np.float32)),
        edge_index=torch.tensor(np.stack(np.nonzero(adj)), dtype=torch.long),
    )


torch.manual_seed(0)
MODEL = SAGEGraphClassifier(3, 2, hidden_channels=4, num_layers=2).train()  # the user's mode: train
NODE_MODEL = SAGENodeClassifier(3, 2, hidden_channels=4).train()
DATA = _graph()
NET = network_from_module(MODEL)
NODE_NET = network_from_module(NODE_MODEL)
SPACE = build_space(NET, DATA, global_budget=1)[0]
X = DATA.x.numpy().astype(np.float64)
EI = DATA.edge_index.numpy()
JSON = network_to_json(NET)
NAN_DATA = Data(x=DATA.x * float("nan"), edge_index=DATA.edge_index)
BATCH = Batch.from_data_list([_graph(seed=1), _graph(seed=2)])
S = SPACE.num_slots
ADJ = SPACE.adj.copy()


class GCN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.lin = GCNConv(3, 4), nn.Linear(4, 2)

    def forward(self, x, edge_index, batch=None):
        return self.lin(global_add_pool(self.conv(x, edge_index).relu(), batch))


GCN_MODEL = GCN().train()


def _json(tmp="bad.json", text="{not json"):
    import tempfile
    from pathlib import Path

    p = Path(tempfile.mkdtemp(prefix="gc-bad-")) / tmp
    p.write_text(text)
    return p


def _space(**kw):
    args = dict(adj=ADJ, directed=False, global_budget=1, local_budget=2, x_lb=X, x_ub=X)
    return AttackSpace(**{**args, **kw})


def _net(**kw):
    return SageNetwork(**{"sage": NET.sage, "dense": NET.dense, "task": "graph", **kw})


BAD_LAYER = type(NET.sage[0])  # SageLayer


CASES = [
    # certify ------------------------------------------------------------------------------------------
    bad("certify", "margin_tol", lambda: certify(MODEL, DATA, margin_tol=-100), MODEL, DATA, kind="range"),
    bad("certify", "margin_tol", lambda: certify(MODEL, DATA, margin_tol=0.0), MODEL, DATA, kind="below-scip-tol"),
    bad("certify", "margin_tol", lambda: certify(MODEL, DATA, margin_tol=float("nan")), MODEL, DATA, kind="nan"),
    bad("certify", "model", lambda: certify(None, DATA), DATA, kind="none"),
    bad("certify", "model", lambda: certify(GCN_MODEL, DATA), GCN_MODEL, DATA, kind="unsupported-layer"),
    bad("certify", "data", lambda: certify(MODEL, None), MODEL, kind="none"),
    bad("certify", "data", lambda: certify(MODEL, X), MODEL, kind="type"),
    bad("certify", "data.x", lambda: certify(MODEL, NAN_DATA), MODEL, NAN_DATA, kind="nan"),
    bad("certify", "data", lambda: certify(MODEL, BATCH), MODEL, BATCH, kind="batch"),
    bad("certify", "budget", lambda: certify(MODEL, DATA, budget=5.0), MODEL, DATA, kind="range"),
    bad("certify", "budget", lambda: certify(MODEL, DATA, budget=float("inf")), MODEL, kind="inf"),
    bad("certify", "global_budget", lambda: certify(MODEL, DATA, global_budget=-1), MODEL, kind="range"),
    bad("certify", "global_budget", lambda: certify(MODEL, DATA, global_budget=1.5), MODEL, kind="type"),
    bad("certify", "local_budget", lambda: certify(MODEL, DATA, local_budget=[1, 2]), MODEL, kind="length"),
    bad("certify", "local_budget", lambda: certify(MODEL, DATA, local_budget=[-1] * 5), MODEL, kind="range"),
    bad("certify", "scip_params", lambda: certify(MODEL, DATA, scip_params={"no/such": 1}), MODEL, kind="name"),
    bad("certify", "scip_params", lambda: certify(MODEL, DATA, scip_params={"limits/nodes": "x"}), MODEL, kind="type"),
    bad(
        "certify", "scip_params", lambda: certify(MODEL, DATA, scip_params={"limits/time": 5.0}), MODEL, kind="managed"
    ),
    bad(
        "certify",
        "scip_params",
        lambda: certify(MODEL, DATA, scip_params={"numerics/feastol": 0.5}),
        MODEL,
        kind="tolerance",
    ),
    bad("certify", "scip_params", lambda: certify(MODEL, DATA, scip_params=[1]), MODEL, kind="not-dict"),
    bad("certify", "bounds", lambda: certify(MODEL, DATA, bounds="tight"), MODEL, kind="name"),
    bad("certify", "greedy_start", lambda: certify(MODEL, DATA, greedy_start="yes"), MODEL, kind="type"),
    bad(
        "certify",
        "scip_params",
        lambda: certify(MODEL, DATA, scip_params={"limits/primal": 0.0}),
        MODEL,
        kind="managed-primal-limit",
    ),
    bad("certify", "time_limit", lambda: certify(MODEL, DATA, time_limit=0), MODEL, kind="range"),
    bad("certify", "threads", lambda: certify(MODEL, DATA, threads=0), MODEL, kind="range"),
    bad("certify", "target", lambda: certify(MODEL, DATA, target=7), MODEL, kind="range"),
    bad("certify", "target", lambda: certify(MODEL, DATA, target=[]), MODEL, kind="empty"),
    bad("certify", "node", lambda: certify(MODEL, DATA, node=1), MODEL, kind="wrong-task"),
    bad("certify", "node", lambda: certify(NODE_MODEL, DATA, node=99), NODE_MODEL, kind="range"),
    bad("certify", "task", lambda: certify(MODEL, DATA, task="edge"), MODEL, kind="name"),
    bad("certify", "max_nodes", lambda: certify(MODEL, DATA, max_nodes=2), MODEL, kind="too-small"),
    bad("certify", "feature_lb", lambda: certify(MODEL, DATA, feature_lb=np.ones((2, 2))), MODEL, kind="shape"),
    # certify_dataset ----------------------------------------------------------------------------------
    bad("certify_dataset", "dataset", lambda: certify_dataset(MODEL, None), MODEL, kind="none"),
    bad("certify_dataset", "dataset", lambda: certify_dataset(MODEL, []), MODEL, kind="empty"),
    bad("certify_dataset", "dataset", lambda: certify_dataset(MODEL, X), MODEL, kind="array"),
    bad("certify_dataset", "model", lambda: certify_dataset(NODE_MODEL, [DATA]), NODE_MODEL, DATA, kind="node-task"),
    bad("certify_dataset", "budget", lambda: certify_dataset(MODEL, BATCH, budget=5.0), MODEL, BATCH, kind="range"),
    bad("certify_dataset", "time_limit", lambda: certify_dataset(MODEL, [DATA], time_limit=-1), MODEL, kind="range"),
    bad("certify_dataset", "node", lambda: certify_dataset(MODEL, [DATA], node=0), MODEL, kind="unknown-option"),
    bad(
        "certify_dataset", "local_budget", lambda: certify_dataset(MODEL, [DATA], local_budget=[1, 2]), kind="per-node"
    ),
    bad("certify_dataset", "scip_params", lambda: certify_dataset(MODEL, [DATA], scip_params={"x": 1}), kind="name"),
    bad("certify_dataset", "target", lambda: certify_dataset(MODEL, [DATA], target=9), kind="range"),
    bad("certify_dataset", "out", lambda: certify_dataset(MODEL, [DATA], out=5), kind="type"),
    bad("certify_dataset", "out", lambda: certify_dataset(MODEL, [DATA], out="/"), kind="directory"),
    # build_space --------------------------------------------------------------------------------------
    bad("build_space", "net", lambda: build_space(MODEL, DATA), MODEL, kind="type"),
    bad("build_space", "data", lambda: build_space(NET, None), kind="none"),
    bad("build_space", "budget", lambda: build_space(NET, DATA, budget=-0.1), DATA, kind="range"),
    bad("build_space", "budget", lambda: build_space(NET, DATA, budget=float("nan")), DATA, kind="nan"),
    bad("build_space", "strength", lambda: build_space(NET, DATA, strength=-1), DATA, kind="range"),
    bad("build_space", "local_budget", lambda: build_space(NET, DATA, local_budget=[1] * 9), DATA, kind="length"),
    bad("build_space", "max_nodes", lambda: build_space(NET, DATA, max_nodes=0), DATA, kind="range"),
    bad("build_space", "feature_ub", lambda: build_space(NET, DATA, feature_ub=X - 1), DATA, kind="box"),
    bad("build_space", "data.x", lambda: build_space(NET, _graph(f=4)), kind="width"),
    # compute_bounds -----------------------------------------------------------------------------------
    bad("compute_bounds", "mode", lambda: compute_bounds(NET, SPACE, "tight"), SPACE, kind="name"),
    bad("compute_bounds", "mode", lambda: compute_bounds(NET, SPACE, None), SPACE, kind="none"),
    bad("compute_bounds", "net", lambda: compute_bounds(None, SPACE, "sbt"), SPACE, kind="none"),
    bad("compute_bounds", "space", lambda: compute_bounds(NET, DATA, "sbt"), DATA, kind="type"),
    bad(
        "compute_bounds",
        "space",
        lambda: compute_bounds(NODE_NET, _space(x_lb=X[:, :2], x_ub=X[:, :2]), "sbt"),
        kind="width",
    ),
    # topology_bounds ----------------------------------------------------------------------------------
    bad("topology_bounds", "slot_lo", lambda: topology_bounds(NET, SPACE, np.zeros(S - 1)), SPACE, kind="shape"),
    bad("topology_bounds", "slot_hi", lambda: topology_bounds(NET, SPACE, None, np.full(S, np.nan)), kind="nan"),
    bad("topology_bounds", "slot_lo", lambda: topology_bounds(NET, SPACE, np.full(S, 2.0)), kind="range"),
    bad("topology_bounds", "x_lo", lambda: topology_bounds(NET, SPACE, x_lo=np.zeros((2, 3))), kind="shape"),
    bad("topology_bounds", "net", lambda: topology_bounds("net", SPACE), SPACE, kind="type"),
    bad("topology_bounds", "space", lambda: topology_bounds(NET, None), kind="none"),
    # basic_bounds -------------------------------------------------------------------------------------
    bad("basic_bounds", "net", lambda: basic_bounds(None, SPACE), SPACE, kind="none"),
    bad("basic_bounds", "net", lambda: basic_bounds(MODEL, SPACE), MODEL, SPACE, kind="module"),
    bad("basic_bounds", "space", lambda: basic_bounds(NET, "space"), kind="type"),
    bad("basic_bounds", "space", lambda: basic_bounds(NET, _space(x_lb=X[:, :2], x_ub=X[:, :2])), kind="width"),
    bad("basic_bounds", "input_based", lambda: basic_bounds(NET, SPACE, input_based="yes"), SPACE, kind="type"),
    # brute_force_minimum ------------------------------------------------------------------------------
    bad("brute_force_minimum", "orig", lambda: brute_force_minimum(NET, SPACE, -1, 1), SPACE, kind="range"),
    bad("brute_force_minimum", "target", lambda: brute_force_minimum(NET, SPACE, 0, 0), SPACE, kind="same"),
    bad("brute_force_minimum", "target", lambda: brute_force_minimum(NET, SPACE, 0, 1.5), SPACE, kind="type"),
    bad("brute_force_minimum", "chunk", lambda: brute_force_minimum(NET, SPACE, 0, 1, chunk=0), kind="range"),
    bad("brute_force_minimum", "max_sets", lambda: brute_force_minimum(NET, SPACE, 0, 1, max_sets=2), kind="size"),
    bad("brute_force_minimum", "net", lambda: brute_force_minimum(None, SPACE, 0, 1), kind="none"),
    bad(
        "brute_force_minimum",
        "space",
        lambda: brute_force_minimum(NET, _space(x_ub=X + 1), 0, 1),
        kind="feature-box",
    ),
    # margins --------------------------------------------------------------------------------------------
    bad("margins", "flip_sets", lambda: margins(NET, SPACE, np.zeros((2, S - 1), bool), 0, 1), SPACE, kind="narrow"),
    bad("margins", "flip_sets", lambda: margins(NET, SPACE, np.zeros((2, S + 3), bool), 0, 1), kind="wide"),
    bad("margins", "flip_sets", lambda: margins(NET, SPACE, np.zeros(S, bool), 0, 1), kind="ndim"),
    bad("margins", "flip_sets", lambda: margins(NET, SPACE, np.full((1, S), 0.5), 0, 1), kind="not-boolean"),
    bad("margins", "flip_sets", lambda: margins(NET, SPACE, np.full((1, S), np.nan), 0, 1), kind="nan"),
    bad("margins", "x", lambda: margins(NET, SPACE, np.zeros((1, S), bool), 0, 1, x=X[:2]), X, kind="shape"),
    bad("margins", "x", lambda: margins(NET, SPACE, np.zeros((1, S), bool), 0, 1, x=X + 5), X, kind="outside-box"),
    bad("margins", "orig", lambda: margins(NET, SPACE, np.zeros((1, S), bool), 2, 1), kind="range"),
    # AttackSpace ----------------------------------------------------------------------------------------
    bad("AttackSpace", "adj", lambda: _space(adj=np.ones((5, 4), bool)), kind="shape"),
    bad("AttackSpace", "adj", lambda: _space(adj=np.full((5, 5), np.nan)), kind="nan"),
    bad("AttackSpace", "adj", lambda: _space(adj=np.triu(np.ones((5, 5), bool), 1)), kind="asymmetric"),
    bad("AttackSpace", "local_budget", lambda: _space(local_budget=[1, 2]), kind="length"),
    bad("AttackSpace", "global_budget", lambda: _space(global_budget=-1), kind="range"),
    bad("AttackSpace", "x_ub", lambda: _space(x_ub=X - 1), kind="box"),
    bad("AttackSpace", "directed", lambda: _space(directed="no"), kind="type"),
    bad("AttackSpace", "target_node", lambda: _space(directed=True, target_node=9), kind="range"),
    # official_graph_budgets ----------------------------------------------------------------------------
    bad("official_graph_budgets", "edge_entries", lambda: official_graph_budgets(-2, [1, 1], 0.1, 2), kind="range"),
    bad("official_graph_budgets", "degrees", lambda: official_graph_budgets(2, [1.5, 0.5], 0.1, 2), kind="dtype"),
    bad("official_graph_budgets", "degrees", lambda: official_graph_budgets(2, [-1, 3], 0.1, 2), kind="negative"),
    bad("official_graph_budgets", "budget_fraction", lambda: official_graph_budgets(2, [1, 1], 5.0, 2), kind="range"),
    bad("official_graph_budgets", "strength", lambda: official_graph_budgets(2, [1, 1], 0.1, None), kind="none"),
    bad("official_graph_budgets", "degrees", lambda: official_graph_budgets(2, [[1, 1]], 0.1, 2), kind="ndim"),
    # SAGEGraphClassifier / SAGENodeClassifier --------------------------------------------------------
    bad("SAGEGraphClassifier", "in_channels", lambda: SAGEGraphClassifier(0, 2), kind="range"),
    bad("SAGEGraphClassifier", "num_classes", lambda: SAGEGraphClassifier(3, 1), kind="one-class"),
    bad("SAGEGraphClassifier", "num_layers", lambda: SAGEGraphClassifier(3, 2, num_layers=2.5), kind="type"),
    bad("SAGEGraphClassifier", "relu", lambda: SAGEGraphClassifier(3, 2, num_layers=2, relu=[True]), kind="length"),
    bad("SAGEGraphClassifier", "relu", lambda: SAGEGraphClassifier(3, 2, num_layers=1, relu="y"), kind="type"),
    bad("SAGEGraphClassifier", "dropout", lambda: SAGEGraphClassifier(3, 2, dropout=1.5), kind="range"),
    bad("SAGEGraphClassifier", "dropout", lambda: SAGEGraphClassifier(3, 2, dropout=float("nan")), kind="nan"),
    bad("SAGENodeClassifier", "in_channels", lambda: SAGENodeClassifier(None, 2), kind="none"),
    bad("SAGENodeClassifier", "num_classes", lambda: SAGENodeClassifier(3, 0), kind="range"),
    bad("SAGENodeClassifier", "hidden_channels", lambda: SAGENodeClassifier(3, 2, hidden_channels=-4), kind="range"),
    bad("SAGENodeClassifier", "num_layers", lambda: SAGENodeClassifier(3, 2, num_layers="2"), kind="type"),
    bad("SAGENodeClassifier", "relu", lambda: SAGENodeClassifier(3, 2, relu=[True, False, True]), kind="length"),
    bad("SAGENodeClassifier", "dropout", lambda: SAGENodeClassifier(3, 2, dropout=-0.1), kind="range"),
    # SageNetwork ----------------------------------------------------------------------------------------
    bad("SageNetwork", "task", lambda: _net(task="edge"), kind="name"),
    bad("SageNetwork", "sage", lambda: _net(sage=()), kind="empty"),
    bad("SageNetwork", "sage", lambda: _net(sage=(NET.sage[0], NET.sage[0], NET.sage[0])), kind="widths"),
    bad("SageNetwork", "sage", lambda: _net(sage=("layer",)), kind="type"),
    bad("SageNetwork", "dense", lambda: _net(dense=()), kind="missing-head"),
    bad("SageNetwork", "dense", lambda: _net(task="node"), kind="head-on-node-task"),
    bad(
        "SageNetwork.sage",
        "w_root",
        lambda: BAD_LAYER(np.full((2, 2), np.nan), np.ones((2, 2)), np.ones(2), True),
        kind="nan",
    ),
    bad(
        "SageNetwork.sage", "bias", lambda: BAD_LAYER(np.ones((2, 2)), np.ones((2, 2)), np.ones(3), True), kind="shape"
    ),
    # network_from_module --------------------------------------------------------------------------------
    bad("network_from_module", "model", lambda: network_from_module(None), kind="none"),
    bad("network_from_module", "model", lambda: network_from_module(GCN_MODEL), GCN_MODEL, kind="unsupported"),
    bad("network_from_module", "task", lambda: network_from_module(MODEL, task="edge"), MODEL, kind="name"),
    bad("network_from_module", "task", lambda: network_from_module(MODEL, task="node"), MODEL, kind="mismatch"),
    bad("network_from_module", "relu", lambda: network_from_module(MODEL, relu=[True]), MODEL, kind="length"),
    bad("network_from_module", "seed", lambda: network_from_module(MODEL, seed=-1), MODEL, kind="range"),
    bad("network_from_module", "check", lambda: network_from_module(MODEL, check="no"), MODEL, kind="type"),
    # module_from_network / network_to_json -------------------------------------------------------------
    bad("module_from_network", "net", lambda: module_from_network(None), kind="none"),
    bad("module_from_network", "net", lambda: module_from_network(MODEL), MODEL, kind="module"),
    bad("module_from_network", "net", lambda: module_from_network(JSON), kind="json-list"),
    bad("module_from_network", "net", lambda: module_from_network("model.json"), kind="path"),
    bad("module_from_network", "net", lambda: module_from_network(SageNetwork), kind="class"),
    bad("network_to_json", "net", lambda: network_to_json(None), kind="none"),
    bad("network_to_json", "net", lambda: network_to_json(MODEL), MODEL, kind="module"),
    bad("network_to_json", "net", lambda: network_to_json(JSON), kind="json-list"),
    bad("network_to_json", "net", lambda: network_to_json({"L": 1}), kind="dict"),
    bad("network_to_json", "net", lambda: network_to_json(3), kind="int"),
    # run_model --------------------------------------------------------------------------------------------
    bad("run_model", "model", lambda: run_model(None, X, EI, "graph"), kind="none"),
    bad("run_model", "x", lambda: run_model(MODEL, X * np.nan, EI, "graph"), MODEL, kind="nan"),
    bad("run_model", "x", lambda: run_model(MODEL, X[:, :2], EI, "graph"), MODEL, kind="width"),
    bad(
        "run_model",
        "x",
        lambda: run_model(MODEL, np.zeros((0, 3)), np.zeros((2, 0), int), "graph"),
        MODEL,
        kind="empty",
    ),
    bad("run_model", "edge_index", lambda: run_model(MODEL, X, EI + 10, "graph"), MODEL, kind="range"),
    bad("run_model", "edge_index", lambda: run_model(MODEL, X, EI[:1], "graph"), MODEL, kind="shape"),
    bad("run_model", "edge_index", lambda: run_model(MODEL, X, EI.astype(float), "graph"), MODEL, kind="dtype"),
    bad("run_model", "task", lambda: run_model(MODEL, X, EI, "edge"), MODEL, kind="name"),
    # network_from_json ----------------------------------------------------------------------------------
    bad("network_from_json", "<json>", lambda: network_from_json(None), kind="none"),
    bad("network_from_json", "<json>", lambda: network_from_json([]), kind="empty"),
    bad("network_from_json", "<json>", lambda: network_from_json([{"L": 1}, {"layer": "gcn"}]), kind="unknown-layer"),
    bad("network_from_json", "w1", lambda: network_from_json(_nan_json()), kind="nan"),
    bad("network_from_json", "path", lambda: network_from_json(JSON, path=5), JSON, kind="type"),
    # load_model_json / read_instance ---------------------------------------------------------------------
    bad("load_model_json", "path", lambda: load_model_json(None), kind="none"),
    bad("load_model_json", "path", lambda: load_model_json(""), kind="empty"),
    bad("load_model_json", "path", lambda: load_model_json("/no/such/model.json"), kind="missing"),
    bad("load_model_json", "path", lambda: load_model_json(5), kind="type"),
    bad("load_model_json", "bad.json", lambda: load_model_json(_json()), kind="malformed"),
    bad("read_instance", "path", lambda: read_instance(None), kind="none"),
    bad("read_instance", "path", lambda: read_instance(""), kind="empty"),
    bad("read_instance", "path", lambda: read_instance("/no/such/g.gcinfo"), kind="missing"),
    bad("read_instance", "path", lambda: read_instance(["g.gcinfo"]), kind="type"),
    bad("read_instance", "g.gcinfo", lambda: read_instance(_json("g.gcinfo", "3 2 7 2\n")), kind="malformed"),
    # mutag_model / mutag_instance --------------------------------------------------------------------
    bad("mutag_model", "root", lambda: mutag_model(5), kind="type"),
    bad("mutag_model", "root", lambda: mutag_model(""), kind="empty"),
    bad("mutag_model", "root", lambda: mutag_model(_json()), kind="file-not-dir"),
    bad("mutag_model", "root", lambda: mutag_model(["/tmp"]), kind="list"),
    bad("mutag_model", "root", lambda: mutag_model("a\0b"), kind="nul-byte"),
    bad("mutag_instance", "index", lambda: mutag_instance(-1), kind="range"),
    bad("mutag_instance", "index", lambda: mutag_instance(188), kind="beyond-188"),
    bad("mutag_instance", "index", lambda: mutag_instance(1.5), kind="type"),
    bad("mutag_instance", "index", lambda: mutag_instance(None), kind="none"),
    bad("mutag_instance", "root", lambda: mutag_instance(0, root=7), kind="type"),
    # issue 47 probe: budgets and SCIP limits past their ranges, the space's and network's methods, forwards
    bad("certify", "strength", lambda: certify(MODEL, DATA, strength=10**30), MODEL, DATA, kind="overflow"),
    bad("certify", "global_budget", lambda: certify(MODEL, DATA, global_budget=10**30), MODEL, kind="overflow"),
    bad("certify", "time_limit", lambda: certify(MODEL, DATA, time_limit=1e300), MODEL, kind="beyond-scip"),
    bad("certify", "threads", lambda: certify(MODEL, DATA, threads=10**6), MODEL, kind="beyond-scip"),
    bad("certify_dataset", "time_limit", lambda: certify_dataset(MODEL, [DATA], time_limit=1e300), kind="beyond-scip"),
    bad("brute_force_minimum", "space", lambda: brute_force_minimum(NODE_NET, SPACE, 0, 1), SPACE, kind="task"),
    bad("compute_bounds", "space", lambda: compute_bounds(NODE_NET, SPACE, "sbt"), SPACE, kind="task"),
    bad("AttackSpace.flipped_adj", "flips", lambda: SPACE.flipped_adj(np.zeros(S + 1, bool)), SPACE, kind="shape"),
    bad("AttackSpace.flipped_adj", "flips", lambda: SPACE.flipped_adj(None), SPACE, kind="none"),
    bad("AttackSpace.flipped_adj", "flips", lambda: SPACE.flipped_adj(np.full(S, 0.5)), SPACE, kind="not-boolean"),
    bad("AttackSpace.is_feasible", "flips", lambda: SPACE.is_feasible(np.zeros(S + 1, bool)), SPACE, kind="shape"),
    bad("AttackSpace.is_feasible", "flips", lambda: SPACE.is_feasible(np.full(S, np.nan)), SPACE, kind="nan"),
    bad("AttackSpace.flip_sets", "max_size", lambda: SPACE.flip_sets(-1), SPACE, kind="range"),
    bad("AttackSpace.flip_sets", "max_size", lambda: SPACE.flip_sets("2"), SPACE, kind="type"),
    bad("AttackSpace.count_flip_sets", "max_size", lambda: SPACE.count_flip_sets(1.5), SPACE, kind="type"),
    bad("AttackSpace.sample_flips", "rng", lambda: SPACE.sample_flips(None), SPACE, kind="none"),
    bad("AttackSpace.sample_flips", "rng", lambda: SPACE.sample_flips(2**64), SPACE, kind="seed-range"),
    bad(
        "AttackSpace.sample_flips",
        "fixed_on",
        lambda: SPACE.sample_flips(np.random.default_rng(0), fixed_on=np.zeros(S + 2, bool)),
        SPACE,
        kind="shape",
    ),
    bad(
        "AttackSpace.sample_flips",
        "fixed_off",
        lambda: SPACE.sample_flips(np.random.default_rng(0), fixed_off=np.full(S, 0.5)),
        SPACE,
        kind="not-boolean",
    ),
    bad("AttackSpace.sample_features", "rng", lambda: SPACE.sample_features(torch.Generator()), SPACE, kind="type"),
    bad("SAGEGraphClassifier.forward", "x", lambda: MODEL(torch.zeros(5, 4), DATA.edge_index), MODEL, kind="width"),
    bad("SAGEGraphClassifier.forward", "x", lambda: MODEL(None, DATA.edge_index), MODEL, kind="none"),
    bad("SAGEGraphClassifier.forward", "x", lambda: MODEL(X, DATA.edge_index), MODEL, kind="numpy"),
    bad("SAGEGraphClassifier.forward", "edge_index", lambda: MODEL(DATA.x, DATA.edge_index + 10), MODEL, kind="range"),
    bad(
        "SAGEGraphClassifier.forward",
        "edge_index",
        lambda: MODEL(DATA.x, DATA.edge_index.float()),
        MODEL,
        kind="dtype",
    ),
    bad(
        "SAGEGraphClassifier.forward",
        "batch",
        lambda: MODEL(DATA.x, DATA.edge_index, torch.zeros(2, dtype=torch.long)),
        MODEL,
        kind="shape",
    ),
    bad("SAGENodeClassifier.forward", "x", lambda: NODE_MODEL(torch.zeros(5, 4), DATA.edge_index), NODE_MODEL),
    bad("SAGENodeClassifier.forward", "edge_index", lambda: NODE_MODEL(DATA.x, DATA.edge_index - 10), NODE_MODEL),
    bad("SageNetwork.forward", "x", lambda: NET.forward(X[:, :2], ADJ), NET, kind="width"),
    bad("SageNetwork.forward", "x", lambda: NET.forward(X * np.nan, ADJ), NET, X, kind="nan"),
    bad("SageNetwork.forward", "adj", lambda: NET.forward(X, ADJ[:3]), NET, kind="shape"),
    bad("SageNetwork.forward", "adj", lambda: NET.forward(X, None), NET, kind="none"),
    bad("SageNetwork.trace", "adj", lambda: NET.trace(X, np.full((5, 5), np.nan)), NET, kind="nan"),
    bad("run_model", "task", lambda: run_model(MODEL, X, EI, "node"), MODEL, kind="graph-model"),
    bad("run_model", "task", lambda: run_model(NODE_MODEL, X, EI, "graph"), NODE_MODEL, kind="node-model"),
    bad("Certificate.from_dict", "d", lambda: gc.Certificate.from_dict(None), kind="none"),
    bad("Certificate.from_dict", "d", lambda: gc.Certificate.from_dict({"verdict": "robust"}), kind="missing"),
    bad("Certificate.from_dict", "d", lambda: gc.Certificate.from_dict({"foo": 1}), kind="name"),
    bad("Report.from_dict", "d", lambda: gc.Report.from_dict({}), kind="empty"),
    bad("Report.from_dict", "d", lambda: gc.Report.from_dict({"certificates": "x", "predicted": 0}), kind="type"),
]


def _nan_json():
    obj = json.loads(json.dumps(JSON))
    obj[1]["w1"][0][0] = float("nan")
    return obj


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_has_bad_input_cases():
    exempt = {
        "Certificate": "a plain record of a verdict, built by certify",
        "Report": "a plain record of certificates, built by certify",
        "Bounds": "a plain record of bound arrays, built by the bound functions",
        "GraphInstance": "a plain record of a parsed instance file, built by read_instance",
        "DatasetReport": "a plain record of per-graph reports, built by certify_dataset",
    }
    assert coverage_gaps(gc, CASES, exempt=exempt) == {}


def test_certify_leaves_the_model_in_its_mode():
    MODEL.train()
    certify(MODEL, DATA, global_budget=1, time_limit=5)
    assert all(m.training for m in MODEL.modules())
    MODEL.eval()
    certify(MODEL, DATA, global_budget=1, time_limit=5)
    assert not any(m.training for m in MODEL.modules())
    MODEL.train()
