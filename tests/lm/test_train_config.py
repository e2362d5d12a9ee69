"""TrainConfig checks every field when it is built (issue 47): a bad value fails at construction, naming the field,
and valid settings keep their values and the schedule."""

import math

import numpy as np
import pytest

from icml24.errors import InputError
from icml24.nn.lm_train import TrainConfig
from icml24.testing import assert_refuses, bad

NAN, INF = math.nan, math.inf

CASES = [
    bad("TrainConfig", "steps", lambda: TrainConfig(steps=-1), kind="range"),
    bad("TrainConfig", "steps", lambda: TrainConfig(steps=2.5), kind="type"),
    bad("TrainConfig", "steps", lambda: TrainConfig(steps=None), kind="none"),
    bad("TrainConfig", "batch_size", lambda: TrainConfig(batch_size=0), kind="range"),
    bad("TrainConfig", "batch_size", lambda: TrainConfig(batch_size="32"), kind="type"),
    bad("TrainConfig", "lr", lambda: TrainConfig(lr=0.0), kind="range"),
    bad("TrainConfig", "lr", lambda: TrainConfig(lr=NAN), kind="nan"),
    bad("TrainConfig", "lr", lambda: TrainConfig(lr=INF), kind="inf"),
    bad("TrainConfig", "min_lr", lambda: TrainConfig(min_lr=-1e-4), kind="range"),
    bad("TrainConfig", "min_lr", lambda: TrainConfig(min_lr=None), kind="none"),
    bad("TrainConfig", "warmup", lambda: TrainConfig(warmup=-5), kind="range"),
    bad("TrainConfig", "weight_decay", lambda: TrainConfig(weight_decay=-0.1), kind="range"),
    bad("TrainConfig", "weight_decay", lambda: TrainConfig(weight_decay=NAN), kind="nan"),
    bad("TrainConfig", "betas", lambda: TrainConfig(betas=(0.9,)), kind="length"),
    bad("TrainConfig", "betas", lambda: TrainConfig(betas=(1.0, 0.95)), kind="range"),
    bad("TrainConfig", "betas", lambda: TrainConfig(betas="ab"), kind="str"),
    bad("TrainConfig", "betas", lambda: TrainConfig(betas=None), kind="none"),
    bad("TrainConfig", "betas", lambda: TrainConfig(betas=(0.9, NAN)), kind="nan"),
    bad("TrainConfig", "grad_clip", lambda: TrainConfig(grad_clip=NAN), kind="nan"),
    bad("TrainConfig", "grad_clip", lambda: TrainConfig(grad_clip=-1.0), kind="range"),
    bad("TrainConfig", "log_every", lambda: TrainConfig(log_every=-1), kind="range"),
    bad("TrainConfig", "checkpoint_every", lambda: TrainConfig(checkpoint_every=0), kind="range"),
    bad("TrainConfig", "seed", lambda: TrainConfig(seed=-1), kind="range"),
    bad("TrainConfig", "seed", lambda: TrainConfig(seed=True), kind="type"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_valid_settings_are_kept():
    cfg = TrainConfig(steps=np.int64(12), lr=1, min_lr=0, warmup=0, betas=[0.9, 0.99], grad_clip=0)
    assert (cfg.steps, cfg.lr, cfg.min_lr, cfg.betas, cfg.grad_clip) == (12, 1.0, 0.0, (0.9, 0.99), 0.0)
    assert type(cfg.steps) is int and type(cfg.lr) is float
    assert TrainConfig() == TrainConfig(500, 32, 3e-3, 3e-4, 20, 0.01, (0.9, 0.95), 1.0, 50, 100, 0)
    default = TrainConfig()
    assert [default.lr_at(s) for s in (0, 19, 20, 500)] == pytest.approx([1.5e-4, 3e-3, 3e-3, 3e-4])


def test_a_bad_field_is_an_input_error_and_a_value_error():
    with pytest.raises(ValueError, match="lr"):
        TrainConfig(lr=-1.0)
    assert issubclass(InputError, ValueError)
