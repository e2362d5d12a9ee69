"""The claim experiments of Jetfire, built on the public API (``quantize_blocks``, ``relative_error``,
``convert``, ``convert_baseline``).

- Quantization error (Sec. 4, Fig. 3): synthetic activations with outlier channels and gradients with outlier
  tokens, plus tensors captured from a tiny GPT's own training; relative error per granularity.
- Parity (Sec. 6, Table 1-2 in small): a char-level GPT on tiny Shakespeare trained in FP32, with Jetfire
  and with per-tensor INT8 from the same initialisation, on the same batches; final validation loss.
- Memory (Sec. 7, Table 6): bytes saved for the backward pass of one GPT-2 block, per token, by hooks.

PAPER scale: GPT-2 pre-training on OpenWebText on GPUs is out of reach here; the parity experiment declares
it (``paper_needs`` in ``paper.py``) and raises :class:`~icml24.errors.PrerequisiteMissing` if run anyway.

Each experiment reads tiny Shakespeare itself (the memory experiment needs no data); nothing is kept between them.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from ..claims import Scale
from ..data.text import split_text, tiny_shakespeare
from ..errors import PrerequisiteMissing
from ..nn.lm import TrainConfig, batch_to, corpus_batches, model_device, tiny_gpt2, train_lm
from ..runs import save_figure
from ..threads import single_thread
from ..validation import check_seed
from .baselines import convert_baseline
from .layers import convert
from .quant import GRANULARITIES, relative_error

OUTLIER_SCALE = 50.0  # a few outlier channels (activations) / tokens (gradients) x50


# ------------------------------------------------------------------------------------------------ data
def shakespeare_ids() -> tuple[torch.Tensor, torch.Tensor, str]:
    """Tiny Shakespeare as character ids: the first 90 % for training, the rest for validation (nanoGPT).

    Returns
    -------
    (torch.Tensor, torch.Tensor, str)
        Train ids, validation ids (int64) and the sorted alphabet (id ``i`` is ``alphabet[i]``).

    Raises
    ------
    DataUnavailable
        When tiny Shakespeare is not under the data root.
    """
    text = tiny_shakespeare()
    alphabet = "".join(sorted(set(text)))
    lut = np.zeros(max(map(ord, alphabet)) + 1, dtype=np.int64)
    lut[[ord(c) for c in alphabet]] = np.arange(len(alphabet))
    train, val = split_text(text, 0.1)

    def ids(s: str) -> torch.Tensor:
        return torch.from_numpy(lut[np.frombuffer(s.encode("utf-32-le"), dtype=np.uint32)])

    return ids(train), ids(val), alphabet


# --------------------------------------------------------------------------------------- quantization
def outlier_tensors(tokens: int, channels: int, n_outliers: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Synthetic activations with outlier channels and gradients with outlier tokens (as in Sec. 4).

    Parameters
    ----------
    tokens, channels : int
        Matrix shape.
    n_outliers : int
        Outlier channels (activations) and outlier tokens (gradients), scaled by 50.
    seed : int

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        Activations and gradients, ``(tokens, channels)`` FP32.
    """
    g = torch.Generator().manual_seed(seed)
    act = torch.randn(tokens, channels, generator=g)
    act[:, torch.randperm(channels, generator=g)[:n_outliers]] *= OUTLIER_SCALE
    grad = torch.randn(tokens, channels, generator=g)
    grad[torch.randperm(tokens, generator=g)[:n_outliers]] *= OUTLIER_SCALE
    return act, grad


def captured_tensors(seed: int, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The FC1 input (activation) and FC2 output gradient of the last block of a tiny GPT after ``steps``.

    Parameters
    ----------
    seed : int
    steps : int
        FP32 training steps on tiny Shakespeare before capturing.

    Returns
    -------
    (torch.Tensor, torch.Tensor)
        Activation ``(tokens, d)`` and gradient ``(tokens, d)``.
    """
    train_ids, _, alphabet = shakespeare_ids()
    model = tiny_gpt2(len(alphabet), n_positions=64, n_embd=128, n_layer=2, n_head=4, seed=seed)
    cfg = TrainConfig(steps=steps, batch_size=16, lr=2e-3, min_lr=2e-4, warmup=10, log_every=0, seed=seed)
    batches = corpus_batches(train_ids, 64)
    train_lm(model, batches, cfg)
    got = {}
    mlp = model.transformer.h[-1].mlp
    h1 = mlp.c_fc.register_forward_hook(lambda m, i, o: got.__setitem__("act", i[0].detach()))
    h2 = mlp.c_proj.register_full_backward_hook(lambda m, gi, go: got.__setitem__("grad", go[0].detach()))
    model.train()
    batch = batches(torch.Generator().manual_seed(10_000 + seed), 16)
    model(**batch).loss.backward()
    h1.remove()
    h2.remove()
    d = got["act"].shape[-1]
    return got["act"].reshape(-1, d), got["grad"].reshape(-1, got["grad"].shape[-1])


def run_quant_error(scale: Scale | str, seed: int) -> dict[str, float]:
    """Relative quantization error per granularity on outlier-channel activations and outlier-token gradients.

    Parameters
    ----------
    scale : Scale
        SMOKE (1024 x 1024, 8 outliers, captured after 5 steps), QUICK (1024 x 1024, 8 outliers, captured
        after 60 steps), PAPER (4096 x 4096, 32 outliers, captured after 300 steps): the outliers touch at
        most a quarter of the 32-wide blocks at every scale.
    seed : int

    Returns
    -------
    dict of str to float
        ``{syn,cap}_{act,grad}_{block,tensor,token,channel}`` and the ratios judged by the claims
        ``quantization-error`` and ``block-close-to-best`` (the experiment ``jetfire/quantization-error``).
    """
    scale = Scale.parse(scale)
    seed = check_seed(seed)
    n, k, steps = scale.pick((1024, 8, 5), (1024, 8, 60), (4096, 32, 300))
    out: dict[str, float] = {}
    with single_thread():
        act, grad = outlier_tensors(n, n, k, seed)
        cap_act, cap_grad = captured_tensors(seed, steps)
        for src, a, g in (("syn", act, grad), ("cap", cap_act, cap_grad)):
            for gran in GRANULARITIES:
                out[f"{src}_act_{gran}"] = relative_error(a, gran)
                out[f"{src}_grad_{gran}"] = relative_error(g, gran)
    for src in ("syn", "cap"):
        out[f"{src}_act_block_over_tensor"] = out[f"{src}_act_block"] / out[f"{src}_act_tensor"]
        out[f"{src}_act_block_over_token"] = out[f"{src}_act_block"] / out[f"{src}_act_token"]
        out[f"{src}_act_block_over_channel"] = out[f"{src}_act_block"] / out[f"{src}_act_channel"]
        out[f"{src}_grad_block_over_tensor"] = out[f"{src}_grad_block"] / out[f"{src}_grad_tensor"]
        out[f"{src}_grad_block_over_channel"] = out[f"{src}_grad_block"] / out[f"{src}_grad_channel"]
        out[f"{src}_grad_block_over_token"] = out[f"{src}_grad_block"] / out[f"{src}_grad_token"]
    return out


# --------------------------------------------------------------------------------------------- parity
def parity_settings(scale: Scale) -> dict:
    """Model and training sizes of the parity run at a scale.

    Parameters
    ----------
    scale : Scale
        SMOKE: 2 layers, d = 64, context 32, 30 steps of 8. QUICK: 4 layers, d = 128, context 64,
        100 steps of 16. PAPER: GPT-2 on OpenWebText on GPUs, not available.

    Returns
    -------
    dict

    Raises
    ------
    PrerequisiteMissing
        At PAPER scale.
    """
    if scale is Scale.PAPER:
        raise PrerequisiteMissing(
            "jetfire's PAPER parity is GPT-2 (124M-774M) pre-training on OpenWebText on GPUs, not available here",
            "run --scale quick (4-layer char GPT on tiny Shakespeare)",
        )
    if scale is Scale.SMOKE:
        return dict(n_layer=2, n_embd=64, ctx=32, steps=30, batch=8, val_batches=4)
    return dict(n_layer=4, n_embd=128, ctx=64, steps=100, batch=16, val_batches=8)


def val_loss(model, val_ids: torch.Tensor, ctx: int, batches: int, batch_size: int = 16) -> float:
    """Mean cross-entropy on fixed validation windows (the same windows for every model).

    Parameters
    ----------
    model : transformers causal LM
        On any device (the windows are moved to it).
    val_ids : torch.Tensor
    ctx : int
    batches, batch_size : int

    Returns
    -------
    float
    """
    fn = corpus_batches(val_ids, ctx)
    gen = torch.Generator().manual_seed(1234)
    dev = model_device(model)
    model.eval()
    with torch.no_grad():
        return float(np.mean([float(model(**batch_to(fn(gen, batch_size), dev)).loss) for _ in range(batches)]))


def parity_run(scale: Scale, seed: int) -> dict:
    """Train FP32, Jetfire and per-tensor INT8 copies of one initialisation on the same batches.

    Parameters
    ----------
    scale : Scale
    seed : int

    Returns
    -------
    dict
        ``{"fp32" | "jetfire" | "per_tensor": (train losses, validation loss)}`` and ``"init"``.
    """
    s = parity_settings(scale)
    train_ids, val_ids, alphabet = shakespeare_ids()
    base = tiny_gpt2(len(alphabet), n_positions=s["ctx"], n_embd=s["n_embd"], n_layer=s["n_layer"], n_head=4, seed=seed)
    cfg = TrainConfig(steps=s["steps"], batch_size=s["batch"], lr=2e-3, min_lr=2e-4, warmup=10, log_every=0, seed=seed)
    batches = corpus_batches(train_ids, s["ctx"])
    out = {"init": val_loss(base, val_ids, s["ctx"], s["val_batches"])}
    models = {
        "fp32": copy.deepcopy(base),
        "jetfire": convert(base, seed=seed),
        "per_tensor": convert_baseline(base, "per_tensor", seed=seed),
    }
    probe = corpus_batches(val_ids, s["ctx"])(torch.Generator().manual_seed(99), 4)["input_ids"]
    with torch.no_grad():
        ref, q = base(probe).logits, models["jetfire"].eval()(probe).logits
    out["init_logits_rel_diff"] = float((q - ref).norm() / ref.norm())  # Jetfire really quantizes
    with single_thread():
        for name, model in models.items():
            res = train_lm(model, batches, cfg)
            out[name] = (res.losses, val_loss(model, val_ids, s["ctx"], s["val_batches"]))
    return out


def _plot_parity(run: dict, scale: Scale, seed: int) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 4), layout="constrained")
    ax, dx = fig.subplots(1, 2)
    fp = np.asarray(run["fp32"][0])
    for name in ("fp32", "jetfire", "per_tensor"):
        losses, val = run[name]
        w = max(1, len(losses) // 15)
        smooth = np.convolve(losses, np.ones(w) / w, mode="valid")
        ax.plot(np.arange(len(smooth)) + w, smooth, label=f"{name} (val {val:.4f})")
        if name != "fp32":
            diff = np.convolve(np.asarray(losses) - fp, np.ones(w) / w, mode="valid")
            dx.plot(np.arange(len(diff)) + w, diff, label=f"{name} - fp32")
    ax.set_xlabel("step")
    ax.set_ylabel("training loss (moving average)")
    ax.set_title(f"char GPT on tiny Shakespeare, {scale.value}, seed {seed}")
    ax.legend()
    dx.axhline(0.0, color="grey", lw=0.8)
    dx.set_xlabel("step")
    dx.set_ylabel("loss minus FP32 loss (moving average)")
    dx.legend()
    save_figure(fig, f"jetfire-parity-seed{seed}")


def run_parity(scale: Scale | str, seed: int) -> dict[str, float]:
    """Final validation loss of Jetfire, FP32 and per-tensor INT8 training at equal steps (the experiment
    ``jetfire/parity``, judged by the claims ``parity`` and ``per-tensor-worse``).

    Parameters
    ----------
    scale : Scale
        See :func:`parity_settings`.
    seed : int

    Returns
    -------
    dict of str to float
        ``{fp32,jetfire,per_tensor}_val``, ``init_val``, the relative gaps to FP32, the last-10-step
        training losses and the relative difference of Jetfire's logits from FP32's at initialisation.
    """
    scale = Scale.parse(scale)
    seed = check_seed(seed)
    run = parity_run(scale, seed)
    _plot_parity(run, scale, seed)
    out = {"init_val": run["init"], "jetfire_init_logits_rel_diff": run["init_logits_rel_diff"]}
    for name in ("fp32", "jetfire", "per_tensor"):
        losses, val = run[name]
        out[f"{name}_val"] = val
        out[f"{name}_train_last10"] = float(np.mean(losses[-10:]))
    fp = out["fp32_val"]
    out["jetfire_rel_gap"] = (out["jetfire_val"] - fp) / fp
    out["per_tensor_rel_gap"] = (out["per_tensor_val"] - fp) / fp
    return out


# --------------------------------------------------------------------------------------------- memory
def saved_bytes(model: torch.nn.Module, x: torch.Tensor, *, autocast: bool) -> int:
    """Bytes of the distinct storages autograd saves for the backward pass of ``model(x)``.

    Parameters
    ----------
    model : nn.Module
        A block taking a tensor and returning a tensor (or a tuple whose first item is one).
    x : torch.Tensor
        Its input.
    autocast : bool
        Run under CPU bfloat16 autocast.

    Returns
    -------
    int
        Sum of the byte sizes of the distinct storages (views of one storage counted once).
    """
    seen: dict[int, int] = {}
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}

    def pack(t: torch.Tensor):
        st = t.untyped_storage()
        ptr = st.data_ptr()
        if ptr not in params and ptr != x.untyped_storage().data_ptr():
            seen[ptr] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            y = model(x)
    del y  # the first output of a tuple (Hugging Face blocks) or the tensor; nothing is kept

    return sum(seen.values())


def gpt2_block(d: int, heads: int, seed: int):
    """One GPT-2 transformer block (Hugging Face ``GPT2Block``, SDPA attention, no dropout).

    Parameters
    ----------
    d, heads : int
    seed : int

    Returns
    -------
    transformers.models.gpt2.modeling_gpt2.GPT2Block
    """
    model = tiny_gpt2(64, n_positions=1024, n_embd=d, n_layer=1, n_head=heads, seed=seed)
    return model.transformer.h[0].train()


def analytic_bytes_per_token(d: int, heads: int, block: int = 32) -> dict[str, float]:
    """Saved bytes per token of a GPT-2 block, counted from Jetfire's data flow (Sec. 5, Table 6).

    Jetfire saves INT8 inputs (plus FP32 block scales, ``4 / block^2`` bytes an element) of LN1, QKV,
    out-projection, LN2, FC1, GELU (4d) and FC2 (4d): ``13 d`` elements; the attention core keeps Q, K, V,
    its output (bfloat16, ``4 d``) and its log-sum-exp (FP32, one per head). A bf16 block saves the same
    tensors in two bytes, with its LayerNorms' inputs in FP32 (autocast keeps norms in FP32) and their
    mean and reciprocal standard deviation.

    Parameters
    ----------
    d, heads : int
    block : int, default 32

    Returns
    -------
    dict of str to float
        ``{"jetfire": ..., "bf16_min": ...}``.
    """
    int8 = 13 * d * (1.0 + 4.0 / block**2)
    attn = 4 * d * 2 + 4 * heads
    bf16 = (13 - 2) * d * 2 + 2 * d * 4 + 2 * 2 * 4 + attn
    return {"jetfire": int8 + attn, "bf16_min": bf16}


def run_memory(scale: Scale | str, seed: int) -> dict[str, float]:
    """Saved-activation bytes per token of a Jetfire GPT-2 block and of a bf16-autocast block (by hooks).

    Bytes per token are the slope between two sequence lengths, which removes everything that does not
    grow with the tokens (weights' INT8 or bf16 copies, masks).

    Parameters
    ----------
    scale : Scale
        SMOKE: d = 128, 128 and 256 tokens; QUICK: d = 256, 512 and 1024 tokens; PAPER: d = 1024 (GPT-2
        medium's width), 1024 and 2048 tokens.
    seed : int

    Returns
    -------
    dict of str to float
        Measured and analytic bytes per token, and their ratios.
    """
    scale = Scale.parse(scale)
    seed = check_seed(seed)
    d, heads, (t1, t2) = scale.pick((128, 4, (128, 256)), (256, 4, (512, 1024)), (1024, 16, (1024, 2048)))
    block = gpt2_block(d, heads, seed)
    jet = convert(block, seed=seed)
    g = torch.Generator().manual_seed(seed)
    out = {}
    with single_thread():
        for name, m, ac in (("jetfire", jet, True), ("bf16", block, True), ("fp32", block, False)):
            sizes = []
            for t in (t1, t2):
                x = torch.randn(1, t, d, generator=g, requires_grad=True)
                sizes.append(saved_bytes(m, x, autocast=ac))
            out[f"{name}_bytes_per_token"] = (sizes[1] - sizes[0]) / (t2 - t1)
    ana = analytic_bytes_per_token(d, heads)
    out["jetfire_analytic"] = ana["jetfire"]
    out["bf16_analytic_min"] = ana["bf16_min"]
    out["jetfire_over_analytic"] = out["jetfire_bytes_per_token"] / ana["jetfire"]
    out["bf16_over_jetfire"] = out["bf16_bytes_per_token"] / out["jetfire_bytes_per_token"]
    out["fp32_over_jetfire"] = out["fp32_bytes_per_token"] / out["jetfire_bytes_per_token"]
    out["d_model"] = float(d)
    return out
