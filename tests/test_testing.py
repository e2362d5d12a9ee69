"""The bad-input harness itself: it catches each way a public call can mishandle bad input."""

import types

import numpy as np
import pytest
import torch

from icml24.errors import InputError
from icml24.testing import assert_refuses, bad, coverage_gaps, fingerprint, same


def good(x, k=1):
    if k < 0:
        raise InputError("k must be >= 0", "pass a count")
    return x


def test_clean_refusal_passes():
    assert "k must" in assert_refuses(bad("good", "k", lambda: good(1, k=-1), kind="range"))


@pytest.mark.parametrize(
    "call, why",
    [
        (lambda: good(1, k=1), "accepted"),
        (lambda: [][1], "raised IndexError"),
        (lambda: (_ for _ in ()).throw(InputError("bad\nk")), "several lines"),
        (lambda: (_ for _ in ()).throw(InputError("something else")), "does not name"),
    ],
)
def test_each_defect_is_caught(call, why):
    with pytest.raises(AssertionError, match=why):
        assert_refuses(bad("good", "k", call))


def test_changed_objects_are_caught():
    model = torch.nn.Linear(2, 2)
    tensor = torch.zeros(3)
    array = np.zeros(3)

    def freeze():
        model.weight.requires_grad_(False)
        raise InputError("k bad")

    def train_mode():
        model.eval()
        raise InputError("k bad")

    def write_tensor():
        tensor[0] = float("nan")
        raise InputError("k bad")

    def write_array():
        array[1] = 2
        raise InputError("k bad")

    for call, watched in [(freeze, model), (train_mode, model), (write_tensor, tensor), (write_array, array)]:
        with pytest.raises(AssertionError, match="was changed"):
            assert_refuses(bad("good", "k", call, watched))
        model.weight.requires_grad_(True)
        model.train()


def test_fingerprint_walks_plain_objects_and_nan():
    obj = types.SimpleNamespace(a=torch.tensor([float("nan"), 1.0]), b={"c": [1, 2]})
    snap = fingerprint(obj)
    assert same(fingerprint(obj), snap)
    obj.b["c"].append(3)
    assert not same(fingerprint(obj), snap)


def test_coverage_gaps_counts_public_callables():
    module = types.ModuleType("m")
    module.f, module.g, module.X = good, good, 3
    module.__all__ = ["f", "g", "X"]
    cases = [bad("f", "k", lambda: None)] * 5 + [bad("g.method", "k", lambda: None)] * 2
    assert coverage_gaps(module, cases) == {"g": 2}
    assert coverage_gaps(module, cases, exempt={"g": "record"}) == {}
