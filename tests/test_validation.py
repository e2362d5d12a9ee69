"""icml24.validation: one-line InputErrors that name the argument; numpy and torch scalars accepted."""

import numbers

import numpy as np
import pytest
import torch

from icml24.errors import InputError
from icml24.validation import (
    check_array,
    check_bool,
    check_choice,
    check_float,
    check_generator,
    check_int,
    check_probability,
    check_rng,
    check_scalar,
    check_seed,
    check_tensor,
)


def test_scalars_accept_numpy_and_torch_scalars():
    assert check_int(np.int64(3), "n", min_val=1) == 3 and type(check_int(np.int64(3), "n")) is int
    assert check_float(torch.tensor(0.5), "lr") == 0.5
    assert check_float(torch.nn.Parameter(torch.tensor(2.0)), "w") == 2.0
    assert check_bool(np.bool_(True), "flag") is True and check_scalar(False, "flag", bool) is False
    assert check_probability(1.0, "p") == 1.0 and check_seed(np.int32(7)) == 7


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: check_int(True, "n"), "n must be an integer, got True"),
        (lambda: check_int(2.5, "n"), "n must be an integer"),
        (lambda: check_float(float("nan"), "lr"), "lr must be finite"),
        (lambda: check_float(10**400, "x"), "x is too large"),
        (lambda: check_float(0.0, "lr", min_val=0.0, include_boundaries="right"), r"lr must be in \(0, inf\]"),
        (lambda: check_probability(1.0, "p", open_right=True), r"p must be in \[0, 1\)"),
        (lambda: check_scalar(1, "flag", bool), "flag must be True or False"),
        (lambda: check_seed(-1), r"seed must be in \[0, inf\]"),
        (lambda: check_seed(2**64), r"seed must be at most 2\*\*64 - 1"),
        (
            lambda: check_choice("huge", "scale", ["smoke", "quick"]),
            "unknown scale 'huge' .choose one of: smoke, quick",
        ),
        (lambda: check_tensor(np.ones(3), "x"), "x must be a torch.Tensor"),
        (lambda: check_tensor(torch.ones(2, 3), "x", shape=(None, 4)), r"x must have shape \(\*, 4\), got \(2, 3\)"),
        (lambda: check_tensor(torch.ones(2, dtype=torch.long), "x"), "x must hold float entries"),
        (lambda: check_tensor(torch.tensor([1.0, float("inf")]), "x"), "x contains NaN or infinite entries"),
        (lambda: check_tensor(torch.ones(0, 3), "x"), r"x is empty"),
        (lambda: check_array([[1, 2], [3]], "a"), "a is not an array|a must be a numeric array"),
        (lambda: check_array(["a", "b"], "a"), "a must hold real numbers"),
        (lambda: check_array(np.ones((2, 2)), "a", ndim=1), "a must have 1 dimensions"),
    ],
)
def test_messages_name_the_argument(call, message):
    with pytest.raises(InputError, match=message):
        call()


def test_arrays_are_copies_and_generators_are_seeded():
    a = np.arange(3)
    out = check_array(a, "a")
    assert out.dtype == np.float64 and not np.shares_memory(out, a)
    t = torch.ones(2)
    assert check_tensor(t, "t") is t and check_tensor(t, "t", copy=True) is not t
    assert check_rng(3).integers(100) == np.random.default_rng(3).integers(100)
    g = check_generator(5)
    assert torch.rand(1, generator=g).item() == torch.rand(1, generator=torch.Generator().manual_seed(5)).item()
    with pytest.raises(ValueError):
        check_array([1.0], "a", dtype="int")
    assert check_scalar(3, "k", numbers.Integral) == 3


def test_messages_stay_on_one_line_for_multiline_reprs():
    with pytest.raises(InputError) as info:
        check_choice(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()), "act", ["relu"])
    assert "\n" not in str(info.value) and "act" in str(info.value)


def test_check_device():
    from icml24.validation import check_device

    assert check_device("cpu") == torch.device("cpu")
    assert check_device(torch.device("cpu"), "--device") == torch.device("cpu")
    assert check_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    for bad in ("gpu", 3.5, None, "meta"):
        with pytest.raises(InputError, match="device"):
            check_device(bad)
    if not torch.cuda.is_available():
        with pytest.raises(InputError, match="no CUDA device"):
            check_device("cuda")
