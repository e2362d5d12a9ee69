"""``icml24 red-xai question``: plant a shortcut, train a small classifier on it, and question it with the RED loop.

With ``--data digits-border`` or ``fashion-border`` the spurious feature is the noise border of
:mod:`icml24.data.spurious` (two classes): the loop runs with ``artifact="swap"`` on the training images and measures
on the held-out ones. :func:`register` adds the verb to the core command line; :func:`question_command` runs it.
Bad input raises :class:`~icml24.errors.InputError` (the CLI prints one line and exits 2).
"""

from __future__ import annotations

import argparse

from ..verbs import add_out_argument

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
        help="data set; *-border: two classes with a noise border (the spurious part)",
    )
    p.add_argument(
        "--plant",
        default=None,
        choices=PLANTS,
        help="the spurious feature: corner (a patch planted on class --target) on digits and fashion-mnist, "
        "border (the noise border, not tied to a class) on the *-border data (default: the data's own)",
    )
    add_out_argument(p)
    p.add_argument("--target", type=int, default=0, help="the class that carries the patch, or that is explained")
    p.add_argument("--epochs", type=int, default=20, help="training epochs of the model")
    p.add_argument("--fix-epochs", type=int, default=10, help="RRR and RR-ClArC fine-tuning epochs")
    p.add_argument("--n-train", type=int, default=2000, help="Fashion-MNIST training subset")
    p.add_argument("--peers", type=int, default=3, help="near-equal models (other seeds, widths) for the Rashomon set")
    p.add_argument("--seed", type=int, default=0, help="seed of the data, the models and the loop")
    return p


def _n(count: int, thing: str) -> str:
    return f"{count} {thing}{'' if count == 1 else 's'}"


def _step_bar(per_model: int, n_peers: int):
    """A tqdm bar on stderr over the Adam steps of the model and its peers (silent off a terminal), and its close."""
    import sys

    from torch.optim.optimizer import register_optimizer_step_post_hook
    from tqdm.auto import tqdm

    total = per_model * (n_peers + 1)
    bar = tqdm(total=total, desc="training the model", unit="step", file=sys.stderr, disable=None, leave=False)

    def step(*_) -> None:
        bar.update()
        if bar.n % per_model == 0 and bar.n < total:
            bar.set_description(f"training peer {bar.n // per_model} of {n_peers}")

    handle = register_optimizer_step_post_hook(step)

    def close() -> None:
        handle.remove()
        bar.close()

    return close


def question_command(args: argparse.Namespace) -> int:
    """Run the verb: build the shortcut (or noise-border) data, train the model, run :func:`~icml24.red_xai.question`.

    Everything goes into a fresh run directory ``<out>/<UTC time>-red-xai-question/``: the loop's ``report.md``
    (with the printed table added at its end), ``metrics.json`` and figures, and ``results.json`` (the metrics).

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
    # the data before the run directory: a missing data set leaves no empty run behind
    if border:
        d = border_data(args.data, n_train=n_train, seed=seed)
        classes, data, held_out = 2, (d.x_train, d.y_train), (d.x_test, d.y_test)
    else:
        d = shortcut_data(args.data, target=target, n_train=n_train, seed=seed)
        classes, data, held_out = 10, (d.x_train, d.y_train), None
    what = (
        f"the noise border of {args.data}, class {target} explained"
        if border
        else f"{args.data} with a {plant} patch on class {target}"
    )
    from ..verbs import elapsed, finish_run, start_run

    run = start_run(
        args,
        "red-xai-question",
        f"red-xai question: train an MLP and {_n(n_peers, 'near-equal peer')} ({_n(epochs, 'epoch')}) on "
        f"{len(data[0])} images of {what}, question it, fix it ({_n(fix_epochs, 'epoch')}) and write the report",
    )
    per_model = epochs * -(-len(data[0]) // 64)  # fit's Adam steps: epochs x batches of 64
    close = _step_bar(per_model, n_peers)
    try:
        model = fit(SmallNet(d.x_train[0].numel(), classes, 64, seed=seed), *data, epochs=epochs, seed=seed)
        widths = (32, 128, 64)
        peers = [
            fit(SmallNet(d.x_train[0].numel(), classes, widths[i % 3], seed=seed + 1 + i), *data, epochs=epochs,
                seed=seed + 1 + i)
            for i in range(n_peers)
        ]  # fmt: skip
    finally:
        close()
    with elapsed("questioning, fixing and re-measuring"):
        r = question(
            model,
            data,
            run.path,
            target=target,
            mask=d.mask,
            epochs=fix_epochs,
            peers=peers or None,
            artifact="swap" if border else "paste",
            held_out=held_out,
            seed=seed,
        )
    m = r["metrics"]
    lines = []
    if border:
        lines.append(
            f"{args.data}: noise border ({m['mask_share']:.2f} of the pixels), class {target} explained, seed {seed}"
        )
        lines.append(
            "reliance: held-out prediction flips when the border is swapped between images; memorised: the border"
        )
        lines.append("alone classified as the label on the training images (held-out control in brackets)")
    else:
        lines.append(f"{args.data}, {plant} patch on class {target}, seed {seed}")
    lines.append("relevance mass inside the mask by attribution:")
    cols = [("", "gxi")] + [(f"{k}_", k[4:]) for k in ("lrp_epsilon", "lrp_zplus") if f"{k}_relevance_mass" in m]
    extra = f" {'removed':>8} {'memorised':>16}" if border else ""
    lines.append(f"{'model':>9} {'accuracy':>9} {'reliance':>9}{extra} " + " ".join(f"{c:>8}" for _, c in cols))
    for name, key in (("model", ""), ("P-ClArC", "pclarc_"), ("RR-ClArC", "rrclarc_"), ("RRR", "rrr_")):
        masses = " ".join(f"{m.get(f'{key}{k}relevance_mass', float('nan')):>8.3f}" for k, _ in cols)
        if border:
            only, ctl = m[f"{key}artifact_only_accuracy"], m[f"{key}artifact_only_accuracy_held_out"]
            extra = f" {m[f'{key}artifact_removed_accuracy']:>8.3f} {f'{only:.3f} ({ctl:.3f})':>16}"
        lines.append(f"{name:>9} {m[f'{key}accuracy']:>9.3f} {m[f'{key}reliance']:>9.3f}{extra} {masses}")
    lines.append(f"SpRAy clusters {int(m['spray_clusters'])}, TCAV {m['tcav']:.3f} (p={m['tcav_p']:.2g})")
    if peers:
        lo, hi = m["rashomon_reliance_min"], m["rashomon_reliance_max"]
        lines.append(f"Rashomon set of {len(peers) + 1} models: reliance {lo:.3f} to {hi:.3f}")
    print("\n".join(lines))
    # report.md: the loop's report (sections, figures) kept, the printed table added at its end
    loop_report = r["report"].read_text().rstrip("\n")
    report = [loop_report, "", "## The table `icml24 red-xai question` printed", "", "```", *lines, "```"]
    written = finish_run(run, m, report)
    print(f"report: {written['report']}")
    return 0


__all__ = ["register", "add_arguments", "question_command"]
