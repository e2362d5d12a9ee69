"""``icml24 tiny-lm derive``: prune SmolLM2's tokenizer to a corpus, derive a child by parameter inheritance and
write it (a plain Llama model and its tokenizer) to a folder that ``from_pretrained`` loads.
"""

from __future__ import annotations

import argparse

from ..errors import InputError
from ..validation import check_choice, check_int, check_seed

PARENTS = ("smollm2",)
CRITERIA = ("l1", "l2", "taylor", "mask", "random")
LAYERS = ("first_last", "middle", "random")


def register(subparsers, parents) -> None:
    """Add ``icml24 tiny-lm`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser("tiny-lm", parents=parents, help="PanGu-pi Pro: derive a tiny Llama from a larger one")
    sub = p.add_subparsers(dest="tiny_lm_command", required=True)
    d = sub.add_parser("derive", parents=parents, help="compact tokenizer + parameter inheritance, saved to --out")
    add_arguments(d)
    d.set_defaults(func=derive_command)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the verb's arguments.

    Parameters
    ----------
    p : argparse.ArgumentParser

    Returns
    -------
    argparse.ArgumentParser
        ``p`` itself.
    """
    p.add_argument("--parent", default="smollm2", help="the parent model: smollm2 (SmolLM2-135M-Instruct)")
    p.add_argument("--layers", type=int, required=True, help="layers of the child")
    p.add_argument("--hidden", type=int, required=True, help="hidden width of the child")
    p.add_argument("--heads", type=int, default=None, help="attention heads (default: hidden / 64, head dim kept)")
    p.add_argument("--ffn", type=int, default=None, help="FFN width (default: the parent's ratio, 8/3)")
    p.add_argument("--vocab", type=int, required=True, help="pieces of the compact tokenizer")
    p.add_argument(
        "--corpus", default=None, help="a UTF-8 text file to count tokens on (default: Austen + Shakespeare)"
    )
    p.add_argument("--criterion", default="l2", help="width criterion: l1, l2 (default), taylor, mask, random")
    p.add_argument("--layer-selection", default="first_last", help="first_last (default), middle or random")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="folder to write the model and tokenizer to")
    return p


def derive_command(args: argparse.Namespace) -> int:
    """Run the verb.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    check_choice(args.parent, "--parent", PARENTS)
    layers = check_int(args.layers, "--layers", min_val=1)
    hidden = check_int(args.hidden, "--hidden", min_val=1)
    vocab = check_int(args.vocab, "--vocab", min_val=1)
    criterion = check_choice(args.criterion, "--criterion", CRITERIA)
    selection = check_choice(args.layer_selection, "--layer-selection", LAYERS)
    seed = check_seed(args.seed, "--seed")
    heads = check_int(args.heads, "--heads", min_val=1) if args.heads is not None else max(1, hidden // 64)
    ffn = check_int(args.ffn, "--ffn", min_val=1) if args.ffn is not None else max(1, round(hidden * 8 / 3))
    if args.corpus is not None:
        from pathlib import Path

        path = Path(args.corpus)
        if not path.is_file():
            raise InputError(f"--corpus {args.corpus} is not a file", "give a UTF-8 text file")
        texts = [path.read_text(encoding="utf-8", errors="replace")]
    else:
        from .corpus import corpus

        texts = list(corpus(None)[0])
    from pathlib import Path

    import torch

    from .corpus import parent_model, parent_tokenizer
    from .inherit import count_parameters, inherit
    from .tokenizer import compact_tokenizer, embedding_share, tokens_per_byte

    tok = parent_tokenizer()
    ct = compact_tokenizer(tok, texts, vocab)
    parent = parent_model()
    probe = None
    if criterion in ("taylor", "mask"):
        ids = ct.tokenizer(texts[0][:200_000], add_special_tokens=False)["input_ids"]
        probe = torch.tensor(ids[: 16 * 64], dtype=torch.long).view(-1, 64)
    child = inherit(
        parent,
        num_layers=layers,
        hidden_size=hidden,
        num_heads=heads,
        intermediate_size=ffn,
        vocab=ct,
        layers=selection,
        criterion=criterion,
        batches=probe,
        seed=seed,
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    child.save_pretrained(out)
    ct.tokenizer.save_pretrained(out)
    torch.save({"kept_ids": ct.kept_ids}, out / "id_map.pt")
    sample = texts[0][:100_000]
    print(
        f"child: {layers} layers, width {hidden}, {heads} heads, FFN {ffn}, {ct.vocab_size} pieces, "
        f"{count_parameters(child):,} parameters (embedding share {embedding_share(child):.1%})"
    )
    print(
        f"tokenizer: coverage {ct.coverage:.4f} of corpus tokens; tokens per byte {tokens_per_byte(tok, sample):.4f} "
        f"-> {tokens_per_byte(ct.tokenizer, sample):.4f}"
    )
    print(f"written to {out}")
    return 0


__all__ = ["register", "add_arguments", "derive_command"]
