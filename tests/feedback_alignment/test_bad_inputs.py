"""Bad input to every public callable of feedback_alignment: a one-line InputError naming the argument, and the
user's objects (model, network, tensors, recorder) exactly as they were."""

import math

import pytest
import torch
from torch import nn

import icml24.feedback_alignment
from icml24.feedback_alignment import (
    AlignmentRecorder,
    FeedbackFunction,
    FeedbackLinearFunction,
    FeedbackNetwork,
    accuracy,
    align_init_,
    alignment_angles,
    conserved_quantity,
    get_rule,
    incoming_norms,
    layer_conserved_quantity,
    loss_fn,
    make_cnn,
    make_mlp,
    potential,
    train,
    update_alignment,
)
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
MLP = make_mlp([4, 6, 5, 3], seed=0)
NET = FeedbackNetwork(MLP, "fa", seed=0)
KP = FeedbackNetwork(make_mlp([4, 5, 3], seed=1), "kp", seed=0)
X = torch.randn(8, 4, generator=torch.Generator().manual_seed(0))
Y = torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])
X_NAN = X.clone()
X_NAN[2, 1] = NAN
REC = AlignmentRecorder(NET, X, Y)
REC(0)
W0 = MLP[0].weight
B0 = NET.feedback_matrix(0)
ALL = (MLP, NET, X, Y)


def _fn(target, fn):
    """FeedbackFunction.apply's bad calls (x, weight, bias, feedback, store, is_output, conv, learn, mirror)."""
    w, b, fb = W0.detach(), MLP[0].bias.detach(), B0

    def call(x=X, weight=w, bias=b, feedback=fb, conv=None, learn=None):
        return fn.apply(x, weight, bias, feedback, None, False, conv, learn, None)

    return [
        bad(target, "x", lambda: call(x=torch.randn(8, 5)), *ALL, kind="shape"),
        bad(target, "x", lambda: call(x=None), *ALL, kind="none"),
        bad(target, "x", lambda: call(x=X.long()), *ALL, kind="dtype"),
        bad(target, "weight", lambda: call(weight=w.double()), *ALL, kind="dtype"),
        bad(target, "weight", lambda: call(weight=w[:, :3]), *ALL, kind="shape"),
        bad(target, "feedback", lambda: call(feedback=fb.T), *ALL, kind="shape"),
        bad(target, "feedback", lambda: call(feedback=[[1.0]]), *ALL, kind="type"),
        bad(target, "bias", lambda: call(bias=torch.zeros(2)), *ALL, kind="shape"),
        bad(target, "learn", lambda: call(learn="bp"), *ALL, kind="name"),
        bad(target, "conv", lambda: call(conv=(1, 0)), *ALL, kind="type"),
    ]


CASES = [
    # FeedbackNetwork: construction (the model is shared: refusals leave it as it was)
    bad("FeedbackNetwork", "model", lambda: FeedbackNetwork(None), kind="none"),
    bad("FeedbackNetwork", "model", lambda: FeedbackNetwork(MLP[0]), MLP, kind="type"),
    bad("FeedbackNetwork", "model", lambda: FeedbackNetwork(nn.Sequential()), kind="empty"),
    bad("FeedbackNetwork", "rule", lambda: FeedbackNetwork(MLP, "feedback"), MLP, kind="name"),
    bad("FeedbackNetwork", "rule", lambda: FeedbackNetwork(MLP, None), MLP, kind="none"),
    bad("FeedbackNetwork", "seed", lambda: FeedbackNetwork(MLP, seed=-1), MLP, kind="range"),
    bad("FeedbackNetwork", "seed", lambda: FeedbackNetwork(MLP, seed=1.5), MLP, kind="type"),
    bad("FeedbackNetwork", "feedback_std", lambda: FeedbackNetwork(MLP, feedback_std=0.0), MLP, kind="range"),
    bad("FeedbackNetwork", "feedback_std", lambda: FeedbackNetwork(MLP, feedback_std=NAN), MLP, kind="nan"),
    bad("FeedbackNetwork", "feedback", lambda: FeedbackNetwork(MLP, feedback=[B0]), MLP, B0, kind="size"),
    bad("FeedbackNetwork", "feedback", lambda: FeedbackNetwork(MLP, feedback=B0), MLP, B0, kind="type"),
    bad(
        "FeedbackNetwork",
        "feedback",
        lambda: FeedbackNetwork(MLP, feedback=[B0.T, torch.zeros(6, 5), torch.zeros(5, 3)]),
        MLP,
        B0,
        kind="shape",
    ),
    bad(
        "FeedbackNetwork",
        "feedback",
        lambda: FeedbackNetwork(MLP, feedback=[B0 * NAN, torch.zeros(6, 5), torch.zeros(5, 3)]),
        MLP,
        B0,
        kind="nan",
    ),
    bad("FeedbackNetwork", "feedback", lambda: FeedbackNetwork(MLP, "usf", feedback=[B0]), MLP, B0, kind="rule"),
    bad("FeedbackNetwork", "homogeneous", lambda: FeedbackNetwork(MLP, homogeneous="no"), MLP, kind="type"),
    bad(
        "FeedbackNetwork",
        "input_shape",
        lambda: FeedbackNetwork(make_cnn(1, 4, (2,), 3), "dfa", input_shape=(1, 5)),
        kind="shape",
    ),
    bad(
        "FeedbackNetwork",
        "input_shape",
        lambda: FeedbackNetwork(make_cnn(1, 4, (2,), 3), "dfa", input_shape=(1, 4, 0)),
        kind="range",
    ),
    # FeedbackNetwork: forward and accessors
    bad("FeedbackNetwork.forward", "x", lambda: NET(torch.randn(8, 5)), *ALL, kind="shape"),
    bad("FeedbackNetwork.forward", "x", lambda: NET(X_NAN), *ALL, X_NAN, kind="nan"),
    bad("FeedbackNetwork.forward", "x", lambda: NET(X.long()), *ALL, kind="dtype"),
    bad("FeedbackNetwork.forward", "x", lambda: NET(None), *ALL, kind="none"),
    bad("FeedbackNetwork.forward", "x", lambda: NET(X.numpy()), *ALL, kind="type"),
    bad("FeedbackNetwork.forward", "x", lambda: NET(X.to(torch.complex64)), *ALL, kind="dtype"),
    bad("FeedbackNetwork.feedback_matrix", "j", lambda: NET.feedback_matrix(3), *ALL, kind="range"),
    bad("FeedbackNetwork.feedback_matrix", "j", lambda: NET.feedback_matrix(-4), *ALL, kind="range"),
    bad("FeedbackNetwork.feedback_matrix", "j", lambda: NET.feedback_matrix("0"), *ALL, kind="type"),
    bad("FeedbackNetwork.feedback_matrix", "j", lambda: NET.feedback_matrix(None), *ALL, kind="none"),
    bad("FeedbackNetwork.feedback_matrix", "j", lambda: NET.feedback_matrix(NAN), *ALL, kind="nan"),
    bad("FeedbackNetwork.expected_magnitude", "j", lambda: NET.expected_magnitude(5), *ALL, kind="range"),
    bad("FeedbackNetwork.expected_magnitude", "j", lambda: NET.expected_magnitude("1"), *ALL, kind="type"),
    bad("FeedbackNetwork.expected_magnitude", "j", lambda: NET.expected_magnitude(None), *ALL, kind="none"),
    bad("FeedbackNetwork.expected_magnitude", "j", lambda: NET.expected_magnitude(1.0), *ALL, kind="type"),
    bad("FeedbackNetwork.expected_magnitude", "j", lambda: NET.expected_magnitude(NAN), *ALL, kind="nan"),
    # the autograd function and its former name
    *_fn("FeedbackFunction", FeedbackFunction),
    *_fn("FeedbackLinearFunction", FeedbackLinearFunction),
    # get_rule
    bad("get_rule", "rule", lambda: get_rule("bp"), kind="name"),
    bad("get_rule", "rule", lambda: get_rule(None), kind="none"),
    bad("get_rule", "rule", lambda: get_rule(3), kind="type"),
    bad("get_rule", "rule", lambda: get_rule(""), kind="empty"),
    bad("get_rule", "rule", lambda: get_rule(["fa"]), kind="type"),
    # make_mlp
    bad("make_mlp", "sizes", lambda: make_mlp([4]), kind="size"),
    bad("make_mlp", "sizes", lambda: make_mlp([]), kind="empty"),
    bad("make_mlp", "sizes", lambda: make_mlp([4, 0, 3]), kind="range"),
    bad("make_mlp", "sizes", lambda: make_mlp(None), kind="none"),
    bad("make_mlp", "sizes", lambda: make_mlp([4.0, 3]), kind="type"),
    bad("make_mlp", "activation", lambda: make_mlp([4, 3], "gelu"), kind="name"),
    bad("make_mlp", "activation", lambda: make_mlp([4, 3], ["relu"]), kind="type"),
    bad("make_mlp", "init_scale", lambda: make_mlp([4, 3], init_scale=NAN), kind="nan"),
    bad("make_mlp", "init_scale", lambda: make_mlp([4, 3], init_scale=-1.0), kind="range"),
    bad("make_mlp", "dtype", lambda: make_mlp([4, 3], dtype=torch.int64), kind="dtype"),
    bad("make_mlp", "dtype", lambda: make_mlp([4, 3], dtype="float32"), kind="type"),
    bad("make_mlp", "bias", lambda: make_mlp([4, 3], bias=None), kind="none"),
    bad("make_mlp", "sizes", lambda: make_mlp([4, 2**70, 3]), kind="overflow"),
    # make_cnn
    bad("make_cnn", "in_channels", lambda: make_cnn(0), kind="range"),
    bad("make_cnn", "image_size", lambda: make_cnn(1, 6, (2, 2)), kind="size"),
    bad("make_cnn", "channels", lambda: make_cnn(1, 4, ()), kind="empty"),
    bad("make_cnn", "channels", lambda: make_cnn(1, 4, None), kind="none"),
    bad("make_cnn", "n_classes", lambda: make_cnn(1, 4, (2,), 1), kind="range"),
    bad("make_cnn", "kernel_size", lambda: make_cnn(1, 4, (2,), kernel_size=2), kind="range"),
    bad("make_cnn", "pool", lambda: make_cnn(1, 4, (2,), pool="min"), kind="name"),
    bad("make_cnn", "pool", lambda: make_cnn(1, 4, (2,), pool=["avg"]), kind="type"),
    bad("make_cnn", "init_scale", lambda: make_cnn(1, 4, (2,), init_scale=math.inf), kind="nan"),
    bad("make_cnn", "dtype", lambda: make_cnn(1, 4, (2,), dtype=torch.float16), kind="dtype"),
    bad("make_cnn", "in_channels", lambda: make_cnn(2**70), kind="overflow"),
    bad("make_cnn", "image_size", lambda: make_cnn(1, 2**70, (2,)), kind="overflow"),
    bad("make_cnn", "n_classes", lambda: make_cnn(1, 4, (2,), 2**70), kind="overflow"),
    bad("make_cnn", "channels", lambda: make_cnn(1, 4, (2**70,)), kind="overflow"),
    # align_init_ (changes net in place on success only)
    bad("align_init_", "strength", lambda: align_init_(NET, 1.5), *ALL, kind="range"),
    bad("align_init_", "strength", lambda: align_init_(NET, NAN), *ALL, kind="nan"),
    bad("align_init_", "strength", lambda: align_init_(NET, None), *ALL, kind="none"),
    bad("align_init_", "strength", lambda: align_init_(NET, "0.5"), *ALL, kind="type"),
    bad("align_init_", "net", lambda: align_init_(MLP, 0.5), *ALL, kind="type"),
    bad("align_init_", "net", lambda: align_init_(KP, 0.5), KP, kind="rule"),
    # train
    bad("train", "net", lambda: train(MLP, X, Y, lr=0.1, steps=1), *ALL, kind="type"),
    bad("train", "x", lambda: train(NET, X_NAN, Y, lr=0.1, steps=1), *ALL, X_NAN, kind="nan"),
    bad("train", "x", lambda: train(NET, X[:0], Y[:0], lr=0.1, steps=1), *ALL, kind="empty"),
    bad("train", "x", lambda: train(NET, torch.randn(8, 5), Y, lr=0.1, steps=1), *ALL, kind="shape"),
    bad("train", "x", lambda: train(NET, X.long(), Y, lr=0.1, steps=1), *ALL, kind="dtype"),
    bad("train", "y", lambda: train(NET, X, Y[:5], lr=0.1, steps=1), *ALL, kind="size"),
    bad("train", "y", lambda: train(NET, X, Y.float(), lr=0.1, steps=1), *ALL, kind="dtype"),
    bad("train", "y", lambda: train(NET, X, Y + 3, lr=0.1, steps=1), *ALL, kind="range"),
    bad("train", "y", lambda: train(NET, X, None, lr=0.1, steps=1), *ALL, kind="none"),
    bad("train", "lr", lambda: train(NET, X, Y, lr=0.0, steps=1), *ALL, kind="range"),
    bad("train", "lr", lambda: train(NET, X, Y, lr=NAN, steps=1), *ALL, kind="nan"),
    bad("train", "steps", lambda: train(NET, X, Y, lr=0.1, steps=-1), *ALL, kind="range"),
    bad("train", "steps", lambda: train(NET, X, Y, lr=0.1, steps=2.0), *ALL, kind="type"),
    bad("train", "loss", lambda: train(NET, X, Y, lr=0.1, steps=1, loss="hinge"), *ALL, kind="name"),
    bad("train", "batch_size", lambda: train(NET, X, Y, lr=0.1, steps=1, batch_size=0), *ALL, kind="range"),
    bad("train", "seed", lambda: train(NET, X, Y, lr=0.1, steps=1, seed=-2), *ALL, kind="range"),
    bad("train", "callback", lambda: train(NET, X, Y, lr=0.1, steps=1, callback=3), *ALL, kind="type"),
    bad("train", "weight_decay", lambda: train(NET, X, Y, lr=0.1, steps=1, weight_decay=-1e-3), *ALL, kind="range"),
    bad("train", "lr", lambda: train(NET, X, Y, lr=1e300, steps=1), *ALL, kind="float32-overflow"),
    bad("train", "weight_decay", lambda: train(NET, X, Y, lr=0.1, steps=1, weight_decay=1e300), *ALL, kind="overflow"),
    # accuracy
    bad("accuracy", "net", lambda: accuracy(None, X, Y), X, Y, kind="none"),
    bad("accuracy", "net", lambda: accuracy("net", X, Y), X, Y, kind="type"),
    bad("accuracy", "x", lambda: accuracy(NET, X_NAN, Y), *ALL, kind="nan"),
    bad("accuracy", "x", lambda: accuracy(NET, torch.randn(8, 7), Y), *ALL, kind="shape"),
    bad("accuracy", "x", lambda: accuracy(NET, X[:0], Y[:0]), *ALL, kind="empty"),
    bad("accuracy", "x", lambda: accuracy(NET, X.tolist(), Y), *ALL, kind="type"),
    bad("accuracy", "y", lambda: accuracy(NET, X, Y[:3]), *ALL, kind="size"),
    bad("accuracy", "y", lambda: accuracy(NET, X, Y.float()), *ALL, kind="dtype"),
    bad("accuracy", "y", lambda: accuracy(NET, X, Y[:, None].expand(8, 3)), *ALL, kind="shape"),
    bad("accuracy", "y", lambda: accuracy(NET, X, None), *ALL, kind="none"),
    bad("accuracy", "y", lambda: accuracy(NET, X, Y - 5), *ALL, kind="range"),
    # loss_fn
    bad("loss_fn", "name", lambda: loss_fn("hinge"), kind="name"),
    bad("loss_fn", "name", lambda: loss_fn(None), kind="none"),
    bad("loss_fn", "name", lambda: loss_fn(""), kind="empty"),
    bad("loss_fn", "name", lambda: loss_fn(2), kind="type"),
    bad("loss_fn", "name", lambda: loss_fn(["mse"]), kind="type"),
    # potential
    bad("potential", "j", lambda: potential(NET, 5), *ALL, kind="range"),
    bad("potential", "j", lambda: potential(NET, "1"), *ALL, kind="type"),
    bad("potential", "j", lambda: potential(NET, None), *ALL, kind="none"),
    bad("potential", "j", lambda: potential(NET, NAN), *ALL, kind="nan"),
    bad("potential", "net", lambda: potential(MLP, 1), *ALL, kind="type"),
    bad("potential", "net", lambda: potential(None, 1), kind="none"),
]

# the four functions of the network alone: bad nets of five kinds
for _name, _fn_ in (
    ("conserved_quantity", conserved_quantity),
    ("layer_conserved_quantity", layer_conserved_quantity),
    ("incoming_norms", incoming_norms),
    ("alignment_angles", alignment_angles),
):
    CASES += [
        bad(_name, "net", lambda f=_fn_: f(None), kind="none"),
        bad(_name, "net", lambda f=_fn_: f(MLP), MLP, kind="sequential"),
        bad(_name, "net", lambda f=_fn_: f(MLP[0]), MLP, kind="module"),
        bad(_name, "net", lambda f=_fn_: f([NET]), *ALL, kind="list"),
        bad(_name, "net", lambda f=_fn_: f("fa"), kind="name"),
        bad(_name, "net", lambda f=_fn_: f(FeedbackNetwork), kind="class"),
    ]

CASES += [
    # update_alignment
    bad("update_alignment", "net", lambda: update_alignment(MLP, X, Y), *ALL, kind="type"),
    bad("update_alignment", "x", lambda: update_alignment(NET, X_NAN, Y), *ALL, X_NAN, kind="nan"),
    bad("update_alignment", "x", lambda: update_alignment(NET, torch.randn(8, 2), Y), *ALL, kind="shape"),
    bad("update_alignment", "x", lambda: update_alignment(NET, X[:0], Y[:0]), *ALL, kind="empty"),
    bad("update_alignment", "x", lambda: update_alignment(NET, None, Y), *ALL, kind="none"),
    bad("update_alignment", "y", lambda: update_alignment(NET, X, Y[:4]), *ALL, kind="size"),
    bad("update_alignment", "y", lambda: update_alignment(NET, X, Y.float()), *ALL, kind="dtype"),
    bad("update_alignment", "y", lambda: update_alignment(NET, X, Y + 3), *ALL, kind="range"),
    bad("update_alignment", "loss", lambda: update_alignment(NET, X, Y, "hinge"), *ALL, kind="name"),
    bad("update_alignment", "x", lambda: update_alignment(NET, X.long(), Y), *ALL, kind="dtype"),
    # AlignmentRecorder
    bad("AlignmentRecorder", "net", lambda: AlignmentRecorder(MLP, X, Y), *ALL, kind="type"),
    bad("AlignmentRecorder", "every", lambda: AlignmentRecorder(NET, X, Y, every=0), *ALL, kind="range"),
    bad("AlignmentRecorder", "every", lambda: AlignmentRecorder(NET, X, Y, every=None), *ALL, kind="none"),
    bad("AlignmentRecorder", "update", lambda: AlignmentRecorder(NET, X, Y, update="yes"), *ALL, kind="type"),
    bad("AlignmentRecorder", "update", lambda: AlignmentRecorder(NET), *ALL, kind="missing"),
    bad("AlignmentRecorder", "loss", lambda: AlignmentRecorder(NET, X, Y, loss="l1"), *ALL, kind="name"),
    bad("AlignmentRecorder", "x", lambda: AlignmentRecorder(NET, X_NAN, Y), *ALL, X_NAN, kind="nan"),
    bad("AlignmentRecorder", "y", lambda: AlignmentRecorder(NET, X, Y[:2]), *ALL, kind="size"),
    bad("AlignmentRecorder", "x", lambda: AlignmentRecorder(NET, torch.randn(8, 9), Y), *ALL, kind="shape"),
    bad("AlignmentRecorder", "history", lambda: AlignmentRecorder(NET, X, Y, history="none"), *ALL, kind="type"),
    bad("AlignmentRecorder.__call__", "step", lambda: REC(-1), REC, kind="range"),
    bad("AlignmentRecorder.__call__", "step", lambda: REC("1"), REC, kind="type"),
    bad("AlignmentRecorder.__call__", "step", lambda: REC(None), REC, kind="none"),
    bad("AlignmentRecorder.__call__", "step", lambda: REC(NAN), REC, kind="nan"),
    bad("AlignmentRecorder.series", "key", lambda: REC.series("angle"), REC, kind="name"),
    bad("AlignmentRecorder.series", "key", lambda: REC.series(None), REC, kind="none"),
    bad("AlignmentRecorder.series", "key", lambda: REC.series(""), REC, kind="empty"),
    bad("AlignmentRecorder.series", "key", lambda: AlignmentRecorder(NET, update=False).series("rho"), kind="name"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_has_cases():
    exempt = {
        "Rule": "a frozen record of a rule's functions and flags (the rules are built once, in the package)",
        "UpdateAlignment": "a frozen record of update_alignment's measurements",
    }
    assert coverage_gaps(icml24.feedback_alignment, CASES, exempt=exempt) == {}


def test_float64_input_to_a_float32_network_is_converted():
    out = NET(X.double())
    assert out.dtype == torch.float32 and torch.allclose(out, NET(X))
    assert accuracy(NET, X.double(), Y) == accuracy(NET, X, Y) == accuracy(MLP, X.double(), Y)
