"""``icml24 dera generate``: decode with DeRa from a pair of local models, or from the pair the ground trains.

Without ``--aligned``/``--ref`` the command uses the enumerable-language pair (an SFT GPT-2 and its copy aligned
to the symbol reward at beta = 1), trained on first use in about 20 seconds and cached under the icml24 cache
folder (``save_pretrained``, safetensors). With them, any pair of local Hugging Face causal-LM folders with a
shared tokenizer works (``local_files_only``: nothing is downloaded).
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
from pathlib import Path

from ..errors import InputError
from ..extras import require
from ..threads import single_thread
from ..verbs import add_out_argument, finish_run, start_run

log = logging.getLogger(__name__)


def register(subparsers, parents) -> None:
    """Add ``icml24 dera generate`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    dr = subparsers.add_parser("dera", parents=parents, help="DeRa decoding-time realignment")
    dr.set_defaults(help_parser=dr)
    dr_sub = dr.add_subparsers(dest="verb", parser_class=type(dr), metavar="{generate}")
    g = dr_sub.add_parser("generate", parents=parents, help="decode with DeRa at a chosen lambda")
    g.add_argument(
        "--lambda", dest="lam", type=float, required=True, help="0 = reference, 1 = aligned model, > 1 extrapolates"
    )
    g.add_argument(
        "--prompt", required=True, help="the prompt (trained pair: 2 of the symbols abcd, e.g. ab; else any text)"
    )
    g.add_argument("--aligned", default=None, help="local HF folder of the aligned model (default: trained pair)")
    g.add_argument("--ref", default=None, help="local HF folder of its reference model")
    g.add_argument("--samples", type=int, default=4, help="number of samples (1 = greedy unless --sample)")
    g.add_argument("--sample", action="store_true", help="sample even for one output")
    g.add_argument(
        "--num-beams", type=int, default=1, help="beam search with this many beams (prints the --samples best)"
    )
    g.add_argument(
        "--max-new-tokens", type=int, default=64, help="tokens to generate (model folders; the trained pair: 4)"
    )
    g.add_argument("--temperature", type=float, default=1.0, help="sampling temperature")
    g.add_argument("--top-k", type=int, default=0, help="sample from the k most likely tokens (0 = all)")
    g.add_argument("--top-p", type=float, default=1.0, help="nucleus sampling mass (1 = all)")
    g.add_argument("--seed", type=int, default=0, help="seed of the sampling (and of the trained pair)")
    add_out_argument(g)
    g.set_defaults(func=generate_command)


def default_pair(seed: int = 0):
    """The aligned and reference models of the enumerable language, trained once and cached.

    On first use the pair is trained (about 20 seconds) and saved under the icml24 cache folder
    (``save_pretrained``, safetensors); later calls load it from there (``local_files_only``).

    Parameters
    ----------
    seed : int, default 0
        Seed of the language and of the training; each seed has its own cached pair.

    Returns
    -------
    tuple
        ``(aligned, ref, language)``: the aligned and the reference causal LMs (``transformers`` models in
        evaluation mode) and the :class:`~icml24.data.text.EnumerableLanguage`.
    """
    require("transformers", extra="lm", what="dera")
    from transformers import AutoModelForCausalLM

    from ..data import cache_dir
    from .baselines import retrain
    from .experiments import BETA, build_world

    folder = cache_dir("dera", f"enumerable-seed{seed}")
    if (folder / "aligned" / "config.json").is_file() and (folder / "ref" / "config.json").is_file():
        from ..data.text import EnumerableLanguage

        lang = EnumerableLanguage(symbols="abcd", prompt_len=2, response_len=4, seed=seed)
        return (
            AutoModelForCausalLM.from_pretrained(folder / "aligned", local_files_only=True).eval(),
            AutoModelForCausalLM.from_pretrained(folder / "ref", local_files_only=True).eval(),
            lang,
        )
    print("training the reference and aligned models of the enumerable language (first use only)...")
    with single_thread():
        w = build_world(seed, 300)
        aligned, _ = retrain(w.ref, w.lang, w.ref_lp, w.reward, BETA, steps=150, prompts_per_step=4, seed=seed)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=folder))
    try:
        aligned.save_pretrained(tmp / "aligned")
        w.ref.save_pretrained(tmp / "ref")
        for name in ("aligned", "ref"):
            target = folder / name
            if target.exists():
                shutil.rmtree(target)
            (tmp / name).rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return aligned, w.ref, w.lang


def _lambdas(lam: float) -> list[tuple[float, str]]:
    """The lambdas decoded: 0 (reference) and 1 (aligned) beside the chosen one, each with its label."""
    out = [(0.0, "lambda=0 (reference)"), (1.0, "lambda=1 (aligned)")]
    if lam in (0.0, 1.0):
        return out
    return [*out, (lam, f"lambda={lam:g} (DeRa)")]


def generate_command(args: argparse.Namespace) -> int:
    """Run ``icml24 dera generate`` from parsed arguments and print the decoded responses.

    Decodes at the chosen lambda and, beside it, at lambda 0 (the reference) and 1 (the aligned model), with
    the same seed and settings; writes them to a new run directory under ``--out``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed options: ``lam``, ``prompt``, ``aligned``, ``ref``, ``samples``, ``sample``,
        ``num_beams``, ``max_new_tokens``, ``temperature``, ``top_k``, ``top_p``, ``seed`` and ``out``.

    Returns
    -------
    int
        The exit status, 0.

    Raises
    ------
    InputError
        When ``--lambda`` is negative or not finite, ``--samples``, ``--num-beams`` or ``--max-new-tokens`` is below
        1, ``--samples`` exceeds ``--num-beams`` in beam search, the two folders' tokenizers differ, only one of
        ``--aligned`` and ``--ref`` is given, the prompt is not in the enumerable language (default pair), or a
        folder is not a local Hugging Face model folder.
    """
    require("transformers", extra="lm", what="dera")
    import torch
    from transformers.utils import logging as hf_logging

    from .checks import check_lambda
    from .decoding import dera_generate

    hf_logging.disable_progress_bar()
    lam = check_lambda(args.lam)
    if args.samples < 1 or args.max_new_tokens < 1 or args.num_beams < 1:
        raise InputError("--samples, --num-beams and --max-new-tokens must be >= 1")
    beams = args.num_beams > 1
    if beams and args.samples > args.num_beams:
        raise InputError(f"--samples {args.samples} exceeds --num-beams {args.num_beams}", "print at most one per beam")
    rows = 1 if beams else args.samples
    sample = (args.samples > 1 and not beams) or args.sample
    beam_kw = {"num_beams": args.num_beams, "num_return_sequences": args.samples} if beams else {}
    if (args.aligned is None) != (args.ref is None):
        raise InputError("give both --aligned and --ref, or neither (to use the trained enumerable pair)")
    lambdas = _lambdas(lam)
    mode = f"beam search ({args.num_beams} beams)" if beams else ("sampling" if sample else "greedy")
    what = f"{args.samples} {mode} output{'s' if args.samples > 1 else ''} for prompt {args.prompt!r}"
    at = ", ".join(label for _, label in lambdas)
    if args.aligned is None:
        from ..data.text import EnumerableLanguage, SymbolReward

        lang = EnumerableLanguage(symbols="abcd", prompt_len=2, response_len=4, seed=args.seed)
        if len(args.prompt) != lang.prompt_len or any(c not in lang.symbols for c in args.prompt):
            raise InputError(
                f"prompt {args.prompt!r} is not in the language",
                f"use {lang.prompt_len} of the symbols {lang.symbols!r}, e.g. --prompt ab",
            )
        run = start_run(
            args,
            "dera-generate",
            f"decode {what} at {at}, from the enumerable-language pair of seed {args.seed} (trained on first use, "
            "about 20 s, then cached)",
        )
        aligned, ref, lang = default_pair(args.seed)
        ids = torch.tensor([lang.encode(args.prompt)] * rows)
        reward = SymbolReward()
        cols: dict[str, list[tuple[str, float]]] = {}
        for value, label in lambdas:
            out = dera_generate(
                aligned,
                ref,
                ids,
                lam=value,
                max_new_tokens=lang.response_len,
                do_sample=sample,
                temperature=args.temperature,
                top_k=args.top_k,
                top_p=args.top_p,
                seed=args.seed,
                allowed_ids=lang.symbol_ids,
                eos_token_id=None,
                **beam_kw,
            )
            resps = [
                lang.decode_response(row[lang.response_start : lang.response_start + lang.response_len].tolist())
                for row in out
            ]
            cols[label] = [(r, float(reward(args.prompt, r))) for r in resps]
        width = max(len(label) for label in cols)
        lines = [
            f"DeRa lambda={lam:g} (beta/lambda = {1.0 / lam if lam else float('inf'):g}), prompt {args.prompt!r}:",
            ("  " + "   ".join(f"{label:<{width}}" for label in cols)).rstrip(),
        ]
        for i in range(len(next(iter(cols.values())))):
            lines.append(
                ("  " + "   ".join(f"{f'{c[i][0]}   reward {c[i][1]:g}':<{width}}" for c in cols.values())).rstrip()
            )
        means = {label: sum(r for _, r in c) / len(c) for label, c in cols.items()}
        lines.append(("  " + "   ".join(f"{f'mean reward {m:.3g}':<{width}}" for m in means.values())).rstrip())
        print("\n".join(lines))
        results = {
            "lambda": lam,
            "prompt": args.prompt,
            "generations": {label: [{"response": r, "reward": w} for r, w in c] for label, c in cols.items()},
            "mean_reward": means,
        }
        finish_run(run, results, lines)
        return 0
    from transformers import AutoModelForCausalLM, AutoTokenizer

    paths = {k: Path(v) for k, v in (("aligned", args.aligned), ("ref", args.ref))}
    for k, p in paths.items():
        if not (p / "config.json").is_file():
            raise InputError(f"--{k} {p} is not a local Hugging Face model folder (no config.json)")
    tok = AutoTokenizer.from_pretrained(paths["aligned"], local_files_only=True)
    tok.padding_side = "left"
    try:
        ref_tok = AutoTokenizer.from_pretrained(paths["ref"], local_files_only=True)
    except (OSError, ValueError):
        ref_tok = None  # a model folder without its own tokenizer: the aligned model's is used
    if ref_tok is not None and ref_tok.get_vocab() != tok.get_vocab():
        raise InputError(
            "--ref has a different tokenizer vocabulary from --aligned",
            "DeRa mixes the two models token by token: give an aligned model and its own reference",
        )
    run = start_run(
        args,
        "dera-generate",
        f"decode {what} at {at}, {args.max_new_tokens} new tokens each, from {paths['aligned']} and its "
        f"reference {paths['ref']}",
    )
    aligned = AutoModelForCausalLM.from_pretrained(paths["aligned"], local_files_only=True).eval()
    ref = AutoModelForCausalLM.from_pretrained(paths["ref"], local_files_only=True).eval()
    enc = tok([args.prompt] * rows, return_tensors="pt", padding=True)
    lines, generations = [], {}
    for value, label in lambdas:
        out = dera_generate(
            aligned,
            ref,
            enc["input_ids"],
            attention_mask=enc["attention_mask"],
            lam=value,
            max_new_tokens=args.max_new_tokens,
            do_sample=sample,
            **beam_kw,
            temperature=args.temperature,
            top_k=args.top_k,
            top_p=args.top_p,
            seed=args.seed,
            pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
        )
        texts = [tok.decode(row[enc["input_ids"].size(1) :], skip_special_tokens=True) for row in out]
        generations[label] = texts
        block = [f"== {label} =="]
        for text in texts:
            block += [text, "---"]
        print("\n".join(block), flush=True)
        lines += block
    finish_run(run, {"lambda": lam, "prompt": args.prompt, "generations": generations}, lines)
    return 0
