import subprocess
import sys

from icml24 import registry
from icml24.testing import check_claim
from icml24.tiny_lm import paper
from tests.conftest import needs_text


def test_describe_is_light():
    code = (
        "import sys; from icml24 import registry; m = registry.describe('tiny_lm'); "
        "print(len(m.claims), 'torch' in sys.modules, all(c.paper for c in m.claims))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["5", "False", "True"]


def test_method_is_registered():
    assert registry.get("tiny_lm") is paper.METHOD
    assert [c.name for c in paper.METHOD.claims] == [
        "compact-tokenizer",
        "inheritance",
        "inheritance-layers",
        "multiple-rounds",
        "depth",
    ]


@needs_text
def test_compact_tokenizer_claim():
    m = check_claim(
        paper.TOKENIZER,
        [
            {"coverage_val": 0.98},  # the compact vocabulary misses held-out tokens
            {"vocab_fraction": 0.5},  # not a small fraction
            {"compact_val_bpb": 1e3},  # the compact model is worse
            {"compact_val_bpb": 3.0, "full_val_bpb": 3.0},  # a copy of the baseline
            {"param_ratio": 1.5},  # not equal parameters
        ],
    )
    assert m["compact_tokens_per_byte"] > m["full_tokens_per_byte"]  # pruning lengthens the token sequence


@needs_text
def test_inheritance_claims():  # the one test that loads SmolLM2 (both claims read the same cached run)
    m = check_claim(
        paper.INHERITANCE,
        [
            {"first_last_taylor_val_loss": 1e3},  # inheritance does not help
            {"random_init_val_loss": 0.0},  # random init is better
            {"random_init_val_loss": 6.0, "first_last_taylor_val_loss": 6.0},  # a copy of the baseline
        ],
    )
    assert m["child_params"] > 1e6 and m["random_init_init_loss"] > 0
    check_claim(
        paper.LAYERS,
        [
            {"middle_taylor_val_loss": 0.0},  # the middle layers are better
            {"middle_taylor_val_loss": 6.0, "first_last_taylor_val_loss": 6.0},  # no difference
        ],
    )


@needs_text
def test_multiple_rounds_finding():
    m = check_claim(
        paper.ROUNDS,
        [
            {"full_gain": -1.0},  # a second epoch does not help: nothing to recover
            {"loss_early_loss": 1e3},  # it forgets the early batches more than uniform
        ],
        expect=False,
    )
    assert m["loss_steps"] == m["uniform_steps"] == m["full_steps"] / 2
    good = {"full_gain": 0.2, "loss_gain": 0.15, "loss_early_loss": 1.0, "uniform_early_loss": 2.0}
    assert paper.ROUNDS.judge({**m, **good}) is True  # the claim can hold
    assert paper.ROUNDS.judge({**m, **good, "loss_gain": 0.05}) is False  # recovers too little


@needs_text
def test_depth_finding():
    m = check_claim(
        paper.DEPTH,
        [
            {"deep_val_loss": 1e3},  # depth does not help
            {"decode_slowdown": 0.9},  # deeper decodes faster
        ],
        expect=False,
    )
    assert m["decode_slowdown"] > 1.0  # the half that reproduces
    assert paper.DEPTH.judge({**m, "deep_val_loss": m["shallow_val_loss"] - 0.1}) is True
    assert paper.DEPTH.judge({**m, "deep_val_loss": m["shallow_val_loss"] - 0.1, "param_ratio": 2.0}) is False
