"""Bad input raises InputError with a message that names the argument."""

import math

import pytest
import torch
from torch import nn

from icml24.errors import InputError
from icml24.feedback_alignment import (
    FeedbackNetwork,
    alignment_angles,
    conserved_quantity,
    get_rule,
    make_mlp,
    train,
    update_alignment,
)


def lin(a, b):
    return nn.Linear(a, b)


@pytest.mark.parametrize(
    "model, match",
    [
        (nn.Sequential(lin(4, 5), nn.BatchNorm1d(5), lin(5, 2)), "BatchNorm1d.*not supported"),
        (nn.Sequential(nn.Conv2d(1, 2, 3, groups=1, padding="same"), nn.Flatten(), lin(4, 2)), "Conv2d.*groups=1"),
        (nn.Sequential(nn.Conv2d(2, 2, 3, groups=2), nn.Flatten(), lin(4, 2)), "Conv2d.*groups=1"),
        (nn.Sequential(nn.Flatten(), lin(4, 4), nn.Unflatten(1, (1, 2, 2)), nn.Conv2d(1, 2, 1)), "Unflatten"),
        (
            nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), lin(4, 3), nn.ReLU(), nn.AvgPool2d(2), lin(3, 2)),
            "after a Linear",
        ),
        (nn.Sequential(nn.Conv2d(1, 2, 3), nn.Flatten(), lin(5, 2)), "not a multiple of the 2 channels"),
        (nn.Sequential(lin(4, 5), nn.Dropout(), lin(5, 2)), "Dropout.*not supported"),
        (nn.Sequential(lin(4, 5), nn.Softmax(dim=1), lin(5, 2)), "Softmax.*not supported"),
        (nn.Sequential(lin(4, 5), nn.Tanh(), lin(5, 2)), "Tanh.*not positively homogeneous"),
        (nn.Sequential(lin(4, 5), nn.Sigmoid(), lin(5, 2)), "Sigmoid.*not positively homogeneous"),
        (nn.Sequential(lin(4, 5), nn.ReLU()), "must end with an nn.Linear"),
        (nn.Sequential(lin(4, 5), nn.ReLU(), nn.Flatten(), lin(5, 2)), "Flatten.*not supported"),
        (nn.Sequential(lin(4, 5), nn.ReLU(), lin(6, 2)), "takes 6 features but layer 0 gives 5"),
        (nn.Sequential(nn.ReLU()), "no nn.Linear"),
        (lin(4, 2), "must be a torch.nn.Sequential"),
        ([lin(4, 2)], "must be a torch.nn.Sequential"),
    ],
)
def test_unsupported_models(model, match):
    with pytest.raises(InputError, match=match):
        FeedbackNetwork(model, "fa")


def test_shared_layer_and_tanh_opt_in():
    shared = lin(4, 4)
    with pytest.raises(InputError, match="same layer"):
        FeedbackNetwork(nn.Sequential(shared, nn.ReLU(), shared), "fa")
    net = FeedbackNetwork(nn.Sequential(lin(4, 5), nn.Tanh(), lin(5, 2)), "fa", homogeneous=False)
    assert net(torch.randn(3, 4)).shape == (3, 2)
    with pytest.raises(InputError, match="homogeneous"):
        FeedbackNetwork(nn.Sequential(lin(4, 2)), "fa", homogeneous="yes")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"rule": "hebbian"}, "rule must be one of"),
        ({"rule": 3}, "rule must be one of"),
        ({"seed": -1}, "seed"),
        ({"seed": 1.5}, "seed"),
        ({"feedback_std": 0.0}, "feedback_std"),
        ({"feedback_std": math.inf}, "feedback_std"),
        ({"feedback": [torch.zeros(4, 5)]}, "feedback has 1 matrices for 2 Linear layers"),
        ({"feedback": [torch.zeros(4, 5), torch.zeros(2, 5)]}, r"feedback\[1\] has shape \(2, 5\), expected \(5, 2\)"),
        ({"feedback": [torch.zeros(4, 5), torch.full((5, 2), math.nan)]}, r"feedback\[1\] must be a finite"),
        ({"feedback": [torch.zeros(4, 5), [[0.0] * 2] * 5]}, r"feedback\[1\] must be a tensor"),
        ({"feedback": torch.zeros(4, 5)}, "feedback must be a sequence"),
        ({"rule": "backprop", "feedback": [torch.zeros(4, 5), torch.zeros(5, 2)]}, "has no fixed feedback"),
        ({"rule": "usf", "feedback": [torch.zeros(4, 5), torch.zeros(5, 2)]}, "has no fixed feedback"),
        (
            {"rule": "dfa", "feedback": [torch.zeros(4, 5), torch.zeros(5, 3)]},
            r"feedback\[0\] has shape \(4, 5\), expected \(4, 2\)",
        ),
    ],
)
def test_bad_constructor_arguments(kwargs, match):
    model = nn.Sequential(lin(4, 5), nn.ReLU(), lin(5, 2))
    with pytest.raises(InputError, match=match):
        FeedbackNetwork(model, **kwargs)


def test_dfa_feedback_has_output_width_columns():
    model = nn.Sequential(lin(4, 5), nn.ReLU(), lin(5, 6), nn.ReLU(), lin(6, 2))
    net = FeedbackNetwork(model, "dfa", feedback=[torch.zeros(4, 2), torch.zeros(5, 2), torch.ones(6, 2)])
    assert net.feedback_matrix(-1).shape == (6, 2)
    with pytest.raises(InputError, match="layer index"):
        net.feedback_matrix(3)


def test_bad_forward_and_training_inputs():
    net = FeedbackNetwork(make_mlp([4, 5, 3]), "fa")
    x, y = torch.randn(6, 4), torch.tensor([0, 1, 2, 0, 1, 2])
    with pytest.raises(InputError, match=r"x has shape \(6, 5\), expected \(..., 4\)"):
        net(torch.randn(6, 5))
    with pytest.raises(InputError, match="floating-point"):
        net(torch.ones(6, 4, dtype=torch.long))
    with pytest.raises(InputError, match="torch.Tensor"):
        net([[0.0] * 4])
    for kwargs, match in [
        ({"lr": 0.0, "steps": 1}, "lr"),
        ({"lr": 0.1, "steps": -1}, "steps"),
        ({"lr": 0.1, "steps": 1, "loss": "hinge"}, "loss must be one of"),
        ({"lr": 0.1, "steps": 1, "batch_size": 0}, "batch_size"),
    ]:
        with pytest.raises(InputError, match=match):
            train(net, x, y, **kwargs)
    with pytest.raises(InputError, match="labels in 0..2"):
        train(net, x, y + 1, lr=0.1, steps=1)
    with pytest.raises(InputError, match="integer class labels"):
        train(net, x, y.float(), lr=0.1, steps=1)
    with pytest.raises(InputError, match="NaN"):
        train(net, x.index_put((torch.tensor([0]), torch.tensor([0])), torch.tensor(math.nan)), y, lr=0.1, steps=1)
    with pytest.raises(InputError, match="one label per row of x"):
        train(net, x, y[:3], lr=0.1, steps=1)
    with pytest.raises(InputError, match="FeedbackNetwork"):
        train(nn.Sequential(lin(4, 3)), x, y, lr=0.1, steps=1)
    with pytest.raises(InputError, match="FeedbackNetwork"):
        conserved_quantity(nn.Sequential(lin(4, 3)))
    with pytest.raises(InputError, match="FeedbackNetwork"):
        alignment_angles("net")
    with pytest.raises(InputError, match="one label per row of x"):
        update_alignment(net, x, y[:2])


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        (([4],), {}, "sizes"),
        (([4, 0, 2],), {}, "sizes"),
        (("44",), {}, "sizes"),
        (([4, 2], "swish"), {}, "activation"),
        (([4, 2],), {"init_scale": -1.0}, "init_scale"),
        (([4, 2],), {"seed": -3}, "seed"),
        (([4, 2],), {"dtype": torch.int64}, "dtype"),
    ],
)
def test_bad_make_mlp_arguments(args, kwargs, match):
    with pytest.raises(InputError, match=match):
        make_mlp(*args, **kwargs)


def test_get_rule_and_input_error_is_a_value_error():
    assert get_rule(" FA ").name == "fa"
    with pytest.raises(ValueError):
        get_rule("sgd")
