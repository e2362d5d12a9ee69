"""``icml24 red-xai question``: plant a shortcut, train a small classifier on it, and question it with the RED loop.

With ``--data digits-border`` or ``fashion-border`` the spurious feature is the noise border of
:mod:`icml24.data.spurious` (two classes): the loop runs with ``artifact="swap"`` on the training images and measures
on the held-out ones. :func:`register` adds the verb to the core command line; :func:`question_command` runs it.
Bad input raises :class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse

DATA = ("digits", "fashion-mnist", "digits-border", "fashion-border")
PLANTS = ("corner", "border")


def register(subparsers, parents) -> None:
    """Add ``icml24 red-xai`` to the core command line (no heavy import here).

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
    parents : list of argparse.ArgumentParser
    """
    p = subparsers.add_parser("red-xai", parents=parents, help="RED XAI: question a model about a shortcut")
    verbs = p.add_subparsers(dest="red_xai_verb", required=True)
    q = verbs.add_parser(
        "question",
        parents=parents,
        help="train a small MLP and near-equal peers on data with a planted shortcut, question, fix, report",
    )
    add_arguments(q)
    q.set_defaults(func=question_command)


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
    p.add_argument(
        "--data",
        default="digits",
        choices=DATA,
        help="data set (default digits); *-border: two classes with a noise border (the spurious part)",
    )
    p.add_argument(
        "--plant",
        default=None,
        choices=PLANTS,
        help="the spurious feature: corner (a patch planted on class --target) on digits and fashion-mnist, "
        "border (the noise border, not tied to a class) on the *-border data (default: the data's own)",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="folder for report.md and its figures")
    p.add_argument(
        "--target", type=int, default=0, help="the class that carries the patch, or that is explained (default 0)"
    )
    p.add_argument("--epochs", type=int, default=20, help="training epochs of the model (default 20)")
    p.add_argument("--fix-epochs", type=int, default=10, help="RRR and RR-ClArC fine-tuning epochs (default 10)")
    p.add_argument("--n-train", type=int, default=2000, help="Fashion-MNIST training subset (default 2000)")
    p.add_argument(
        "--peers", type=int, default=3, help="near-equal models (other seeds, widths) for the Rashomon set (default 3)"
    )
    p.add_argument("--seed", type=int, default=0)
    return p


def question_command(args: argparse.Namespace) -> int:
    """Run the verb: build the shortcut (or noise-border) data, train the model, run :func:`~icml24.red_xai.question`.

    Parameters
    ----------
    args : argparse.Namespace

    Returns
    -------
    int
        0.
    """
    from ..errors import InputError
    from ..validation import check_int, check_seed
    from .correct import fit
    from .loop import question
    from .nets import SmallNet
    from .world import BORDER_DATASETS, border_data, shortcut_data

    seed = check_seed(args.seed, "--seed")
    border = args.data in BORDER_DATASETS
    plant = args.plant or ("border" if border else "corner")
    if (plant == "border") != border:
        raise InputError(
            f"--plant {plant} does not go with --data {args.data}",
            "use --plant border with digits-border or fashion-border, --plant corner with the others",
        )
    target = check_int(args.target, "--target", min_val=0, max_val=1 if border else 9)
    epochs = check_int(args.epochs, "--epochs", min_val=1)
    fix_epochs = check_int(args.fix_epochs, "--fix-epochs", min_val=0)
    n_train = check_int(args.n_train, "--n-train", min_val=20)
    n_peers = check_int(args.peers, "--peers", min_val=0)
    if border:
        d = border_data(args.data, n_train=n_train, seed=seed)
        classes, data, held_out = 2, (d.x_train, d.y_train), (d.x_test, d.y_test)
    else:
        d = shortcut_data(args.data, target=target, n_train=n_train, seed=seed)
        classes, data, held_out = 10, (d.x_train, d.y_train), None
    model = fit(SmallNet(d.x_train[0].numel(), classes, 64, seed=seed), *data, epochs=epochs, seed=seed)
    widths = (32, 128, 64)
    peers = [
        fit(SmallNet(d.x_train[0].numel(), classes, widths[i % 3], seed=seed + 1 + i), *data, epochs=epochs,
            seed=seed + 1 + i)
        for i in range(n_peers)
    ]  # fmt: skip
    r = question(
        model,
        data,
        args.out,
        target=target,
        mask=d.mask,
        epochs=fix_epochs,
        peers=peers or None,
        artifact="swap" if border else "paste",
        held_out=held_out,
        seed=seed,
    )
    m = r["metrics"]
    if border:
        print(f"{args.data}: noise border ({m['mask_share']:.2f} of the pixels), class {target} explained, seed {seed}")
        print("reliance: held-out prediction flips when the border is swapped between images; memorised: the border")
        print("alone classified as the label on the training images (held-out control in brackets)")
    else:
        print(f"{args.data}, {plant} patch on class {target}, seed {seed}")
    print("relevance mass inside the mask by attribution:")
    cols = [("", "gxi")] + [(f"{k}_", k[4:]) for k in ("lrp_epsilon", "lrp_zplus") if f"{k}_relevance_mass" in m]
    extra = f" {'removed':>8} {'memorised':>16}" if border else ""
    print(f"{'model':>9} {'accuracy':>9} {'reliance':>9}{extra} " + " ".join(f"{c:>8}" for _, c in cols))
    for name, key in (("model", ""), ("P-ClArC", "pclarc_"), ("RR-ClArC", "rrclarc_"), ("RRR", "rrr_")):
        masses = " ".join(f"{m.get(f'{key}{k}relevance_mass', float('nan')):>8.3f}" for k, _ in cols)
        if border:
            only, ctl = m[f"{key}artifact_only_accuracy"], m[f"{key}artifact_only_accuracy_held_out"]
            extra = f" {m[f'{key}artifact_removed_accuracy']:>8.3f} {f'{only:.3f} ({ctl:.3f})':>16}"
        print(f"{name:>9} {m[f'{key}accuracy']:>9.3f} {m[f'{key}reliance']:>9.3f}{extra} {masses}")
    print(f"SpRAy clusters {int(m['spray_clusters'])}, TCAV {m['tcav']:.3f} (p={m['tcav_p']:.2g})")
    if peers:
        lo, hi = m["rashomon_reliance_min"], m["rashomon_reliance_max"]
        print(f"Rashomon set of {len(peers) + 1} models: reliance {lo:.3f} to {hi:.3f}")
    print(f"report: {r['report']}")
    return 0


__all__ = ["register", "add_arguments", "question_command"]
