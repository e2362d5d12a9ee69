"""Jetfire's speed against its peers, in one process, as ratios (median of repeats, threads fixed and printed).

CPU (always):
1. the raw GEMM limit: ``torch._int_mm`` (INT8 x INT8 -> INT32, oneDNN VNNI) against FP32 and BF16 matmul, and
   Jetfire's block-scaled GEMM by the fused AVX512-VNNI kernel (``backend="cpu-vnni"``) where it is built;
2. one linear layer's forward + backward (tokens = in = out = n): FP32, BF16 weights and inputs, per-tensor INT8
   and SwitchBack (one ``_int_mm`` per GEMM), Jetfire with the torch-ops GEMM (one ``_int_mm`` per 32-wide K
   chunk) and with the fused CPU kernel, torchao's INT8 mixed-precision training where it imports;
3. one GPT-2 block's training step (forward + backward): FP32, BF16 autocast, per-tensor INT8, Jetfire (its GEMMs
   on the fused kernel when it is built, else torch ops; the line says which).

The fused kernel is opt-in: ``--cpu-kernel`` builds it (a minute or two the first time, then cached in torch's
extension directory); without the flag its rows appear only when it is already built. ``--cpu-time`` times the
process's CPU time (``time.process_time``, median of the repeats) instead of wall time: with one thread it is
robust to other processes loading the machine. The load average is printed with the results.

GPU (only when CUDA is present; H100/H200-class): INT8 ``torch._int_mm`` vs BF16 matmul vs FP8 ``torch._scaled_mm``
at 4096-16384, and Jetfire's block GEMM (the Triton kernel and the torch-ops path) and linear layer against BF16.

Run: ``python benchmarks/jetfire.py [--threads 1] [--repeats 3] [--sizes 1024 2048] [--block-tokens 2048]
[--cpu-kernel] [--cpu-time] [--out FILE]``.
Results are saved to ``runs/bench-jetfire.json`` (``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch

CLOCK = {"cpu_time": False}  # set by --cpu-time


def _median_time(fn, repeats: int, sync=None) -> float:
    fn()
    if sync:
        sync()
    clock = time.process_time if CLOCK["cpu_time"] and sync is None else time.perf_counter
    ts = []
    for _ in range(repeats):
        t0 = clock()
        fn()
        if sync:
            sync()
        ts.append(clock() - t0)
    return statistics.median(ts)


def cpu_kernel_ready() -> bool:
    """Whether the fused CPU kernel is loaded (it is loaded here when built in the cache).

    Returns
    -------
    bool
    """
    from icml24.jetfire import cpu

    if not cpu.vnni_supported() or not cpu.cpu_kernel_built():
        return False
    cpu.load_cpu_kernel()
    return True


def raw_gemm(n: int, repeats: int) -> dict:
    """INT8 / FP32 / BF16 square GEMM times (s).

    Parameters
    ----------
    n : int
    repeats : int

    Returns
    -------
    dict
    """
    from icml24.jetfire import block_matmul, quantize_blocks

    a = torch.randint(-127, 128, (n, n), dtype=torch.int8)
    b = torch.randint(-127, 128, (n, n), dtype=torch.int8)
    af, bf = a.float(), b.float()
    ab, bb = af.bfloat16(), bf.bfloat16()
    t = {
        "int8": _median_time(lambda: torch._int_mm(a, b), repeats),
        "fp32": _median_time(lambda: af @ bf, repeats),
        "bf16": _median_time(lambda: ab @ bb, repeats),
    }
    if cpu_kernel_ready():  # Jetfire's block GEMM Y = A B^T, the operands' INT8 packing included
        qa, qb = quantize_blocks(torch.randn(n, n)), quantize_blocks(torch.randn(n, n))
        t["block_vnni"] = _median_time(lambda: block_matmul(qa, qb, backend="cpu-vnni"), repeats)
    return t


def linear_step(n: int, repeats: int) -> dict:
    """Forward + backward of one n x n linear layer on n tokens, per method (s).

    Parameters
    ----------
    n : int
    repeats : int

    Returns
    -------
    dict
    """
    from icml24.jetfire import Int8Linear, JetfireLinear, torchao_int8_mixed_precision

    g = torch.Generator().manual_seed(0)
    ref = torch.nn.Linear(n, n)
    x = torch.randn(n, n, generator=g)
    layers = {
        "fp32": (ref, x),
        "bf16": (torch.nn.Linear(n, n).bfloat16(), x.bfloat16()),
        "per_tensor": (Int8Linear.from_linear(ref, scheme="per_tensor"), x),
        "switchback": (Int8Linear.from_linear(ref, scheme="switchback"), x),
        "jetfire": (JetfireLinear.from_linear(ref, backend="torch"), x),
    }
    if cpu_kernel_ready():
        layers["jetfire_vnni"] = (JetfireLinear.from_linear(ref, backend="cpu-vnni"), x)
    try:
        layers["torchao_int8_mp"] = (torchao_int8_mixed_precision(torch.nn.Sequential(ref))[0], x)
    except Exception as exc:  # noqa: BLE001 - the optional peer is reported, not required
        print(f"  torchao peer unavailable: {type(exc).__name__}: {exc}")
    out = {}
    for name, (layer, inp) in layers.items():
        xi = inp.clone().requires_grad_()

        def step(layer=layer, xi=xi):
            layer.zero_grad(set_to_none=True)
            xi.grad = None
            layer(xi).sum().backward()

        out[name] = _median_time(step, repeats)
    return out


def block_step(tokens: int, d: int, repeats: int) -> dict:
    """Forward + backward of one GPT-2 block (d, 4 d MLP) on ``tokens`` tokens, per method (s).

    Parameters
    ----------
    tokens, d : int
    repeats : int

    Returns
    -------
    dict
    """
    from icml24.jetfire import convert, convert_baseline
    from icml24.jetfire.experiments import gpt2_block

    block = gpt2_block(d, max(1, d // 64), 0)
    x = torch.randn(1, tokens, d)
    runs = {
        "fp32": (block, False),
        "bf16_autocast": (block, True),
        "per_tensor": (convert_baseline(block, "per_tensor"), False),
        "jetfire": (convert(block), True),
    }
    out = {}
    for name, (m, ac) in runs.items():
        xi = x.clone().requires_grad_()

        def step(m=m, ac=ac, xi=xi):
            m.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=ac):
                y = m(xi)
                y = y[0] if isinstance(y, tuple) else y
            y.float().sum().backward()

        out[name] = _median_time(step, repeats)
    return out


def _gpu_gemm(n: int, repeats: int) -> dict:
    sync, dev = torch.cuda.synchronize, "cuda"
    a = torch.randint(-127, 128, (n, n), dtype=torch.int8, device=dev)
    b = torch.randint(-127, 128, (n, n), dtype=torch.int8, device=dev).t()  # column-major B for cuBLASLt
    ab, bb = a.bfloat16(), b.bfloat16()
    t = {
        "bf16": _median_time(lambda: ab @ bb, repeats, sync),
        "int8": _median_time(lambda: torch._int_mm(a, b), repeats, sync),
    }
    try:
        a8 = ab.to(torch.float8_e4m3fn)
        b8 = bb.t().contiguous().to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=dev)
        t["fp8"] = _median_time(
            lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), repeats, sync
        )
    except Exception as exc:  # noqa: BLE001 - FP8 needs sm_89+
        print(f"  fp8 _scaled_mm unavailable: {exc}")
        t["fp8"] = float("nan")
    return t


def _gpu_jetfire(n: int, repeats: int) -> dict:
    from icml24.jetfire import JetfireLinear, block_matmul, quantize_blocks

    sync, dev = torch.cuda.synchronize, "cuda"
    x = torch.randn(n, n, device=dev)
    w = torch.randn(n, n, device=dev)
    qx, qw = quantize_blocks(x), quantize_blocks(w)
    xb, wb = x.bfloat16(), w.bfloat16()
    ref = torch.nn.Linear(n, n, device=dev)
    jl = JetfireLinear.from_linear(ref)
    lb = torch.nn.Linear(n, n, device=dev, dtype=torch.bfloat16)
    xj, xbb = x.clone().requires_grad_(), xb.clone().requires_grad_()
    return {
        "quantize": _median_time(lambda: quantize_blocks(x), repeats, sync),
        "gemm": _median_time(lambda: block_matmul(qx, qw), repeats, sync),
        "gemm_torch": _median_time(lambda: block_matmul(qx, qw, backend="torch"), repeats, sync),
        "bf16_gemm": _median_time(lambda: xb @ wb.t(), repeats, sync),
        "linear": _median_time(lambda: jl(xj).sum().backward(), repeats, sync),
        "bf16_linear": _median_time(lambda: lb(xbb).float().sum().backward(), repeats, sync),
    }


def gpu_part(repeats: int) -> dict:
    """H100/H200-class GEMMs: INT8 vs BF16 vs FP8 ``_scaled_mm``; Jetfire's block GEMM and linear vs BF16.

    Parameters
    ----------
    repeats : int

    Returns
    -------
    dict
    """
    res = {"device": torch.cuda.get_device_name(), "gemm": {}, "jetfire": {}}
    print(f"GPU: {res['device']}")
    print(f"{'n':>6} {'bf16 TF/s':>10} {'int8 TOP/s':>11} {'fp8 TF/s':>9} {'int8/bf16':>10} {'fp8/bf16':>9}")
    for n in (4096, 8192, 16384):
        t = res["gemm"][n] = _gpu_gemm(n, repeats)
        ops = 2 * n**3
        print(
            f"{n:>6} {ops / t['bf16'] / 1e12:>10.0f} {ops / t['int8'] / 1e12:>11.0f} {ops / t['fp8'] / 1e12:>9.0f} "
            f"{t['bf16'] / t['int8']:>10.2f} {t['bf16'] / t['fp8']:>9.2f}"
        )
    print("ratios are bf16 time / jetfire time (> 1: jetfire faster); gemm TOP/s counts 2 n^3")
    print(
        f"{'n':>6} {'quantize ms':>12} {'triton TOP/s':>13} {'triton / bf16':>14} {'torch-ops / bf16':>17} "
        f"{'linear f+b / bf16':>18}"
    )
    for n in (4096, 8192):
        t = res["jetfire"][n] = _gpu_jetfire(n, repeats)
        print(
            f"{n:>6} {t['quantize'] * 1e3:>12.2f} {2 * n**3 / t['gemm'] / 1e12:>13.0f} "
            f"{t['bf16_gemm'] / t['gemm']:>14.3f} {t['bf16_gemm'] / t['gemm_torch']:>17.3f} "
            f"{t['bf16_linear'] / t['linear']:>18.3f}"
        )
    return res


def main() -> None:
    """Run the benchmark and print the tables (results saved under ``runs/``)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048], help="n for the linear (up to 8192)")
    ap.add_argument("--block-tokens", type=int, default=2048)
    ap.add_argument("--block-d", type=int, default=512)
    ap.add_argument("--skip-cpu", action="store_true")
    ap.add_argument("--cpu-kernel", action="store_true", help="build the fused VNNI kernel if needed")
    ap.add_argument("--cpu-time", action="store_true", help="time the process's CPU time (use 1 thread)")
    ap.add_argument("--out", default=str(Path("runs") / "bench-jetfire.json"), help="where the results are saved")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    CLOCK["cpu_time"] = args.cpu_time
    clock = "process CPU time" if args.cpu_time else "wall"
    res: dict = {"threads": torch.get_num_threads(), "cpu": {}, "clock": clock}
    what = f"medians of {args.repeats} process CPU times" if args.cpu_time else f"medians of {args.repeats} wall times"
    print(f"threads {torch.get_num_threads()}; timings are {what}; ratios are baseline / method")
    load0 = os.getloadavg()
    if args.cpu_kernel and not args.skip_cpu:
        from icml24.jetfire import cpu

        cpu.load_cpu_kernel()
        res["cpu_kernel_load_s"] = cpu.build_seconds()
        print(f"fused CPU kernel: built or loaded in {cpu.build_seconds():.1f} s")
    if not args.skip_cpu:
        print("\nraw GEMM (n x n x n; block_vnni: Jetfire's block-scaled GEMM by the fused kernel, packing included):")
        print(
            f"{'n':>6} {'int8 ms':>9} {'fp32 ms':>9} {'bf16 ms':>9} {'fp32/int8':>10} {'bf16/int8':>10} "
            f"{'vnni ms':>8} {'int8/vnni':>10} {'bf16/vnni':>10} {'fp32/vnni':>10}"
        )
        for n in args.sizes:
            t = raw_gemm(n, args.repeats)
            res["cpu"].setdefault("raw", {})[n] = t
            kern = "      (fused kernel not built: --cpu-kernel)"
            if "block_vnni" in t:
                v = t["block_vnni"]
                kern = f" {v * 1e3:>8.1f} {t['int8'] / v:>10.2f} {t['bf16'] / v:>10.2f} {t['fp32'] / v:>10.2f}"
            print(
                f"{n:>6} {t['int8'] * 1e3:>9.1f} {t['fp32'] * 1e3:>9.1f} {t['bf16'] * 1e3:>9.1f} "
                f"{t['fp32'] / t['int8']:>10.2f} {t['bf16'] / t['int8']:>10.2f}" + kern
            )
        print("\nlinear layer forward + backward (n tokens, n -> n):")
        for n in args.sizes:
            t = linear_step(n, args.repeats)
            res["cpu"].setdefault("linear", {})[n] = t
            cols = " ".join(f"{k} {v * 1e3:.0f} ms" for k, v in t.items())
            print(f"{n:>6} {cols}")
            print(
                f"{'':>6} fp32/jetfire {t['fp32'] / t['jetfire']:.2f}, bf16/jetfire {t['bf16'] / t['jetfire']:.2f}, "
                f"per_tensor/jetfire {t['per_tensor'] / t['jetfire']:.2f}, bf16/per_tensor "
                f"{t['bf16'] / t['per_tensor']:.2f}"
            )
            if "jetfire_vnni" in t:
                v = t["jetfire_vnni"]
                print(
                    f"{'':>6} fused: fp32/jetfire_vnni {t['fp32'] / v:.2f}, bf16/jetfire_vnni {t['bf16'] / v:.2f}"
                    f", jetfire(torch ops)/jetfire_vnni {t['jetfire'] / v:.2f} (goal: fp32 >= 2.5, bf16 >= 1.3)"
                )
        gemm = "fused CPU kernel" if cpu_kernel_ready() else "torch ops"
        print(f"\nGPT-2 block training step ({args.block_tokens} tokens, d = {args.block_d}; Jetfire GEMMs: {gemm}):")
        t = block_step(args.block_tokens, args.block_d, args.repeats)
        res["cpu"]["block"] = t
        print(" ".join(f"{k} {v * 1e3:.0f} ms" for k, v in t.items()))
        print(
            f"fp32/jetfire {t['fp32'] / t['jetfire']:.2f}, bf16/jetfire {t['bf16_autocast'] / t['jetfire']:.2f}, "
            f"per_tensor/jetfire {t['per_tensor'] / t['jetfire']:.2f}"
        )
    if torch.cuda.is_available():
        print()
        res["gpu"] = gpu_part(args.repeats)
    else:
        print("\nno CUDA device: the GPU part (INT8 vs BF16 vs FP8 _scaled_mm) is skipped")
    res["loadavg_1min"] = (load0[0], os.getloadavg()[0])
    print(f"load average (1 min) at start {load0[0]:.2f}, at end {res['loadavg_1min'][1]:.2f} on {os.cpu_count()} CPUs")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(res, indent=1, default=str))
    print(f"saved {out}")


if __name__ == "__main__":
    main()
