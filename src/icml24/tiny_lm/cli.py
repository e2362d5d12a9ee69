"""``icml24 tiny-lm derive``: prune SmolLM2's tokenizer to a corpus, derive a child by parameter inheritance and
write it (a plain Llama model and its tokenizer) to ``<run directory>/model/``, a folder that ``from_pretrained``
loads.
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
    d = sub.add_parser(
        "derive", parents=parents, help="compact tokenizer + parameter inheritance, saved to <run>/model/"
    )
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
    p.add_argument("--criterion", default="l2", help="width criterion: l1, l2, taylor, mask, random")
    p.add_argument("--layer-selection", default="first_last", help="first_last, middle or random")
    p.add_argument("--seed", type=int, default=0, help="seed of the random criterion and layer selection")
    from ..verbs import add_out_argument

    add_out_argument(p)
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
    import torch

    from ..verbs import elapsed, finish_run, start_run
    from .corpus import parent_model, parent_tokenizer
    from .inherit import count_parameters, inherit
    from .tokenizer import compact_tokenizer, embedding_share, tokens_per_byte

    run = start_run(
        args,
        "tiny-lm-derive",
        f"tiny-lm derive: a {layers}-layer child of width {hidden} ({heads} heads, FFN {ffn}) from SmolLM2-135M with "
        f"a {vocab}-piece tokenizer, {criterion} width criterion, {selection} layers",
    )
    with elapsed("tiny-lm derive"):  # no per-stage hook in the library: elapsed time only
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
        out = run.path / "model"
        out.mkdir()
        child.save_pretrained(out)
        ct.tokenizer.save_pretrained(out)
        torch.save({"kept_ids": ct.kept_ids}, out / "id_map.pt")
        sample = texts[0][:100_000]
        tpb = (tokens_per_byte(tok, sample), tokens_per_byte(ct.tokenizer, sample))
    params, share = count_parameters(child), embedding_share(child)
    lines = [
        f"child: {layers} layers, width {hidden}, {heads} heads, FFN {ffn}, {ct.vocab_size} pieces, "
        f"{params:,} parameters (embedding share {share:.1%})",
        f"tokenizer: coverage {ct.coverage:.4f} of corpus tokens; tokens per byte {tpb[0]:.4f} -> {tpb[1]:.4f}",
    ]
    print("\n".join(lines))
    print(f"model and tokenizer written to {out} (LlamaForCausalLM / AutoTokenizer .from_pretrained)")
    results = {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "ffn": ffn,
        "vocab": ct.vocab_size,
        "parameters": params,
        "embedding_share": share,
        "coverage": ct.coverage,
        "parent_tokens_per_byte": tpb[0],
        "child_tokens_per_byte": tpb[1],
        "model": str(out),
    }
    finish_run(run, results, lines)
    return 0


__all__ = ["register", "add_arguments", "derive_command"]
