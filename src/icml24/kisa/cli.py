"""``icml24 kisa annotate``: train KISA on demonstrations of the tabletop world, annotate held-out demonstrations,
print predicted and true keyframes with their skills, and save one figure per demonstration (score matrix,
predicted and true keyframes) in a fresh run directory (``<out>/<UTC time>-kisa-annotate/``).
"""

from __future__ import annotations

import argparse

from ..errors import InputError
from ..validation import check_int, check_seed
from ..verbs import add_out_argument

WORLDS = ("tabletop",)


def register(subparsers, parents) -> None:
    """Add ``icml24 kisa`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        The core parser's subcommands.
    parents : list of argparse.ArgumentParser
        Shared options.
    """
    p = subparsers.add_parser("kisa", parents=parents, help="KISA keyframes and skill annotation of demonstrations")
    sub = p.add_subparsers(dest="kisa_command", required=True)
    a = sub.add_parser("annotate", parents=parents, help="train on the tabletop world and annotate demonstrations")
    add_arguments(a)
    a.set_defaults(func=annotate_command)


def add_arguments(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the verb's arguments.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The verb's parser.

    Returns
    -------
    argparse.ArgumentParser
        ``p`` itself.
    """
    p.add_argument("--world", default="tabletop", choices=WORLDS, help="the procedural tabletop world")
    p.add_argument("--demos", type=int, default=5, help="held-out demonstrations to annotate")
    p.add_argument("--train", type=int, default=200, help="training demonstrations")
    p.add_argument("--steps", type=int, default=300, help="training steps")
    p.add_argument(
        "--hdf5", default=None, metavar="FILE", help="also write the annotated demonstrations to this .h5 file"
    )
    add_out_argument(p)
    p.add_argument("--seed", type=int, default=0, help="seed of the demonstrations and of the model")
    return p


def _n(count: int, thing: str) -> str:
    return f"{count} {thing}{'' if count == 1 else 's'}"


def _step_bar(steps: int):
    """A tqdm bar on stderr that advances with every optimizer step (silent off a terminal), and its unhook."""
    import sys

    from torch.optim.optimizer import register_optimizer_step_post_hook
    from tqdm.auto import tqdm

    bar = tqdm(total=steps, desc="training KISA", unit="step", file=sys.stderr, disable=None, leave=False)
    handle = register_optimizer_step_post_hook(lambda *_: bar.update())

    def close() -> None:
        handle.remove()
        bar.close()

    return close


def annotate_command(args: argparse.Namespace) -> int:
    """Run the verb.

    Parameters
    ----------
    args : argparse.Namespace
        Parsed arguments.

    Returns
    -------
    int
        0.
    """
    n = check_int(args.demos, "--demos", min_val=1, max_val=100)
    n_train = check_int(args.train, "--train", min_val=2)
    steps = check_int(args.steps, "--steps", min_val=1)
    seed = check_seed(args.seed, "--seed")
    if args.world not in WORLDS:
        raise InputError(f"unknown --world {args.world!r}", f"choose one of: {', '.join(WORLDS)}")
    import warnings

    from ..claims import Scale
    from ..verbs import finish_run, start_run
    from .experiments import kisa_config

    cfg = kisa_config(Scale.QUICK, seed, steps=steps)
    run = start_run(
        args,
        "kisa-annotate",
        f"kisa annotate: train KISA on {n_train} tabletop demonstrations ({_n(steps, 'step')}, d_model {cfg.d_model}), "
        f"then annotate {n} held-out demonstration{'s' if n > 1 else ''}",
    )
    with warnings.catch_warnings():
        if not getattr(args, "verbose", False):
            warnings.simplefilter("ignore")  # torch's transformer warnings are not the user's business
        results, report = _annotate(run.path, cfg, n, n_train, seed, args.hdf5)
    finish_run(run, results, report)
    return 0


def _annotate(path, cfg, n: int, n_train: int, seed: int, hdf5) -> tuple[dict, list[str]]:
    import sys

    import numpy as np
    from tqdm.auto import tqdm

    from ..runs import artifacts_to
    from .decoding import decode_keyframes, keyframe_metrics
    from .encoders import encode_skills
    from .experiments import demo_figure, image_encoder
    from .io import write_demos_hdf5
    from .kisa import fit_kisa
    from .losses import monotonic_target
    from .world import SKILLS, make_demos

    enc = image_encoder()
    skills = encode_skills(SKILLS)
    train = make_demos(n_train, 1000 + seed)
    test = make_demos(n, 5000 + seed)
    bar = tqdm(
        train, desc=f"encoding {n_train} demonstrations", unit="demo", file=sys.stderr, disable=None, leave=False
    )
    x_train = [enc(d.frames) for d in bar]
    close = _step_bar(cfg.steps)
    try:
        model = fit_kisa(x_train, [d.labels for d in train], [d.keyframes for d in train], skills, cfg, pad=True)
    finally:
        close()
    x_test = [enc(d.frames) for d in test]
    scores = model.scores(x_test, pad=True)
    report: list[str] = []
    demos: list[dict] = []
    figures: list[str] = []

    def say(line: str) -> None:
        print(line)
        report.append(line)

    with artifacts_to(path):
        for i, (s, d) in enumerate(zip(scores, test)):
            y, keys = decode_keyframes(s.numpy())
            m = keyframe_metrics(keys, d.keyframes, len(d.labels))
            say(f"demo {i} ({len(d.labels)} frames): F1 {m['f1']:.2f}, MAE {m['mae']:.1f}")
            say(f"  predicted: {', '.join(f'{k}:{SKILLS[y[k]]}' for k in keys)}")
            say(f"  true:      {', '.join(f'{k}:{SKILLS[d.labels[k]]}' for k in d.keyframes)}")
            png = demo_figure(s.numpy(), d, f"demo-{i}")
            figures.append(png.name)
            demos.append(
                {
                    "frames": len(d.labels),
                    "f1": float(m["f1"]),
                    "mae": float(m["mae"]),
                    "predicted": [[int(k), SKILLS[y[k]]] for k in keys],
                    "true": [[int(k), SKILLS[d.labels[k]]] for k in d.keyframes],
                }
            )
    results = {
        "mean_f1": float(np.mean([d["f1"] for d in demos])),
        "mean_mae": float(np.mean([d["mae"] for d in demos])),
        "final_loss": float(model.losses[-1]),
        "demos": demos,
    }
    if hdf5:
        gts = [monotonic_target(x, d.keyframes).numpy() for x, d in zip(x_test, test)]
        h5 = write_demos_hdf5(
            hdf5,
            [d.frames for d in test],
            [d.labels for d in test],
            [d.keyframes for d in test],
            [d.captions for d in test],
            gts,
        )
        print(f"demonstrations written to {h5}")
        results["hdf5"] = str(h5)
    print(f"figures: {', '.join(figures)}")
    return results, report


__all__ = ["register", "add_arguments", "annotate_command"]
