"""``icml24 kisa annotate``: train KISA on demonstrations of the tabletop world (or read them from an HDF5 file
in the official layout), annotate held-out demonstrations, print predicted and true keyframes with their skills,
and save one figure per demonstration (score matrix, predicted and true keyframes).
"""

from __future__ import annotations

import argparse

from ..errors import InputError
from ..validation import check_int, check_seed

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
    p.add_argument("--demos", type=int, default=5, help="demonstrations to annotate (default 5)")
    p.add_argument("--train", type=int, default=200, help="training demonstrations (default 200)")
    p.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    p.add_argument("--hdf5", default=None, help="also write the annotated demonstrations to this .h5 file")
    p.add_argument("--out", default="runs", help="folder of the figures (default runs/)")
    p.add_argument("--seed", type=int, default=0)
    return p


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
    import time
    from pathlib import Path

    from ..claims import Scale
    from ..runs import artifacts_to
    from .decoding import decode_keyframes, keyframe_metrics
    from .encoders import encode_skills
    from .experiments import demo_figure, image_encoder, kisa_config
    from .io import write_demos_hdf5
    from .kisa import fit_kisa
    from .losses import monotonic_target
    from .world import SKILLS, make_demos

    enc = image_encoder()
    skills = encode_skills(SKILLS)
    train = make_demos(n_train, 1000 + seed)
    test = make_demos(n, 5000 + seed)
    x_train = [enc(d.frames) for d in train]
    cfg = kisa_config(Scale.QUICK, seed, steps=steps)
    print(f"training KISA on {n_train} tabletop demonstrations ({steps} steps, d_model {cfg.d_model}) ...")
    model = fit_kisa(x_train, [d.labels for d in train], [d.keyframes for d in train], skills, cfg, pad=True)
    out = Path(args.out) / time.strftime("kisa-annotate-%Y%m%dT%H%M%S", time.gmtime())
    out.mkdir(parents=True, exist_ok=True)
    x_test = [enc(d.frames) for d in test]
    scores = model.scores(x_test, pad=True)
    with artifacts_to(out):
        for i, (s, d) in enumerate(zip(scores, test)):
            y, keys = decode_keyframes(s.numpy())
            m = keyframe_metrics(keys, d.keyframes, len(d.labels))
            print(f"demo {i} ({len(d.labels)} frames): F1 {m['f1']:.2f}, MAE {m['mae']:.1f}")
            print(f"  predicted: {', '.join(f'{k}:{SKILLS[y[k]]}' for k in keys)}")
            print(f"  true:      {', '.join(f'{k}:{SKILLS[d.labels[k]]}' for k in d.keyframes)}")
            demo_figure(s.numpy(), d, f"demo-{i}")
    if args.hdf5:
        gts = [monotonic_target(x, d.keyframes).numpy() for x, d in zip(x_test, test)]
        path = write_demos_hdf5(
            args.hdf5,
            [d.frames for d in test],
            [d.labels for d in test],
            [d.keyframes for d in test],
            [d.captions for d in test],
            gts,
        )
        print(f"demonstrations written to {path}")
    print(f"figures saved in {out}")
    return 0


__all__ = ["register", "add_arguments", "annotate_command"]
