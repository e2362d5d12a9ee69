"""Every public callable of icml24.graph_transformer refuses bad input with a one-line InputError naming the
argument, and leaves the objects passed in (models, Data, contexts) unchanged."""

import pytest
import torch

import icml24.graph_transformer as gt
from icml24.graph_transformer import (
    HopContext,
    ShallowGT,
    attention_stats,
    fit_gnn,
    fit_hinge,
    hop_context,
    pattern_graph,
    sample_context,
)
from icml24.graph_transformer.experiments import discriminative_fractions, label_sweep
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
DATA = pattern_graph(60, seed=0, degree=3.0)
CTX = hop_context(DATA.edge_index, 60, 3)
CTX2 = hop_context(DATA.edge_index, 60, 2)
MODEL = ShallowGT(32, 3, seed=0).eval()
SMALL = ShallowGT(16, 3, seed=0)  # feature size 16 for a graph with 32
TWO_HOP = ShallowGT(32, 2, seed=0)
VALID = DATA.valid.nonzero().flatten()
ONE_CLASS = VALID[DATA.y[VALID] == 1][:5]
X_NAN = DATA.x.clone()
X_NAN[3, 0] = NAN
DATA_NAN = DATA.clone()
DATA_NAN.x = X_NAN
EI_OUT = torch.tensor([[0, 1], [1, 99]])  # node 99 in a 60-node graph
DATA_3 = DATA.clone()
DATA_3.y = DATA.y.clone()
DATA_3.y[VALID[:3]] = torch.tensor([0, 1, 2])  # three classes among the labelled nodes
THREE = VALID[:10]
DATA_BAD_DISC = DATA.clone()
DATA_BAD_DISC.disc = DATA.disc * 5
DATA_NO_Y = DATA.clone()
del DATA_NO_Y.y
DATA_BAD_CORE = DATA.clone()
DATA_BAD_CORE.core_dist = "two"
DATA_NEG_EDGE = DATA.clone()
DATA_NEG_EDGE.edge_index = torch.tensor([[0, -1], [1, 0]])
L = torch.tensor  # short for the HopContext cases


def fit(**kw):
    return fit_hinge(MODEL, DATA, VALID[:10], **{"context": CTX, "steps": 2, **kw})


CASES = [
    # ------------------------------------------------------------------------------ ShallowGT
    bad("ShallowGT", "hops", lambda: ShallowGT(32, 0), kind="range"),
    bad("ShallowGT", "in_channels", lambda: ShallowGT(2.5), kind="type"),
    bad("ShallowGT", "pe", lambda: ShallowGT(32, pe="learned"), kind="name"),
    bad("ShallowGT", "attention", lambda: ShallowGT(32, attention=None), kind="none"),
    bad("ShallowGT", "init_scale", lambda: ShallowGT(32, init_scale=NAN), kind="nan"),
    bad("ShallowGT", "hidden", lambda: ShallowGT(32, hidden=-1), kind="range"),
    bad("ShallowGT.forward", "features", lambda: SMALL(DATA.x, CTX), SMALL, DATA, kind="shape"),
    bad("ShallowGT.forward", "x", lambda: MODEL(X_NAN, CTX), MODEL, kind="nan"),
    bad("ShallowGT.forward", "context", lambda: MODEL(DATA.x, DATA.edge_index), MODEL, kind="type"),
    bad("ShallowGT.forward", "hops", lambda: TWO_HOP(DATA.x, CTX), TWO_HOP, kind="shape"),
    bad("ShallowGT.forward", "nodes", lambda: MODEL(DATA.x, CTX, torch.tensor([0, 60])), MODEL, kind="range"),
    bad(
        "ShallowGT.forward",
        "nodes",
        lambda: MODEL(DATA.x, CTX, torch.tensor([], dtype=torch.long)),
        MODEL,
        kind="empty",
    ),
    bad("ShallowGT", "seed", lambda: ShallowGT(32, seed=2**64), kind="range"),
    bad("ShallowGT.attend", "x", lambda: MODEL.attend(DATA.x[:, :5], CTX), MODEL, kind="shape"),
    bad("ShallowGT.attend", "x", lambda: MODEL.attend(X_NAN, CTX), MODEL, kind="nan"),
    bad("ShallowGT.attend", "x", lambda: MODEL.attend(DATA.x.tolist(), CTX), MODEL, kind="type"),
    bad("ShallowGT.attend", "context", lambda: MODEL.attend(DATA.x, None), MODEL, kind="none"),
    bad("ShallowGT.attend", "hops", lambda: TWO_HOP.attend(DATA.x, CTX), TWO_HOP, kind="range"),
    # ------------------------------------------------------------------------------ HopContext
    bad("HopContext", "target", lambda: HopContext(L([1, 0]), L([0, 1]), L([0, 0]), 2, 1), kind="unsorted"),
    bad("HopContext", "target", lambda: HopContext(None, L([0]), L([0]), 1, 1), kind="none"),
    bad("HopContext", "dist", lambda: HopContext(L([0, 1]), L([0, 1]), L([0, 2]), 2, 1), kind="range"),
    bad("HopContext", "source", lambda: HopContext(L([0, 1]), L([0, 5]), L([0, 0]), 2, 1), kind="range"),
    bad("HopContext", "dist", lambda: HopContext(L([0, 1]), L([0, 1]), L([0]), 2, 1), kind="shape"),
    bad("HopContext", "source", lambda: HopContext(L([0]), L([0.0]), L([0]), 1, 1), kind="dtype"),
    bad("HopContext", "num_nodes", lambda: HopContext(L([0]), L([0]), L([0]), 0, 1), kind="range"),
    bad("HopContext.restrict", "nodes", lambda: CTX.restrict(L([60])), CTX, kind="range"),
    bad("HopContext.restrict", "nodes", lambda: CTX.restrict(L([-1])), CTX, kind="range"),
    bad("HopContext.restrict", "nodes", lambda: CTX.restrict(L([1.0])), CTX, kind="dtype"),
    bad("HopContext.restrict", "nodes", lambda: CTX.restrict([1]), CTX, kind="type"),
    bad("HopContext.restrict", "nodes", lambda: CTX.restrict(L([], dtype=torch.long)), CTX, kind="empty"),
    # ------------------------------------------------------------------------------ fit_hinge
    bad("fit_hinge", "one class", lambda: fit_hinge(MODEL, DATA, ONE_CLASS, context=CTX), MODEL, DATA, kind="value"),
    bad("fit_hinge", "features", lambda: fit_hinge(SMALL, DATA, VALID[:10]), SMALL, DATA, kind="shape"),
    bad("fit_hinge", "model", lambda: fit_hinge(torch.nn.Linear(2, 2), DATA, VALID[:10]), DATA, kind="type"),
    bad("fit_hinge", "data", lambda: fit_hinge(MODEL, {"x": DATA.x}, VALID[:10]), MODEL, kind="type"),
    bad("fit_hinge", "data.x", lambda: fit_hinge(MODEL, DATA_NAN, VALID[:10]), MODEL, kind="nan"),
    bad("fit_hinge", "lr", lambda: fit(lr=0.0), MODEL, DATA, kind="range"),
    bad("fit_hinge", "steps", lambda: fit(steps=None), MODEL, DATA, kind="none"),
    bad("fit_hinge", "train_idx", lambda: fit_hinge(MODEL, DATA, VALID[:10].float()), MODEL, kind="dtype"),
    bad("fit_hinge", "monitor", lambda: fit(monitor=torch.tensor([70])), MODEL, DATA, kind="range"),
    bad("fit_hinge", "data.y", lambda: fit_hinge(MODEL, DATA_3, THREE, context=CTX), MODEL, DATA_3, kind="value"),
    bad(
        "fit_hinge",
        "data.y",
        lambda: fit_hinge(MODEL, DATA_3, VALID[3:], context=CTX, monitor=THREE[:3]),
        MODEL,
        DATA_3,
        kind="value",
    ),
    bad("fit_hinge", "seed", lambda: fit(seed=2**64), MODEL, DATA, kind="range"),
    # ------------------------------------------------------------------------------ attention_stats
    bad("attention_stats", "model", lambda: attention_stats(None, DATA, VALID), DATA, kind="none"),
    bad("attention_stats", "data.disc", lambda: attention_stats(MODEL, DATA_BAD_DISC, VALID), MODEL, kind="range"),
    bad("attention_stats", "data.core_dist", lambda: attention_stats(MODEL, DATA_BAD_CORE, VALID), MODEL, kind="type"),
    bad("attention_stats", "data.y", lambda: attention_stats(MODEL, DATA_NO_Y, VALID), MODEL, kind="none"),
    bad("attention_stats", "data.y", lambda: attention_stats(MODEL, DATA_3, THREE), MODEL, DATA_3, kind="value"),
    bad("attention_stats", "nodes", lambda: attention_stats(MODEL, DATA, torch.tensor([-1])), MODEL, kind="range"),
    bad("attention_stats", "nodes", lambda: attention_stats(MODEL, DATA, VALID[None]), MODEL, kind="shape"),
    bad("attention_stats", "features", lambda: attention_stats(SMALL, DATA, VALID), SMALL, kind="shape"),
    bad("attention_stats", "context", lambda: attention_stats(MODEL, DATA, VALID, context=5), MODEL, kind="type"),
    # ------------------------------------------------------------------------------ hop_context
    bad("hop_context", "hops", lambda: hop_context(DATA.edge_index, 60, 0), DATA, kind="range"),
    bad("hop_context", "edge_index", lambda: hop_context(EI_OUT, 60, 2), kind="range"),
    bad("hop_context", "edge_index", lambda: hop_context(DATA.edge_index.T, 60, 2), kind="shape"),
    bad("hop_context", "edge_index", lambda: hop_context(DATA.edge_index.float(), 60, 2), kind="dtype"),
    bad("hop_context", "num_nodes", lambda: hop_context(DATA.edge_index, None, 2), kind="none"),
    bad("hop_context", "edge_index", lambda: hop_context([[0, 1], [1, 0]], 60, 2), kind="type"),
    # ------------------------------------------------------------------------------ sample_context
    bad("sample_context", "per_hop", lambda: sample_context(CTX, 0), CTX, kind="range"),
    bad("sample_context", "context", lambda: sample_context(DATA, 2), DATA, kind="type"),
    bad("sample_context", "hop_weights", lambda: sample_context(CTX, 2, hop_weights=torch.ones(2)), CTX, kind="shape"),
    bad("sample_context", "hop_weights", lambda: sample_context(CTX, 2, hop_weights=torch.zeros(3)), CTX, kind="value"),
    bad(
        "sample_context",
        "hop_weights",
        lambda: sample_context(CTX, 2, hop_weights=torch.tensor([1.0, NAN, 1.0])),
        CTX,
        kind="nan",
    ),
    bad("sample_context", "seed", lambda: sample_context(CTX, 2, seed=-3), CTX, kind="range"),
    bad(
        "sample_context",
        "hop_weights",
        lambda: sample_context(CTX, 2, hop_weights=torch.full((3,), 1e308, dtype=torch.float64)),
        CTX,
        kind="overflow",
    ),
    # ------------------------------------------------------------------------------ pattern_graph
    bad("pattern_graph", "gamma_d", lambda: pattern_graph(50, gamma_d=0.0), kind="range"),
    bad("pattern_graph", "gamma_d", lambda: pattern_graph(50, gamma_d=1.5), kind="range"),
    bad("pattern_graph", "core_dist", lambda: pattern_graph(50, core_dist=4, hops=3), kind="range"),
    bad("pattern_graph", "dim", lambda: pattern_graph(50, dim=5, num_patterns=8), kind="shape"),
    bad("pattern_graph", "tau", lambda: pattern_graph(50, tau=NAN), kind="nan"),
    bad("pattern_graph", "num_nodes", lambda: pattern_graph("50"), kind="type"),
    bad("pattern_graph", "hops", lambda: pattern_graph(50, hops=0), kind="range"),
    # ------------------------------------------------------------------------------ fit_gnn
    bad("fit_gnn", "kind", lambda: fit_gnn(DATA, VALID[:10], kind="gat"), DATA, kind="name"),
    bad("fit_gnn", "one class", lambda: fit_gnn(DATA, ONE_CLASS), DATA, kind="value"),
    bad("fit_gnn", "data.x", lambda: fit_gnn(DATA_NAN, VALID[:10]), DATA_NAN, kind="nan"),
    bad("fit_gnn", "train_idx", lambda: fit_gnn(DATA, torch.tensor([], dtype=torch.long)), DATA, kind="empty"),
    bad("fit_gnn", "data", lambda: fit_gnn(None, VALID[:10]), kind="none"),
    bad("fit_gnn", "epochs", lambda: fit_gnn(DATA, VALID[:10], epochs=0), DATA, kind="range"),
    bad("fit_gnn", "lr", lambda: fit_gnn(DATA, VALID[:10], lr=NAN), DATA, kind="nan"),
    bad("fit_gnn", "hidden", lambda: fit_gnn(DATA, VALID[:10], kind="gps", hidden=30), DATA, kind="range"),
    bad("fit_gnn", "seed", lambda: fit_gnn(DATA, VALID[:10], seed=2**64), DATA, kind="range"),
    bad("fit_gnn", "data.edge_index", lambda: fit_gnn(DATA_NEG_EDGE, VALID[:10]), DATA_NEG_EDGE, kind="range"),
    # ------------------------------------------------------------------------------ label_sweep (the CLI's sweep)
    bad("label_sweep", "data", lambda: label_sweep("citeseer", [20]), kind="name"),
    bad("label_sweep", "labels", lambda: label_sweep("pattern", "20"), kind="type"),
    bad("label_sweep", "labels", lambda: label_sweep("pattern", [1]), kind="range"),
    bad("label_sweep", "labels", lambda: label_sweep("pattern", []), kind="empty"),
    bad("label_sweep", "steps", lambda: label_sweep("pattern", [16], steps=None), kind="none"),
    bad("label_sweep", "seed", lambda: label_sweep("pattern", [16], seed=-1), kind="range"),
    bad("label_sweep", "labels", lambda: label_sweep("pattern", [16.5]), kind="type"),
    bad("label_sweep", "peers", lambda: label_sweep("pattern", [16], peers=("gat",)), kind="name"),
    bad("label_sweep", "peers", lambda: label_sweep("pattern", [16], peers="gcn"), kind="type"),
    bad(
        "discriminative_fractions",
        "y",
        lambda: discriminative_fractions(torch.ones(4, 3), torch.zeros(4).long()),
        kind="one-class",
    ),
    bad(
        "discriminative_fractions",
        "y",
        lambda: discriminative_fractions(torch.ones(4, 3), torch.zeros(3).long()),
        kind="shape",
    ),
    bad("discriminative_fractions", "x", lambda: discriminative_fractions(torch.ones(4), torch.arange(4)), kind="ndim"),
    bad(
        "discriminative_fractions",
        "rule",
        lambda: discriminative_fractions(torch.ones(4, 3), torch.arange(4) % 2, rule="mean"),
        kind="name",
    ),
    bad(
        "discriminative_fractions",
        "x",
        lambda: discriminative_fractions(torch.full((4, 3), float("nan")), torch.arange(4) % 2),
        kind="nan",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    exempt = {"History": "a plain record returned by fit_hinge"}
    assert coverage_gaps(gt, CASES, exempt=exempt) == {}
