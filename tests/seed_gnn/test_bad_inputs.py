"""Bad input to every public callable of seed_gnn: a one-line InputError naming the argument, and the user's
objects (GNN, graph, editors) exactly as they were."""

import copy
import tempfile
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data

import icml24.seed_gnn
from icml24.data import csbm
from icml24.nn import build_backbone, pretrain_inductive
from icml24.seed_gnn import (
    EditRecord,
    EGNNEditor,
    FineTuneEditor,
    GnnMlpEditor,
    GREEditor,
    SeedGNNEditor,
    SequentialEditor,
    load_graph,
    make_editor,
    per_class_split,
    pretrained,
    rewire,
    run_editors,
    select_targets,
    summarize,
)
from icml24.seed_gnn.workflow import train_rest_split
from icml24.testing import assert_refuses, bad, coverage_gaps

torch.set_num_threads(1)
DATA = train_rest_split(
    csbm(
        40,
        n_classes=3,
        avg_degree=4.0,
        homophily=0.8,
        snr=0.6,
        n_features=8,
        num_train_per_class=0,
        num_val=0,
        num_test=0,
        seed=0,
    ),
    8,
    8,
    seed=0,
)
GNN = build_backbone("gcn", 8, 3, hidden_channels=8, seed=0)
pretrain_inductive(GNN, DATA, epochs=3, seed=0)
GNN.train()  # the user's model in training mode: every call must leave it so
FAST = dict(warmup_iters=2, max_steps=3)
ED = SeedGNNEditor(GNN, DATA, beta=6, **FAST)
ED.edit(0, (int(DATA.y[0]) + 1) % 3)  # one edit made: undo and history have something to lose
EG = EGNNEditor(GNN, DATA, **FAST)
FT = FineTuneEditor(GNN, DATA, max_steps=2)
GRE = GREEditor(GNN, DATA, max_steps=2)
RECS = list(ED.log)
TMP = Path(tempfile.mkdtemp(prefix="seed-gnn-bad-"))
NOT_A_DIR = TMP / "file.txt"
NOT_A_DIR.write_text("not a folder")
GARBAGE = TMP / "garbage.pt"
GARBAGE.write_bytes(b"not a torch file")


def _data(**changes):
    """A copy of DATA with some attributes replaced (None deletes)."""
    d = copy.copy(DATA)
    for k, v in changes.items():
        if v is None:
            del d[k]
        else:
            d[k] = v
    return d


NAN_X = _data(x=torch.full_like(DATA.x, float("nan")))
SHORT_Y = _data(y=DATA.y[:-3])
FLOAT_Y = _data(y=DATA.y.float())
NO_TRAIN = _data(train_mask=torch.zeros(40, dtype=torch.bool))
BAD_EDGES = _data(edge_index=torch.tensor([[0, 1], [1, 99]]))
WIDE_X = _data(x=torch.rand(40, 5))
NO_X = _data(x=None)
EMPTY = Data(
    x=torch.zeros(0, 8),
    edge_index=torch.zeros(2, 0, dtype=torch.long),
    y=torch.zeros(0, dtype=torch.long),
    train_mask=torch.zeros(0, dtype=torch.bool),
    val_mask=torch.zeros(0, dtype=torch.bool),
    test_mask=torch.zeros(0, dtype=torch.bool),
)
TEN = Data(  # two classes of five nodes
    x=torch.rand(10, 4),
    edge_index=torch.tensor([[0, 1], [1, 0]]),
    y=torch.tensor([0] * 5 + [1] * 5),
    train_mask=torch.ones(10, dtype=torch.bool),
)
NO_VAL = _data(val_mask=torch.zeros(40, dtype=torch.bool))
ONE_CLASS = _data(y=torch.zeros(40, dtype=torch.long))
GNN2 = build_backbone("gcn", 8, 2, hidden_channels=8, seed=0)  # two classes for DATA's three
HUGE = 2**70
OTHER_SD = GREEditor(GNN, _data(train_mask=DATA.train_mask & (torch.arange(40) < 20)), max_steps=2).state_dict()
W = (GNN, DATA)  # watched in every case that takes them


def _editor_cases(name, cls, extra=None):
    """The constructor's cases shared by every editor class."""
    extra = extra or {}
    return [
        bad(name, "gnn", lambda: cls(None, DATA, **extra), DATA, kind="none"),
        bad(name, "gnn", lambda: cls("gcn", DATA, **extra), DATA, kind="type"),
        bad(name, "data", lambda: cls(GNN, None, **extra), GNN, kind="none"),
        bad(name, "data", lambda: cls(GNN, DATA.x, **extra), *W, kind="type"),
        bad(name, "data.x", lambda: cls(GNN, NAN_X, **extra), GNN, NAN_X, kind="nan"),
        bad(name, "data.x", lambda: cls(GNN, NO_X, **extra), GNN, kind="none"),
        bad(name, "data.y", lambda: cls(GNN, SHORT_Y, **extra), GNN, SHORT_Y, kind="shape"),
        bad(name, "data.y", lambda: cls(GNN, FLOAT_Y, **extra), GNN, FLOAT_Y, kind="dtype"),
        bad(name, "data.edge_index", lambda: cls(GNN, BAD_EDGES, **extra), GNN, BAD_EDGES, kind="range"),
        bad(name, "data.x", lambda: cls(GNN, WIDE_X, **extra), GNN, WIDE_X, kind="shape"),
        bad(name, "data", lambda: cls(GNN, EMPTY, **extra), GNN, EMPTY, kind="empty"),
        bad(name, "lr", lambda: cls(GNN, DATA, **{**extra, "lr": -1.0}), *W, kind="range"),
        bad(name, "lr", lambda: cls(GNN, DATA, **{**extra, "lr": float("nan")}), *W, kind="nan"),
        bad(name, "max_steps", lambda: cls(GNN, DATA, **{**extra, "max_steps": 0}), *W, kind="range"),
        bad(name, "max_steps", lambda: cls(GNN, DATA, **{**extra, "max_steps": 2.5}), *W, kind="type"),
    ]


def _mlp_editor_cases(name, cls, extra=None):
    extra = extra or {}
    return _editor_cases(name, cls, extra) + [
        bad(name, "data.train_mask", lambda: cls(GNN, NO_TRAIN, **extra), GNN, NO_TRAIN, kind="empty"),
        bad(name, "mlp_dropout", lambda: cls(GNN, DATA, **{**extra, "mlp_dropout": 1.0}), *W, kind="range"),
        bad(name, "mlp_dropout", lambda: cls(GNN, DATA, **{**extra, "mlp_dropout": float("inf")}), *W, kind="nan"),
        bad(name, "mlp_hidden", lambda: cls(GNN, DATA, **{**extra, "mlp_hidden": 0}), *W, kind="range"),
        bad(name, "mlp_layers", lambda: cls(GNN, DATA, **{**extra, "mlp_layers": "2"}), *W, kind="type"),
        bad(name, "warmup_iters", lambda: cls(GNN, DATA, **{**extra, "warmup_iters": -1}), *W, kind="range"),
        bad(name, "warmup_batch", lambda: cls(GNN, DATA, **{**extra, "warmup_batch": 0}), *W, kind="range"),
        bad(name, "seed", lambda: cls(GNN, DATA, **{**extra, "seed": -1}), *W, kind="range"),
        bad(name, "fast", lambda: cls(GNN, DATA, **{**extra, "fast": "yes"}), *W, kind="type"),
        bad(name, "inference_batch", lambda: cls(GNN, DATA, **{**extra, "inference_batch": 0}), *W, kind="range"),
    ]


def _method_cases(name, ed):
    """Bad calls of the methods every editor has, on a live editor that must not change."""
    n = DATA.num_nodes
    return [
        bad(f"{name}.edit", "node", lambda: ed.edit(n, 0), ed, kind="range"),
        bad(f"{name}.edit", "node", lambda: ed.edit(-1, 0), ed, kind="range"),
        bad(f"{name}.edit", "node", lambda: ed.edit("3", 0), ed, kind="type"),
        bad(f"{name}.edit", "node", lambda: ed.edit(None, 0), ed, kind="none"),
        bad(f"{name}.edit", "node", lambda: ed.edit(torch.tensor([1, 2]), 0), ed, kind="shape"),
        bad(f"{name}.edit", "node", lambda: ed.edit(float("nan"), 0), ed, kind="nan"),
        bad(f"{name}.edit", "label", lambda: ed.edit(1, 3), ed, kind="range"),
        bad(f"{name}.edit_many", "labels", lambda: ed.edit_many([1, 2], [0]), ed, kind="size"),
        bad(f"{name}.edit_many", "node", lambda: ed.edit_many([1, n + 5], [0, 0]), ed, kind="range"),
        bad(f"{name}.edit_many", "label", lambda: ed.edit_many([1, 2], [0, -1]), ed, kind="range"),
        bad(f"{name}.edit_many", "nodes", lambda: ed.edit_many(None, [0]), ed, kind="none"),
        bad(f"{name}.edit_many", "nodes", lambda: ed.edit_many(5, 0), ed, kind="type"),
        bad(f"{name}.edit_many", "progress", lambda: ed.edit_many([1], [0], progress="yes"), ed, kind="type"),
        bad(f"{name}.undo", "to_edit", lambda: ed.undo(len(ed.log) + 1), ed, kind="range"),
        bad(f"{name}.undo", "to_edit", lambda: ed.undo(-1), ed, kind="range"),
        bad(f"{name}.undo", "to_edit", lambda: ed.undo("0"), ed, kind="type"),
        bad(f"{name}.save", "path", lambda: ed.save(None), ed, kind="none"),
        bad(f"{name}.save", "path", lambda: ed.save(3), ed, kind="type"),
        bad(f"{name}.save", "path", lambda: ed.save(""), ed, kind="empty"),
        bad(f"{name}.save", "path", lambda: ed.save(TMP), ed, kind="dir"),
        bad(f"{name}.save", "path", lambda: ed.save(NOT_A_DIR / "ed.pt"), ed, kind="parent"),
        bad(f"{name}.load", "path", lambda: ed.load(None), ed, kind="none"),
        bad(f"{name}.load", "path", lambda: ed.load(TMP / "missing.pt"), ed, kind="missing"),
        bad(f"{name}.load", "path", lambda: ed.load(GARBAGE), ed, kind="garbage"),
        bad(f"{name}.load", "path", lambda: ed.load(""), ed, kind="empty"),
        bad(f"{name}.load_state_dict", "sd", lambda: ed.load_state_dict(None), ed, kind="none"),
        bad(f"{name}.load_state_dict", "sd", lambda: ed.load_state_dict({}), ed, kind="empty"),
        bad(f"{name}.load_state_dict", "sd", lambda: ed.load_state_dict(OTHER_SD), ed, kind="other"),
        bad(
            f"{name}.load_state_dict",
            "sd",
            lambda: ed.load_state_dict({**ed.state_dict(), "state": {}}),
            ed,
            kind="broken",
        ),
        bad(
            f"{name}.accuracy_from",
            "pred",
            lambda: ed.accuracy_from(torch.zeros(3, dtype=torch.long)),
            ed,
            kind="shape",
        ),
        bad(f"{name}.accuracy_from", "pred", lambda: ed.accuracy_from(None), ed, kind="none"),
        bad(f"{name}.accuracy_from", "pred", lambda: ed.accuracy_from(torch.zeros(n)), ed, kind="dtype"),
        bad(f"{name}.accuracy_from", "pred", lambda: ed.accuracy_from(torch.full((n,), 7)), ed, kind="class-range"),
        bad(
            f"{name}.accuracy_from", "pred", lambda: ed.accuracy_from(-torch.ones(n, dtype=torch.long)), ed, kind="neg"
        ),
        bad(f"{name}.check_target", "node", lambda: ed.check_target(1.5, 0), ed, kind="type"),
        bad(f"{name}.check_target", "label", lambda: ed.check_target(1, None), ed, kind="none"),
    ]


CASES = [
    *_mlp_editor_cases("SeedGNNEditor", SeedGNNEditor, {"warmup_iters": 2}),
    bad("SeedGNNEditor", "alpha", lambda: SeedGNNEditor(GNN, DATA, alpha=1.5), *W, kind="range"),
    bad("SeedGNNEditor", "alpha", lambda: SeedGNNEditor(GNN, DATA, alpha=float("nan")), *W, kind="nan"),
    bad("SeedGNNEditor", "beta", lambda: SeedGNNEditor(GNN, DATA, beta=-1), *W, kind="range"),
    bad("SeedGNNEditor", "seed", lambda: SeedGNNEditor(GNN, DATA, seed=HUGE), *W, kind="beyond-generator"),
    bad("SeedGNNEditor", "official_neighbor_quirk", lambda: SeedGNNEditor(GNN, DATA, official_neighbor_quirk=1), *W),
    *_method_cases("SeedGNNEditor", ED),
    *_mlp_editor_cases("GnnMlpEditor", GnnMlpEditor, {"lr": 1e-3, "warmup_iters": 2}),
    bad("GnnMlpEditor", "replay", lambda: GnnMlpEditor(GNN, DATA, lr=1e-3, replay=None), *W, kind="none"),
    bad("GnnMlpEditor", "lr", lambda: GnnMlpEditor(GNN, DATA, lr=None), *W, kind="none"),
    *_mlp_editor_cases("EGNNEditor", EGNNEditor, {"warmup_iters": 2}),
    *_method_cases("EGNNEditor", EG),
    *_editor_cases("FineTuneEditor", FineTuneEditor),
    bad("FineTuneEditor", "hops", lambda: FineTuneEditor(GNN, DATA, hops=-1), *W, kind="range"),
    bad("FineTuneEditor", "hops", lambda: FineTuneEditor(GNN, DATA, hops="2"), *W, kind="type"),
    *_method_cases("FineTuneEditor", FT),
    *_editor_cases("GREEditor", GREEditor),
    bad("GREEditor", "data.train_mask", lambda: GREEditor(GNN, NO_TRAIN), GNN, NO_TRAIN, kind="empty"),
    bad("GREEditor", "gamma", lambda: GREEditor(GNN, DATA, gamma=-1.0), *W, kind="range"),
    bad("GREEditor", "gamma", lambda: GREEditor(GNN, DATA, gamma=float("inf")), *W, kind="nan"),
    bad("GREEditor", "splits", lambda: GREEditor(GNN, DATA, splits=0), *W, kind="range"),
    bad("GREEditor", "splits", lambda: GREEditor(GNN, DATA, splits=10**6), *W, kind="range"),
    bad("GREEditor", "official_quirk", lambda: GREEditor(GNN, DATA, official_quirk="no"), *W, kind="type"),
    *_method_cases("GREEditor", GRE),
    bad("SequentialEditor", "gnn", lambda: SequentialEditor(None, DATA), DATA, kind="none"),
    bad("SequentialEditor", "data", lambda: SequentialEditor(GNN, None), GNN, kind="none"),
    bad("SequentialEditor", "data.x", lambda: SequentialEditor(GNN, NAN_X), GNN, NAN_X, kind="nan"),
    bad("SequentialEditor", "data.y", lambda: SequentialEditor(GNN, SHORT_Y), GNN, SHORT_Y, kind="shape"),
    bad("SequentialEditor", "inference_batch", lambda: SequentialEditor(GNN, DATA, inference_batch=-2), *W),
    bad(
        "SequentialEditor", "inference_batch", lambda: SequentialEditor(torch.nn.Linear(8, 3), DATA, inference_batch=4)
    ),
    bad("SequentialEditor", "data", lambda: SequentialEditor(GNN, EMPTY), GNN, EMPTY, kind="empty"),
    # rewire
    bad("rewire", "grad_target", lambda: rewire(None, torch.ones(2, 3)), kind="none"),
    bad("rewire", "grad_target", lambda: rewire([1.0, 2.0, 3.0], torch.ones(2, 3)), kind="type"),
    bad("rewire", "anchors", lambda: rewire(torch.ones(3), torch.ones(2, 4)), kind="shape"),
    bad("rewire", "anchors", lambda: rewire(torch.ones(3), torch.ones(2, 3, 1)), kind="shape"),
    bad("rewire", "anchors", lambda: rewire(torch.ones(3), torch.zeros(0, 3)), kind="empty"),
    bad("rewire", "anchors", lambda: rewire(torch.ones(3), torch.tensor([[1.0, float("nan"), 0.0]])), kind="nan"),
    bad("rewire", "grad_target", lambda: rewire(torch.tensor([1.0, float("inf"), 0.0]), torch.ones(1, 3)), kind="nan"),
    bad("rewire", "grad_target", lambda: rewire(torch.ones(3, dtype=torch.long), torch.ones(1, 3)), kind="dtype"),
    bad("rewire", "gamma", lambda: rewire(torch.ones(3), torch.ones(1, 3), gamma=-0.5), kind="range"),
    bad("rewire", "gamma", lambda: rewire(torch.ones(3), torch.ones(1, 3), gamma=float("nan")), kind="nan"),
    bad("rewire", "anchors", lambda: rewire(torch.ones(3), torch.ones(2, 3, dtype=torch.long)), kind="dtype"),
    # summarize
    bad("summarize", "records", lambda: summarize(None), kind="none"),
    bad("summarize", "records", lambda: summarize([1, 2]), kind="type"),
    bad("summarize", "records", lambda: summarize(RECS[0]), RECS, kind="type"),
    bad("summarize", "checkpoints", lambda: summarize(RECS, checkpoints=[0]), RECS, kind="range"),
    bad("summarize", "checkpoints", lambda: summarize(RECS, checkpoints=[-2]), RECS, kind="range"),
    bad("summarize", "checkpoints", lambda: summarize(RECS, checkpoints="1"), RECS, kind="type"),
    bad("summarize", "checkpoints", lambda: summarize(RECS, checkpoints=None), RECS, kind="none"),
    bad("summarize", "checkpoints", lambda: summarize(RECS, checkpoints=[float("nan")]), RECS, kind="nan"),
    # load_graph
    bad("load_graph", "name", lambda: load_graph("coraa"), kind="name"),
    bad("load_graph", "name", lambda: load_graph(None), kind="none"),
    bad("load_graph", "name", lambda: load_graph(3), kind="type"),
    bad("load_graph", "name", lambda: load_graph(NAN_X), NAN_X, kind="nan"),
    bad("load_graph", "name", lambda: load_graph(SHORT_Y), SHORT_Y, kind="shape"),
    bad("load_graph", "name", lambda: load_graph(EMPTY), EMPTY, kind="empty"),
    bad("load_graph", "num_val", lambda: load_graph("csbm", num_val=-5, csbm_nodes=100), kind="range"),
    bad("load_graph", "num_val", lambda: load_graph(DATA, num_val=-5, split="train_rest"), DATA, kind="range"),
    bad(
        "load_graph",
        "num_test",
        lambda: load_graph(DATA, num_val=5, num_test=36, split="train_rest"),
        DATA,
        kind="range",
    ),
    bad("load_graph", "num_test", lambda: load_graph("csbm", num_test="5", csbm_nodes=100), kind="type"),
    bad("load_graph", "num_val", lambda: load_graph("csbm", num_val=float("nan"), csbm_nodes=100), kind="nan"),
    bad("load_graph", "seed", lambda: load_graph("csbm", seed=-1, csbm_nodes=100), kind="range"),
    bad("load_graph", "csbm_nodes", lambda: load_graph("csbm", csbm_nodes=2), kind="range"),
    bad("load_graph", "split", lambda: load_graph("csbm", split="random", csbm_nodes=100), kind="name"),
    # per_class_split (replaces the masks of its argument by design: checks come first)
    bad("per_class_split", "data", lambda: per_class_split(None), kind="none"),
    bad("per_class_split", "data", lambda: per_class_split("cora"), kind="type"),
    bad("per_class_split", "data.y", lambda: per_class_split(FLOAT_Y), FLOAT_Y, kind="dtype"),
    bad("per_class_split", "data.y", lambda: per_class_split(SHORT_Y), SHORT_Y, kind="shape"),
    bad("per_class_split", "data.y", lambda: per_class_split(EMPTY), EMPTY, kind="empty"),
    bad("per_class_split", "data.y", lambda: per_class_split(_data(y=DATA.y - 5)), kind="range"),
    bad("per_class_split", "num_train_per_class", lambda: per_class_split(DATA, 0), DATA, kind="range"),
    bad("per_class_split", "num_val_per_class", lambda: per_class_split(DATA, 2, -1), DATA, kind="range"),
    bad("per_class_split", "num_val_per_class", lambda: per_class_split(DATA, 2, 1.5), DATA, kind="type"),
    bad("per_class_split", "seed", lambda: per_class_split(DATA, seed=None), DATA, kind="none"),
    bad("per_class_split", "seed", lambda: per_class_split(DATA, seed=HUGE), DATA, kind="beyond-generator"),
    # issue 47: 10 nodes with 5 training per class gave a 10/0/0 split silently
    bad("per_class_split", "num_train_per_class", lambda: per_class_split(TEN, 5, 1), TEN, kind="no-val-no-test"),
    bad("per_class_split", "num_train_per_class", lambda: per_class_split(TEN, 4, 1), TEN, kind="no-test"),
    bad("load_graph", "num_train_per_class", lambda: load_graph(TEN, split="per_class"), TEN, kind="too-small"),
    bad("load_graph", "seed", lambda: load_graph("csbm", seed=HUGE, csbm_nodes=100), kind="beyond-generator"),
    # pretrained
    bad("pretrained", "model", lambda: pretrained("gat", DATA, epochs=1), DATA, kind="name"),
    bad("pretrained", "model", lambda: pretrained(None, DATA, epochs=1), DATA, kind="none"),
    bad("pretrained", "model", lambda: pretrained(GNN, DATA, epochs=1), *W, kind="type"),
    bad("pretrained", "epochs", lambda: pretrained("gcn", DATA, epochs=0), DATA, kind="range"),
    bad("pretrained", "epochs", lambda: pretrained("gcn", DATA, epochs=-3), DATA, kind="range"),
    bad("pretrained", "epochs", lambda: pretrained("gcn", DATA, epochs=2.0), DATA, kind="type"),
    bad("pretrained", "seed", lambda: pretrained("gcn", DATA, seed=-1, epochs=1), DATA, kind="range"),
    bad("pretrained", "data", lambda: pretrained("gcn", None, epochs=1), kind="none"),
    bad("pretrained", "data.x", lambda: pretrained("gcn", NAN_X, epochs=1), NAN_X, kind="nan"),
    bad("pretrained", "data", lambda: pretrained("gcn", EMPTY, epochs=1), EMPTY, kind="empty"),
    bad("pretrained", "data.y", lambda: pretrained("gcn", _data(y=DATA.y - 5), epochs=1), kind="range"),
    bad("pretrained", "data.val_mask", lambda: pretrained("gcn", NO_VAL, epochs=1), NO_VAL, kind="empty"),
    bad("pretrained", "data.y", lambda: pretrained("gcn", ONE_CLASS, epochs=1), ONE_CLASS, kind="one-class"),
    bad("pretrained", "seed", lambda: pretrained("gcn", DATA, seed=HUGE, epochs=1), DATA, kind="beyond-generator"),
    # select_targets
    bad("select_targets", "gnn", lambda: select_targets(None, DATA), DATA, kind="none"),
    bad("select_targets", "gnn", lambda: select_targets("gcn", DATA), DATA, kind="type"),
    bad("select_targets", "data", lambda: select_targets(GNN, None), GNN, kind="none"),
    bad("select_targets", "data.x", lambda: select_targets(GNN, NAN_X), GNN, NAN_X, kind="nan"),
    bad("select_targets", "data.x", lambda: select_targets(GNN, WIDE_X), GNN, WIDE_X, kind="shape"),
    bad("select_targets", "data", lambda: select_targets(GNN, EMPTY), GNN, EMPTY, kind="empty"),
    bad("select_targets", "num", lambda: select_targets(GNN, DATA, -1), *W, kind="range"),
    bad("select_targets", "num", lambda: select_targets(GNN, DATA, 2.5), *W, kind="type"),
    bad("select_targets", "seed", lambda: select_targets(GNN, DATA, seed=-4), *W, kind="range"),
    bad("select_targets", "seed", lambda: select_targets(GNN, DATA, seed=HUGE), *W, kind="beyond-generator"),
    bad("select_targets", "data.val_mask", lambda: select_targets(GNN, NO_VAL), GNN, NO_VAL, kind="empty"),
    bad("select_targets", "data.y", lambda: select_targets(GNN2, DATA), GNN2, DATA, kind="gnn-classes"),
    # make_editor
    bad("make_editor", "kind", lambda: make_editor("seed_gnn", GNN, DATA), *W, kind="name"),
    bad("make_editor", "kind", lambda: make_editor(None, GNN, DATA), *W, kind="none"),
    bad("make_editor", "kind", lambda: make_editor(3, GNN, DATA), *W, kind="type"),
    bad("make_editor", "gnn", lambda: make_editor("seed", None, DATA), DATA, kind="none"),
    bad("make_editor", "data.x", lambda: make_editor("egnn", GNN, NAN_X), GNN, NAN_X, kind="nan"),
    bad("make_editor", "lr", lambda: make_editor("seed", GNN, DATA, lr=0.0), *W, kind="range"),
    bad("make_editor", "learning_rate", lambda: make_editor("seed", GNN, DATA, learning_rate=0.1), *W, kind="name"),
    bad("make_editor", "gamma", lambda: make_editor("seed", GNN, DATA, gamma=0.1), *W, kind="name"),
    # run_editors
    bad("run_editors", "kinds", lambda: run_editors(GNN, DATA, [1], [0], kinds=["seed", "nope"]), *W, kind="name"),
    bad("run_editors", "kinds", lambda: run_editors(GNN, DATA, [1], [0], kinds="seed"), *W, kind="type"),
    bad("run_editors", "kinds", lambda: run_editors(GNN, DATA, [1], [0], kinds=[]), *W, kind="empty"),
    bad("run_editors", "kinds", lambda: run_editors(GNN, DATA, [1], [0], kinds=None), *W, kind="none"),
    bad("run_editors", "labels", lambda: run_editors(GNN, DATA, [1, 2], [0], kinds=["finetune"]), *W, kind="size"),
    bad("run_editors", "node", lambda: run_editors(GNN, DATA, [1, 400], [0, 0], kinds=["finetune"]), *W, kind="range"),
    bad("run_editors", "nodes", lambda: run_editors(GNN, DATA, None, [0], kinds=["finetune"]), *W, kind="none"),
    bad("run_editors", "gnn", lambda: run_editors(None, DATA, [1], [0], kinds=["finetune"]), DATA, kind="none"),
    bad("run_editors", "data.x", lambda: run_editors(GNN, NAN_X, [1], [0], kinds=["finetune"]), GNN, kind="nan"),
    bad("run_editors", "progress", lambda: run_editors(GNN, DATA, [1], [0], ["finetune"], progress=2), *W, kind="type"),
    bad("run_editors", "kinds", lambda: run_editors(GNN, DATA, [1], [0], ["finetune", "finetune"]), *W, kind="twice"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_has_cases():
    exempt = {"EditRecord": "a plain record of one edit's measurements (a dataclass, no checks to make)"}
    assert coverage_gaps(icml24.seed_gnn, CASES, exempt=exempt) == {}


def test_edit_record_is_a_plain_record():
    assert EditRecord(0, 1, 2, 3, 0.1, True, 1.0, 0.5, 0.5, 0.5, 0.0).as_dict()["node"] == 1


def test_failed_calls_leave_no_file_behind():
    assert sorted(p.name for p in TMP.iterdir()) == ["file.txt", "garbage.pt"]


def test_rewire_does_not_overflow_on_huge_finite_gradients():
    # anchors of 1e300 (float64): their squared norm overflows, the projection does not
    out = rewire(torch.ones(3, dtype=torch.float64), torch.full((1, 3), -1e300, dtype=torch.float64), gamma=0.0)
    assert torch.allclose(out, torch.zeros(3, dtype=torch.float64), atol=1e-12)
    out = rewire(torch.full((3,), 1e300, dtype=torch.float64), -torch.eye(3)[:2].double(), gamma=1.0)
    assert torch.allclose(out / 1e300, torch.tensor([0.0, 0.0, 0.5], dtype=torch.float64))


def test_per_class_split_truncates_small_classes_as_pyg_does():
    # PyG's RandomNodeSplit(split="random") takes all of a class with fewer than num_train_per_class nodes,
    # silently; per_class_split does the same (training first), as long as validation and test nodes remain
    data = Data(x=torch.rand(13, 2), y=torch.tensor([0] * 3 + [1] * 10), edge_index=torch.zeros(2, 0, dtype=torch.long))
    out = per_class_split(copy.copy(data), 4, 2)
    y = data.y
    assert int(out.train_mask[y == 0].sum()) == 3 and int(out.val_mask[y == 0].sum()) == 0
    assert int(out.train_mask[y == 1].sum()) == 4 and int(out.val_mask[y == 1].sum()) == 2
    assert int(out.test_mask.sum()) == 4
