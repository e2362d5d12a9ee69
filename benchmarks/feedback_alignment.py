"""Benchmark: time per training step under each learning rule, vs backprop, on the same inputs in one process.

A step is forward + the rule's backward + ``torch.optim.SGD.step``. The rules (FA, DFA, uSF, frSF) run through
``FeedbackNetwork``'s autograd functions; the reference is backprop through the plain ``nn.Sequential`` (ordinary
autograd), and ``backprop`` via the wrapper is shown too (it calls the plain model: its ratio measures the
wrapper's overhead). The paper makes no speed claim: FA replaces ``W^T`` by a fixed matrix of the same shape, so
its step should cost about what backprop's does. Also times one diagnostics record (``AlignmentRecorder`` with
the update-gradient comparison), which costs two extra forward/backward passes.

The ``cnn`` config times the same rules (and brSF, Kolen-Pollack, the weight mirror) on the small CNN of the
Fashion-MNIST comparison (``make_cnn(1, 28, (8, 16))``: two 3x3 convolutions with average pooling, a Linear
head; batch 64 of random 28x28 images), each step time as a ratio to backprop's.

    python benchmarks/feedback_alignment.py [--configs digits wide cnn] [--steps 20] [--repeats 5]
                                            [--threads 1] [--out runs]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from icml24.data import digits
from icml24.feedback_alignment import AlignmentRecorder, FeedbackNetwork, make_cnn, make_mlp
from icml24.runs import atomic_write_json, environment

CONFIGS = {
    # name: (layer sizes, batch); digits is the claims' setting (full batch), wide an MNIST-sized MLP
    "digits": ([64, 128, 128, 10], None),
    "wide": ([784, 1000, 1000, 10], 256),
    # the CNN of the Fashion-MNIST comparison: channels (8, 16), input 1x28x28
    "cnn": ([1, 28, 8, 16, 10], 64),
}
RULES = ("plain", "backprop", "fa", "dfa", "usf", "frsf", "brsf", "kp", "wm")


def _inputs(name: str, seed: int) -> tuple[list[int], torch.Tensor, torch.Tensor]:
    sizes, batch = CONFIGS[name]
    if name == "digits":
        split = digits(seed=seed)
        return sizes, split.x_train, split.y_train
    g = torch.Generator().manual_seed(seed)
    shape = (sizes[0], sizes[1], sizes[1]) if name == "cnn" else (sizes[0],)
    x = torch.randn(batch, *shape, generator=g)
    return sizes, x, torch.randint(0, sizes[-1], (batch,), generator=g)


def _stepper(rule: str, sizes: list[int], seed: int, cnn: bool = False):
    if cnn:
        model = make_cnn(sizes[0], sizes[1], tuple(sizes[2:-1]), sizes[-1], seed=seed)
        shape = (sizes[0], sizes[1], sizes[1])
    else:
        model = make_mlp(sizes, seed=seed)
        shape = None
    net = model if rule == "plain" else FeedbackNetwork(model, rule, seed=seed + 1, input_shape=shape)
    opt = torch.optim.SGD(net.parameters(), lr=1e-3)

    def step(x: torch.Tensor, y: torch.Tensor) -> None:
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(net(x), y).backward()
        opt.step()

    return step, net


def _time(fn, x, y, steps: int) -> float:
    t = time.perf_counter()
    for _ in range(steps):
        fn(x, y)
    return (time.perf_counter() - t) / steps


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="+", choices=sorted(CONFIGS), default=list(CONFIGS))
    ap.add_argument("--steps", type=int, default=20, help="training steps per timing")
    ap.add_argument("--repeats", type=int, default=5, help="timings per rule (median reported)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="runs")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.repeats < 1 or args.threads < 1:
        ap.error("--steps, --repeats and --threads must be positive")
    torch.set_num_threads(args.threads)
    print(f"threads: {torch.get_num_threads()}  repeats: {args.repeats}  steps per timing: {args.steps}")

    rows = []
    for name in args.configs:
        sizes, x, y = _inputs(name, args.seed)
        steppers = {r: _stepper(r, sizes, args.seed, cnn=name == "cnn") for r in RULES}
        for fn, _ in steppers.values():  # warm-up
            _time(fn, x, y, 3)
        times: dict[str, list[float]] = {r: [] for r in RULES}
        for _ in range(args.repeats):  # interleaved, so that machine noise hits every rule alike
            for r in RULES:
                times[r].append(_time(steppers[r][0], x, y, args.steps))
        rec = AlignmentRecorder(steppers["fa"][1], x, y)
        rec(0)
        diag = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            rec(0)
            diag.append(time.perf_counter() - t)
        ref = statistics.median(times["plain"])
        what = "CNN 1x28x28 -conv8-pool-conv16-pool- 10" if name == "cnn" else "layers " + "-".join(map(str, sizes))
        print(f"\n{name}: {what}, batch {x.shape[0]}")
        header = f"{'rule':<32} {'ms/step':>9} {'vs backprop':>12}"
        print(header)
        print("-" * len(header))
        for r in RULES:
            med = statistics.median(times[r])
            label = {"plain": "backprop (plain nn.Sequential)", "backprop": "backprop via FeedbackNetwork"}.get(r, r)
            print(f"{label:<32} {med * 1e3:>9.3f} {med / ref:>11.2f}x")
            rows.append(
                {
                    "config": name,
                    "rule": r,
                    "sizes": sizes,
                    "batch": int(x.shape[0]),
                    "median_s": med,
                    "times_s": times[r],
                    "ratio_vs_backprop": med / ref,
                }
            )
        dmed = statistics.median(diag)
        print(f"{'diagnostics record (FA)':<32} {dmed * 1e3:>9.3f} {dmed / ref:>11.2f}x")
        rows.append(
            {
                "config": name,
                "rule": "diagnostics_record",
                "sizes": sizes,
                "batch": int(x.shape[0]),
                "median_s": dmed,
                "times_s": diag,
                "ratio_vs_backprop": dmed / ref,
            }
        )

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = Path(args.out) / f"{stamp}-bench-feedback_alignment.json"
    atomic_write_json(path, {"benchmark": "feedback_alignment", "args": vars(args), "env": environment(), "rows": rows})
    print(f"\nsaved {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
