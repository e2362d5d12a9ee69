"""Run by test_core.py under ``torchrun --nproc_per_node 2`` (and imported for the one-process run).

A causal LM in plain torch (embedding, one linear layer, tied head) with the Hugging Face calling convention,
so that the two worker processes do not import transformers (the test stays short).
"""

import json
import os
import sys
from types import SimpleNamespace

import torch


class TinyLM(torch.nn.Module):
    """``model(input_ids=x, labels=x).loss`` as in transformers."""

    def __init__(self, vocab: int = 40, width: int = 16):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, width)
        self.mix = torch.nn.Linear(width, width)

    def get_input_embeddings(self):
        return self.emb

    def forward(self, input_ids, labels):
        h = torch.tanh(self.mix(self.emb(input_ids).cumsum(1)))
        logits = h @ self.emb.weight.t()
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), labels[:, 1:].reshape(-1))
        return SimpleNamespace(loss=loss, logits=logits)


def run() -> dict:
    """Train the model for three steps on one fixed global batch; return its losses and a weight checksum."""
    from icml24.tiny_lm.train import recipe, train_on_batches

    torch.manual_seed(0)
    model = TinyLM()
    batch = torch.randint(40, (1, 4, 8), generator=torch.Generator().manual_seed(0))
    res = train_on_batches(model, batch.repeat(3, 1, 1), recipe(3, lr=1e-2, batch_size=4))
    with torch.no_grad():
        checksum = float(sum(p.double().sum() for p in model.parameters()))
    return {"losses": res.losses, "checksum": checksum, "world": res.world_size}


if __name__ == "__main__":
    torch.set_num_threads(1)
    import torch.distributed as dist

    dist.init_process_group("gloo")
    out = run()
    if dist.get_rank() == 0:
        with open(sys.argv[1], "w") as f:
            json.dump(out, f)
    dist.destroy_process_group()
    os._exit(0)
