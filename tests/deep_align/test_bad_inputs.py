"""Every public callable of icml24.deep_align refuses bad input with a one-line InputError naming the argument,
and leaves the objects passed in (networks, tensors, the aligner) unchanged."""

import pytest
import torch
from torch import nn

import icml24.deep_align as da
from icml24.data import Split, digits
from icml24.deep_align import (
    CNNSpec,
    DeepAlign,
    DeepAlignNet,
    EncoderConfig,
    TrainConfig,
    WeightBatch,
    Zoo,
    activation_matching,
    as_batch,
    from_sequential,
    from_state_dict,
    interpolation,
    merge,
    permute,
    sinkhorn_rebasin,
    to_sequential,
    train_cnn_zoo,
    train_zoo,
    weight_matching,
    wm_objective,
)
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")


def mlp(*widths, seed=0, act=nn.ReLU):
    torch.manual_seed(seed)
    layers = []
    for k in range(len(widths) - 1):
        layers.append(nn.Linear(widths[k], widths[k + 1]))
        if k < len(widths) - 2:
            layers.append(act())
    return nn.Sequential(*layers)


def sd(*weights):
    return {f"{i}.weight": w for i, w in enumerate(weights)}


def with_nan(net):
    net = mlp(6, 5, 4, 3, seed=9)
    with torch.no_grad():
        net[0].weight[0, 0] = NAN
    return net


A, B = mlp(6, 5, 4, 3, seed=0), mlp(6, 5, 4, 3, seed=1)
A_TRAIN = A.train()  # the users' mode must survive every refusal
OTHER = mlp(6, 5, 5, 3, seed=2)
B64 = mlp(6, 5, 4, 3, seed=1).double()
NANNET = with_nan(None)
WA, WB = from_sequential(A), from_sequential(B)
X, Y = torch.rand(8, 6), torch.randint(3, (8,))
PERMS = [torch.arange(5), torch.arange(4)]
ALIGNER = DeepAlign((6, 5, 4, 3), hidden=4, output_features=4, input_dim_downsample=2)
SPLIT = digits(seed=0)
SMALL = (64, 4, 4, 10)
ZNETS = [mlp(*SMALL, seed=s) for s in range(4)]
ZOO = Zoo.from_networks(ZNETS, SPLIT, val=1, test=1)
NOTPERM = [torch.tensor([0, 0, 1, 2, 3]), torch.arange(4)]


def cnn(seed=0, c=4, norm=False, groups=1, end=True):
    torch.manual_seed(seed)
    layers = [nn.Conv2d(1, c, 3, padding=1), nn.ReLU()]
    layers += [nn.BatchNorm2d(c)] if norm else []
    layers += [nn.Conv2d(c, 4, 3, padding=1, groups=groups), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
    return nn.Sequential(*layers, *([nn.Linear(4, 3)] if end else [])).eval()


CA, CB, C5 = cnn(0), cnn(1), cnn(2, c=5)
CB64 = cnn(1).double()
CNAN = cnn(3)
with torch.no_grad():
    CNAN[2].weight[0, 0, 1, 1] = NAN
CBN, CGROUPS, CNOEND = cnn(4, norm=True), cnn(5, groups=2), cnn(6, end=False)
CALIGNER = DeepAlign(CA, hidden=4, output_features=4)
CX, CY = torch.rand(6, 1, 6, 6), torch.randint(3, (6,))
CDATA = Split(torch.rand(8, 1, 6, 6), torch.randint(3, (8,)), torch.rand(4, 1, 6, 6), torch.randint(3, (4,)))
CSPEC = CNNSpec(channels=(1, 2), classes=3)

CASES = [
    # ------------------------------------------------------------------ DeepAlign
    bad("DeepAlign", "widths", lambda: DeepAlign((6, 3)), kind="size"),
    bad("DeepAlign", "widths", lambda: DeepAlign("abc"), kind="type"),
    bad("DeepAlign", "widths", lambda: DeepAlign((6, 0, 3)), kind="range"),
    bad("DeepAlign", "widths", lambda: DeepAlign(None), kind="none"),
    bad("DeepAlign", "widths", lambda: DeepAlign(NANNET), NANNET, kind="nan"),
    bad("DeepAlign", "seed", lambda: DeepAlign((6, 5, 3), seed=-1), kind="range"),
    bad("DeepAlign", "hiden", lambda: DeepAlign((6, 5, 3), hiden=3), kind="name"),
    bad("DeepAlign.align", "b", lambda: ALIGNER.align(A, OTHER), A, OTHER, ALIGNER, kind="shape"),
    bad("DeepAlign.align", "b", lambda: ALIGNER.align(A, NANNET), A, ALIGNER, kind="nan"),
    bad("DeepAlign.align", "a", lambda: ALIGNER.align([A, A], B), A, B, ALIGNER, kind="size"),
    bad("DeepAlign.align", "a", lambda: ALIGNER.align(None, B), B, ALIGNER, kind="none"),
    bad("DeepAlign.align", "b", lambda: ALIGNER.align(A, B64), A, ALIGNER, kind="dtype"),
    bad("DeepAlign.align_batch", "b", lambda: ALIGNER.align_batch([A, B], [B]), A, B, ALIGNER, kind="size"),
    bad("DeepAlign.align_batch", "a", lambda: ALIGNER.align_batch([], [B]), B, ALIGNER, kind="empty"),
    bad("DeepAlign.scores", "a", lambda: ALIGNER.scores("net", B), B, ALIGNER, kind="type"),
    bad("DeepAlign.fit", "y", lambda: ALIGNER.fit([A, B], X, Y[:3]), A, B, X, Y, ALIGNER, kind="shape"),
    bad("DeepAlign.fit", "x", lambda: ALIGNER.fit([A, B], X * NAN, Y), A, B, ALIGNER, kind="nan"),
    bad("DeepAlign.fit", "y", lambda: ALIGNER.fit([A, B], X, Y + 5), A, B, ALIGNER, kind="range"),
    bad("DeepAlign.fit", "y", lambda: ALIGNER.fit([A, B], X, Y.float()), A, B, ALIGNER, kind="dtype"),
    bad("DeepAlign.fit", "stepz", lambda: ALIGNER.fit([A, B], X, Y, stepz=3), A, B, ALIGNER, kind="name"),
    bad("DeepAlign.fit", "steps", lambda: ALIGNER.fit([A, B], X, Y, steps=0), A, B, ALIGNER, kind="range"),
    bad("DeepAlign.fit", "nets", lambda: ALIGNER.fit([], X, Y, steps=1), ALIGNER, kind="empty"),
    bad("DeepAlign.fit", "seed", lambda: ALIGNER.fit([A, B], X, Y, steps=1, seed=-3), A, B, ALIGNER, kind="range"),
    bad("DeepAlign.fit", "y_val", lambda: ALIGNER.fit([A, B], X, Y, x_val=X, steps=1), ALIGNER, kind="none"),
    bad("DeepAlign.load", "path", lambda: DeepAlign.load("/nonexistent/da.pt"), kind="missing"),
    # ------------------------------------------------------------------ permute / merge
    bad("permute", "perms", lambda: permute(A, NOTPERM), A, kind="not-a-permutation"),
    bad("permute", "perms", lambda: permute(A, [torch.arange(5)]), A, kind="size"),
    bad("permute", "perms", lambda: permute(A, [torch.arange(5.0), torch.arange(4.0)]), A, kind="dtype"),
    bad("permute", "perms", lambda: permute(A, [torch.arange(5), torch.arange(5)]), A, kind="shape"),
    bad("permute", "perms", lambda: permute(A, None), A, kind="none"),
    bad("permute", "net", lambda: permute(NANNET, PERMS), kind="nan"),
    bad("permute", "net", lambda: permute("net", PERMS), kind="type"),
    bad("merge", "alpha", lambda: merge(A, B, NAN), A, B, kind="nan"),
    bad("merge", "alpha", lambda: merge(A, B, "half"), A, B, kind="type"),
    bad("merge", "b", lambda: merge(A, OTHER), A, OTHER, kind="shape"),
    bad("merge", "b", lambda: merge(A, B64), A, kind="dtype"),
    bad("merge", "perms", lambda: merge(A, B, 0.5, NOTPERM), A, B, kind="not-a-permutation"),
    bad("merge", "a", lambda: merge(None, B), B, kind="none"),
    # ------------------------------------------------------------------ interpolation
    bad("interpolation", "n_alphas", lambda: interpolation(A, B, X, Y, n_alphas=1), A, B, X, Y, kind="range"),
    bad("interpolation", "x", lambda: interpolation(A, B, X[:, :5], Y), A, B, X, Y, kind="shape"),
    bad("interpolation", "x", lambda: interpolation(A, B, X * NAN, Y), A, B, Y, kind="nan"),
    bad("interpolation", "y", lambda: interpolation(A, B, X, Y + 3), A, B, X, kind="range"),
    bad("interpolation", "y", lambda: interpolation(A, B, X, Y.float()), A, B, X, kind="dtype"),
    bad("interpolation", "b", lambda: interpolation(A, OTHER, X, Y), A, OTHER, X, Y, kind="shape"),
    bad("interpolation", "perms", lambda: interpolation(A, B, X, Y, perms=NOTPERM), A, B, kind="not-a-permutation"),
    # ------------------------------------------------------------------ zoo
    bad("train_zoo", "n", lambda: train_zoo(0), kind="range"),
    bad("train_zoo", "widths", lambda: train_zoo(3, widths=(10, 4, 4, 10), val=0, test=0), kind="shape"),
    bad("train_zoo", "lr", lambda: train_zoo(3, lr=NAN, val=0, test=0), kind="nan"),
    bad("train_zoo", "steps", lambda: train_zoo(3, steps="many", val=0, test=0), kind="type"),
    bad("train_zoo", "val", lambda: train_zoo(3, val=-1, test=0), kind="range"),
    bad("train_zoo", "data", lambda: train_zoo(3, val=0, test=0, data="digits"), kind="type"),
    bad("Zoo.split", "split", lambda: ZOO.split("holdout"), ZOO, kind="name"),
    bad("Zoo.network", "index", lambda: ZOO.network(99), ZOO, kind="range"),
    bad("Zoo.network", "index", lambda: ZOO.network("0"), ZOO, kind="type"),
    bad("Zoo.from_networks", "nets", lambda: Zoo.from_networks([], SPLIT), kind="empty"),
    bad(
        "Zoo.from_networks", "nets", lambda: Zoo.from_networks(ZNETS + [mlp(64, 4, 5, 10)], SPLIT), *ZNETS, kind="shape"
    ),
    bad("Zoo.from_networks", "val", lambda: Zoo.from_networks(ZNETS, SPLIT, val=-1), *ZNETS, kind="range"),
    bad("Zoo.from_networks", "data", lambda: Zoo.from_networks(ZNETS, None), *ZNETS, kind="none"),
    # ------------------------------------------------------------------ baselines
    bad("weight_matching", "b", lambda: weight_matching(A, OTHER), A, OTHER, kind="shape"),
    bad("weight_matching", "b", lambda: weight_matching(A, NANNET), A, kind="nan"),
    bad("weight_matching", "b", lambda: weight_matching(A, B64), A, kind="dtype"),
    bad("weight_matching", "max_iter", lambda: weight_matching(A, B, max_iter=0), A, B, kind="range"),
    bad("weight_matching", "init", lambda: weight_matching(A, B, init=NOTPERM), A, B, kind="not-a-permutation"),
    bad("weight_matching", "init", lambda: weight_matching(A, B, init=[torch.arange(5)]), A, B, kind="size"),
    bad("weight_matching", "tol", lambda: weight_matching(A, B, tol=NAN), A, B, kind="nan"),
    bad("weight_matching", "a", lambda: weight_matching(None, B), B, kind="none"),
    bad("wm_objective", "b", lambda: wm_objective(A, OTHER), A, OTHER, kind="shape"),
    bad("wm_objective", "perms", lambda: wm_objective(A, B, NOTPERM), A, B, kind="not-a-permutation"),
    bad("wm_objective", "perms", lambda: wm_objective(A, B, [torch.arange(5)]), A, B, kind="size"),
    bad("wm_objective", "perms", lambda: wm_objective(A, B, [torch.arange(6), torch.arange(4)]), A, B, kind="shape"),
    bad("wm_objective", "b", lambda: wm_objective(A, NANNET), A, kind="nan"),
    bad("wm_objective", "a", lambda: wm_objective("a", B), B, kind="type"),
    bad("wm_objective", "a", lambda: wm_objective(WeightBatch.cat([WA, WA]), WB), WA, WB, kind="size"),
    bad("activation_matching", "x", lambda: activation_matching(A, B, X[:, :5]), A, B, X, kind="shape"),
    bad("activation_matching", "x", lambda: activation_matching(A, B, X * NAN), A, B, kind="nan"),
    bad("activation_matching", "x", lambda: activation_matching(A, B, X[:0]), A, B, kind="empty"),
    bad("activation_matching", "b", lambda: activation_matching(A, OTHER, X), A, OTHER, X, kind="shape"),
    bad("activation_matching", "a", lambda: activation_matching(mlp(6, 5, 4, 3, act=nn.Tanh), B, X), B, X, kind="act"),
    bad("activation_matching", "x", lambda: activation_matching(A, B, None), A, B, kind="none"),
    bad("sinkhorn_rebasin", "steps", lambda: sinkhorn_rebasin(A, B, X, Y, steps=-1), A, B, X, Y, kind="range"),
    bad("sinkhorn_rebasin", "lr", lambda: sinkhorn_rebasin(A, B, X, Y, lr=NAN), A, B, X, Y, kind="nan"),
    bad("sinkhorn_rebasin", "y", lambda: sinkhorn_rebasin(A, B, X, Y + 3), A, B, X, Y, kind="range"),
    bad("sinkhorn_rebasin", "y", lambda: sinkhorn_rebasin(A, B, X, Y[:3]), A, B, X, Y, kind="shape"),
    bad("sinkhorn_rebasin", "init", lambda: sinkhorn_rebasin(A, B, X, Y, init=NOTPERM), A, B, kind="not-a-permutation"),
    bad("sinkhorn_rebasin", "tau", lambda: sinkhorn_rebasin(A, B, X, Y, tau=0.0), A, B, kind="range"),
    bad("sinkhorn_rebasin", "b", lambda: sinkhorn_rebasin(A, B64, X, Y), A, kind="dtype"),
    # ------------------------------------------------------------------ configurations
    bad("EncoderConfig", "hidden", lambda: EncoderConfig(hidden=0), kind="range"),
    bad("EncoderConfig", "reduction", lambda: EncoderConfig(reduction="median"), kind="name"),
    bad("EncoderConfig", "dropout", lambda: EncoderConfig(dropout=1.0), kind="range"),
    bad("EncoderConfig", "init_scale", lambda: EncoderConfig(init_scale=NAN), kind="nan"),
    bad("EncoderConfig", "bn", lambda: EncoderConfig(bn="yes"), kind="type"),
    bad("EncoderConfig", "input_dim_downsample", lambda: EncoderConfig(input_dim_downsample=0), kind="range"),
    bad("TrainConfig", "steps", lambda: TrainConfig(steps=0), kind="range"),
    bad("TrainConfig", "lr", lambda: TrainConfig(lr=NAN), kind="nan"),
    bad("TrainConfig", "recon", lambda: TrainConfig(recon="l1"), kind="name"),
    bad("TrainConfig", "drop_rate", lambda: TrainConfig(drop_rate=1.0), kind="range"),
    bad("TrainConfig", "amsgrad", lambda: TrainConfig(amsgrad="no"), kind="type"),
    bad("TrainConfig", "batch_size", lambda: TrainConfig(batch_size=None), kind="none"),
    # ------------------------------------------------------------------ the encoder
    bad("DeepAlignNet", "widths", lambda: DeepAlignNet((6, 3)), kind="size"),
    bad("DeepAlignNet", "widths", lambda: DeepAlignNet((6, -5, 3)), kind="range"),
    bad("DeepAlignNet", "widths", lambda: DeepAlignNet(None), kind="none"),
    bad("DeepAlignNet", "cfg", lambda: DeepAlignNet((6, 5, 3), cfg={"hidden": 4}), kind="type"),
    bad("DeepAlignNet", "seed", lambda: DeepAlignNet((6, 5, 3), seed=-1), kind="range"),
    bad("DeepAlignNet.embed", "wb", lambda: ALIGNER.net.embed(from_sequential(OTHER)), ALIGNER, kind="shape"),
    bad("DeepAlignNet.embed", "wb", lambda: ALIGNER.net.embed(A), A, ALIGNER, kind="type"),
    # ------------------------------------------------------------------ weight batches
    bad("WeightBatch.cat", "batches", lambda: WeightBatch.cat([]), kind="empty"),
    bad("WeightBatch.cat", "batches", lambda: WeightBatch.cat([WA, from_sequential(OTHER)]), WA, kind="shape"),
    bad("WeightBatch.cat", "batches", lambda: WeightBatch.cat(WA), WA, kind="type"),
    bad("WeightBatch.from_linear", "weights", lambda: WeightBatch.from_linear([torch.rand(1, 5, 6)], []), kind="size"),
    bad(
        "WeightBatch.from_linear",
        "weights",
        lambda: WeightBatch.from_linear(
            [torch.rand(1, 5, 6), torch.rand(1, 3, 4)], [torch.rand(1, 5), torch.rand(1, 3)]
        ),
        kind="shape",
    ),
    bad(
        "WeightBatch.from_linear",
        "weights",
        lambda: WeightBatch.from_linear(
            [torch.rand(1, 5, 6) * NAN, torch.rand(1, 3, 5)], [torch.rand(1, 5), torch.rand(1, 3)]
        ),
        kind="nan",
    ),
    bad("from_sequential", "nets", lambda: from_sequential([]), kind="empty"),
    bad("from_sequential", "nets", lambda: from_sequential([A, OTHER]), A, OTHER, kind="shape"),
    bad("from_sequential", "nets", lambda: from_sequential(NANNET), kind="nan"),
    bad("from_sequential", "nets", lambda: from_sequential("mlp"), kind="type"),
    bad("from_sequential", "nets", lambda: from_sequential(None), kind="none"),
    bad(
        "from_sequential",
        "nets",
        lambda: from_sequential(nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.Linear(5, 3))),
        kind="layer",
    ),
    bad("from_state_dict", "state", lambda: from_state_dict(None), kind="none"),
    bad("from_state_dict", "state", lambda: from_state_dict({}), kind="empty"),
    bad(
        "from_state_dict",
        "state",
        lambda: from_state_dict(sd(torch.rand(5, 6), torch.rand(3, 4))),
        kind="shape",
    ),
    bad(
        "from_state_dict",
        "state",
        lambda: from_state_dict(sd(torch.rand(5, 6) * NAN, torch.rand(3, 5))),
        kind="nan",
    ),
    bad(
        "from_state_dict",
        "state",
        lambda: from_state_dict({**sd(torch.rand(5, 6)), "0.running_mean": torch.rand(5)}),
        kind="name",
    ),
    bad(
        "from_state_dict",
        "state",
        lambda: from_state_dict(sd(torch.rand(5, 6, 3), torch.rand(3, 5))),
        kind="conv",
    ),
    bad(
        "from_state_dict",
        "state",
        lambda: from_state_dict(sd(torch.ones(5, 6, dtype=torch.long), torch.rand(3, 5))),
        kind="dtype",
    ),
    bad("to_sequential", "index", lambda: to_sequential(WA, 3), WA, kind="range"),
    bad("to_sequential", "index", lambda: to_sequential(WA, -1), WA, kind="negative"),
    bad("to_sequential", "index", lambda: to_sequential(WA, "0"), WA, kind="type"),
    bad("to_sequential", "wb", lambda: to_sequential(A), A, kind="type"),
    bad("to_sequential", "wb", lambda: to_sequential(None), kind="none"),
    bad("as_batch", "nets", lambda: as_batch(3, "nets"), kind="type"),
    bad("as_batch", "nets", lambda: as_batch([], "nets"), kind="empty"),
    bad("as_batch", "nets", lambda: as_batch(WA, "nets", (6, 5, 5, 3)), WA, kind="shape"),
    bad(
        "as_batch",
        "nets",
        lambda: as_batch(WeightBatch((WA.weights[0] * NAN, WA.weights[1]), WA.biases[:2]), "nets"),
        kind="nan",
    ),
    bad("as_batch", "nets", lambda: as_batch(None, "nets"), kind="none"),
    # ------------------------------------------------------------------ convolutional networks
    bad("DeepAlign", "widths", lambda: DeepAlign(CNAN), CNAN, kind="cnn-nan"),
    bad("DeepAlign", "widths", lambda: DeepAlign(CBN), CBN, kind="cnn-unsupported-layer"),
    bad("DeepAlign", "widths", lambda: DeepAlign(CGROUPS), CGROUPS, kind="cnn-groups"),
    bad("DeepAlign", "widths", lambda: DeepAlign(CNOEND), CNOEND, kind="cnn-no-linear"),
    bad("DeepAlign", "features", lambda: DeepAlign((1, 4, 3), features=(9,)), kind="size"),
    bad("DeepAlign", "features", lambda: DeepAlign((1, 4, 3), features=(9, 0)), kind="range"),
    bad("DeepAlign", "features", lambda: DeepAlign(CA, features=(9, 9, 1)), CA, kind="conflict"),
    bad("DeepAlign.align", "b", lambda: CALIGNER.align(CA, CNAN), CA, CNAN, CALIGNER, kind="cnn-nan"),
    bad("DeepAlign.align", "b", lambda: CALIGNER.align(CA, CB64), CA, CB64, CALIGNER, kind="cnn-dtype"),
    bad("DeepAlign.align", "b", lambda: CALIGNER.align(CA, C5), CA, C5, CALIGNER, kind="cnn-shape"),
    bad("DeepAlign.align", "a", lambda: CALIGNER.align(A, CB), A, CB, CALIGNER, kind="mlp-for-cnn"),
    bad("DeepAlign.align", "a", lambda: ALIGNER.align(CA, CB), CA, CB, ALIGNER, kind="cnn-for-mlp"),
    bad("DeepAlign.align", "b", lambda: CALIGNER.align(CA, CBN), CA, CBN, CALIGNER, kind="cnn-unsupported-layer"),
    bad("DeepAlign.fit", "recon", lambda: CALIGNER.fit([CA, CB], CX, CY, steps=1), CA, CB, CALIGNER, kind="cnn-lmc"),
    bad(
        "DeepAlign.fit",
        "x",
        lambda: CALIGNER.fit([CA, CB], CX[:, 0], CY, steps=1, recon="l2"),
        CA,
        CB,
        CALIGNER,
        kind="cnn-shape",
    ),
    bad("weight_matching", "b", lambda: weight_matching(CA, CNAN), CA, CNAN, kind="cnn-nan"),
    bad("weight_matching", "b", lambda: weight_matching(CA, CB64), CA, CB64, kind="cnn-dtype"),
    bad("weight_matching", "a", lambda: weight_matching(CBN, CB), CBN, CB, kind="cnn-unsupported-layer"),
    bad("weight_matching", "b", lambda: weight_matching(CA, C5), CA, C5, kind="cnn-shape"),
    bad("weight_matching", "b", lambda: weight_matching(A, CB), A, CB, kind="mlp-vs-cnn"),
    bad("activation_matching", "a", lambda: activation_matching(CA, CB, X), CA, CB, kind="cnn"),
    bad("sinkhorn_rebasin", "a", lambda: sinkhorn_rebasin(CA, CB, X, Y), CA, CB, kind="cnn"),
    bad("permute", "perms", lambda: permute(CA, [torch.arange(4)]), CA, kind="cnn-size"),
    bad("permute", "net", lambda: permute(CGROUPS, [torch.arange(4)] * 2), CGROUPS, kind="cnn-groups"),
    bad("merge", "b", lambda: merge(CA, CB64), CA, CB64, kind="cnn-dtype"),
    bad("merge", "b", lambda: merge(CA, CNAN), CA, CNAN, kind="cnn-nan"),
    bad("interpolation", "x", lambda: interpolation(CA, CB, X, Y), CA, CB, kind="cnn-shape"),
    bad("interpolation", "b", lambda: interpolation(CA, C5, CX, CY), CA, C5, kind="cnn-shape"),
    bad("CNNSpec", "channels", lambda: CNNSpec(channels=(1,)), kind="size"),
    bad("CNNSpec", "channels", lambda: CNNSpec(channels=(1, 0)), kind="range"),
    bad("CNNSpec", "channels", lambda: CNNSpec(channels="18"), kind="type"),
    bad("CNNSpec", "kernel", lambda: CNNSpec(kernel=0), kind="range"),
    bad("CNNSpec", "padding", lambda: CNNSpec(padding=-1), kind="range"),
    bad("CNNSpec", "classes", lambda: CNNSpec(classes=None), kind="none"),
    bad("train_cnn_zoo", "n", lambda: train_cnn_zoo(0, spec=CSPEC, data=CDATA), CDATA, kind="range"),
    bad("train_cnn_zoo", "lr", lambda: train_cnn_zoo(2, spec=CSPEC, data=CDATA, lr=NAN), CDATA, kind="nan"),
    bad("train_cnn_zoo", "spec", lambda: train_cnn_zoo(2, spec=(1, 2), data=CDATA), CDATA, kind="type"),
    bad("train_cnn_zoo", "data", lambda: train_cnn_zoo(2, spec=CSPEC, data=SPLIT), kind="shape"),
    bad("train_cnn_zoo", "data", lambda: train_cnn_zoo(2, spec=CNNSpec(classes=2), data=CDATA), CDATA, kind="range"),
    bad("train_cnn_zoo", "data", lambda: train_cnn_zoo(2, spec=CSPEC, data="fashion"), kind="type"),
    bad("train_cnn_zoo", "steps", lambda: train_cnn_zoo(2, spec=CSPEC, data=CDATA, steps=-1), CDATA, kind="range"),
    # ------------------------------------------------------------------ issue 47 probe
    bad("DeepAlign", "widths", lambda: DeepAlign((6.0, 5, 3)), kind="float"),
    bad("DeepAlign", "widths", lambda: DeepAlign((6, True, 3)), kind="bool"),
    bad("DeepAlign.fit", "config", lambda: ALIGNER.fit([A, B], X, Y, config={"steps": 1}), A, B, ALIGNER, kind="type"),
    bad("DeepAlign.save", "path", lambda: ALIGNER.save(None), ALIGNER, kind="none"),
    bad("DeepAlign.save", "path", lambda: ALIGNER.save(5), ALIGNER, kind="type"),
    bad("DeepAlign.save", "path", lambda: ALIGNER.save(_tmpdir()), ALIGNER, kind="directory"),
    bad("DeepAlign.load", "path", lambda: DeepAlign.load(None), kind="none"),
    bad("DeepAlign.load", "path", lambda: DeepAlign.load(_junk()), kind="malformed"),
    bad("permute", "perms", lambda: permute(A, [None, torch.arange(4)]), A, kind="none-entry"),
    bad("interpolation", "n_alphas", lambda: interpolation(A, B, X, Y, n_alphas=2**64), A, B, kind="overflow"),
    bad("interpolation", "n_alphas", lambda: interpolation(A, B, X, Y, n_alphas=10**9), A, B, kind="huge"),
    bad("train_zoo", "lr", lambda: train_zoo(3, val=0, test=0, steps=1, lr=1e300), kind="overflow"),
    bad("sinkhorn_rebasin", "lr", lambda: sinkhorn_rebasin(A, B, X, Y, steps=2, lr=1e300), A, B, kind="overflow"),
    bad("sinkhorn_rebasin", "tau", lambda: sinkhorn_rebasin(A, B, X, Y, steps=2, tau=1e-300), A, B, kind="underflow"),
    bad("TrainConfig", "lr", lambda: TrainConfig(lr=1e300), kind="overflow"),
    bad("TrainConfig", "tau", lambda: TrainConfig(tau=1e-300), kind="underflow"),
    bad("TrainConfig", "sup_weight", lambda: TrainConfig(sup_weight=0.0, rec_weight=0.0), kind="nothing-to-train"),
    bad("train_cnn_zoo", "lr", lambda: train_cnn_zoo(2, spec=CSPEC, data=CDATA, lr=1e300), CDATA, kind="overflow"),
    bad("CNNSpec", "classes", lambda: CNNSpec(classes=1), kind="one-class"),
    bad("Zoo.from_networks", "data", lambda: Zoo.from_networks([A, B], SPLIT), A, B, kind="width"),
    bad("Zoo", "nets", lambda: Zoo(None, SPLIT, {}), kind="none"),
    bad("Zoo", "data", lambda: Zoo(WA, "digits", {}), WA, kind="type"),
    bad("DeepAlignNet.scores_from", "ea", lambda: DeepAlignNet.scores_from(None, None), kind="none"),
    bad("DeepAlignNet.scores_from", "ea", lambda: DeepAlignNet.scores_from([], []), kind="empty"),
    bad("DeepAlignNet.scores_from", "eb", lambda: DeepAlignNet.scores_from([torch.rand(1, 5, 4)], []), kind="length"),
    bad(
        "DeepAlignNet.scores_from",
        "eb",
        lambda: DeepAlignNet.scores_from([torch.rand(1, 5, 4)], [torch.rand(1, 5, 3)]),
        kind="shape",
    ),
    bad("WeightBatch", "weights", lambda: WeightBatch(None, None), kind="none"),
    bad("WeightBatch", "weights", lambda: WeightBatch(("a",), ("b",)), kind="type"),
    bad(
        "WeightBatch",
        "weights",
        lambda: WeightBatch((torch.rand(1, 5, 6), torch.rand(1, 3, 4)), (torch.rand(1, 5), torch.rand(1, 3))),
        kind="shape",
    ),
    bad("WeightBatch.to", "dtype", lambda: WA.to("float64"), WA, kind="type"),
    bad("WeightBatch.to", "dtype", lambda: WA.to(torch.int64), WA, kind="integer"),
    bad("WeightBatch.to", "dtype", lambda: WA.to(None), WA, kind="none"),
]


def _tmpdir():
    import tempfile

    return tempfile.mkdtemp(prefix="da-bad-")


def _junk():
    import os

    path = os.path.join(_tmpdir(), "junk.pt")
    with open(path, "w") as f:
        f.write("junk")
    return path


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_has_bad_input_cases():
    exempt = {
        "MatchResult": "a plain record of what a matching method returned",
        "History": "a plain record of what training did",
    }
    assert coverage_gaps(da, CASES, exempt=exempt) == {}


def test_the_users_training_mode_survives():
    assert A.training and all(m.training for m in A.modules())
