"""Every public callable of icml24.desa refuses bad input with a one-line InputError naming the argument, and
leaves the objects passed in (models, tensors) unchanged."""

import numpy as np
import pytest
import torch

import icml24.desa as desa
from icml24.desa import (
    AlexNet,
    AnchorSet,
    ConvNet,
    DesaConfig,
    accuracy_matrix,
    anchors_only_training,
    check_model,
    diff_augment,
    dm_loss,
    domain_summary,
    fashion_domains,
    global_anchors,
    gossip_fedavg,
    kd_loss,
    local_training,
    make_topology,
    run_desa,
    sample_clients,
    supcon_loss,
    synthesize_anchors,
)
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
G = torch.Generator().manual_seed(0)
X = torch.randn(12, 3, 16, 16, generator=G)
Y = torch.arange(12) % 4
DATA = [(X, Y), (X + 1, Y)]
M0 = ConvNet(3, 4, 4, im_size=16, seed=0)
M1 = AlexNet(3, 4, 4, 16, seed=1)
MODELS = [M0, M1]
CFG = DesaConfig(rounds=1, ipc=1, dm_iterations=1, dm_batch_real=4, dm_net_width=4, num_classes=4)
LAB = torch.arange(4).repeat_interleave(2)
A = AnchorSet(torch.randn(8, 3, 16, 16, generator=G), LAB, 2, (0, 1, 2, 3))
B = AnchorSet(torch.randn(8, 3, 16, 16, generator=G), LAB, 2, (0, 1, 2, 3))
LOGITS = torch.randn(5, 4, generator=G)
F8 = torch.randn(5, 8, generator=G)
Y5 = torch.tensor([0, 1, 2, 3, 0])
ACC = np.array([[0.9, 0.2], [0.3, 0.8]])


class NoEmbed(torch.nn.Module):
    def forward(self, x):
        return x


class NoClassify(torch.nn.Module):
    def embed(self, x):
        return x


def cfg(**kw):
    return DesaConfig(**{**CFG.__dict__, **kw})


CASES = [
    # ------------------------------------------------------------------------------------------ ConvNet
    bad("ConvNet", "width", lambda: ConvNet(width=0), kind="range"),
    bad("ConvNet", "depth", lambda: ConvNet(depth=6, im_size=32), kind="too-deep"),
    bad("ConvNet", "channel", lambda: ConvNet(channel=0), kind="range"),
    bad("ConvNet", "num_classes", lambda: ConvNet(num_classes=1), kind="range"),
    bad("ConvNet", "norm", lambda: ConvNet(norm="batchnorm"), kind="name"),
    bad("ConvNet", "seed", lambda: ConvNet(seed=-1), kind="range"),
    # ------------------------------------------------------------------------------------------ AlexNet
    bad("AlexNet", "width", lambda: AlexNet(width=0), kind="range"),
    bad("AlexNet", "channel", lambda: AlexNet(channel=0), kind="range"),
    bad("AlexNet", "num_classes", lambda: AlexNet(num_classes=1), kind="range"),
    bad("AlexNet", "im_size", lambda: AlexNet(im_size=4), kind="range"),
    bad("AlexNet", "seed", lambda: AlexNet(seed="a"), kind="type"),
    # -------------------------------------------------------------------------------------- check_model
    bad("check_model", "model", lambda: check_model(None), kind="none"),
    bad("check_model", "embed", lambda: check_model(NoEmbed()), kind="no-embed"),
    bad("check_model", "classify", lambda: check_model(NoClassify()), kind="no-classify"),
    bad("check_model", "model", lambda: check_model(torch.nn.Linear(2, 2)), kind="plain"),
    bad("check_model", "models[3]", lambda: check_model("x", "models[3]"), kind="type"),
    # ------------------------------------------------------------------------------------- diff_augment
    bad("diff_augment", "x", lambda: diff_augment(X.numpy(), "flip", 0), kind="numpy"),
    bad("diff_augment", "x", lambda: diff_augment(X[0], "flip", 0), X, kind="ndim"),
    bad("diff_augment", "strategy", lambda: diff_augment(X, "blur", 0), X, kind="name"),
    bad("diff_augment", "strategy", lambda: diff_augment(X, 5, 0), kind="type"),
    bad("diff_augment", "seed", lambda: diff_augment(X, "flip", -1), kind="range"),
    bad("diff_augment", "draws", lambda: diff_augment(X, "flip", 0, draws=3), kind="range"),
    # ------------------------------------------------------------------------------------------ dm_loss
    bad("dm_loss", "net", lambda: dm_loss(NoEmbed(), [X], [X]), kind="no-embed"),
    bad("dm_loss", "syn", lambda: dm_loss(M0, [X, X], [X]), M0, kind="length"),
    bad("dm_loss", "real", lambda: dm_loss(M0, X, [X]), M0, kind="type"),
    bad("dm_loss", "real", lambda: dm_loss(M0, [X[:0]], [X]), kind="empty"),
    bad("dm_loss", "syn[0]", lambda: dm_loss(M0, [X], [X[:0]]), kind="missing"),
    bad("dm_loss", "real[0]", lambda: dm_loss(M0, [X[0]], [X]), kind="ndim"),
    # ------------------------------------------------------------------------------- synthesize_anchors
    bad("synthesize_anchors", "ipc", lambda: synthesize_anchors(X, Y, num_classes=4, ipc=0), X, Y, kind="range"),
    bad("synthesize_anchors", "labels", lambda: synthesize_anchors(X, Y, num_classes=3), X, Y, kind="out-of-range"),
    bad("synthesize_anchors", "images", lambda: synthesize_anchors(X[0], Y, num_classes=4), kind="ndim"),
    bad("synthesize_anchors", "labels", lambda: synthesize_anchors(X, Y.float(), num_classes=4), kind="dtype"),
    bad("synthesize_anchors", "labels", lambda: synthesize_anchors(X, Y[:5], num_classes=4), kind="length"),
    bad("synthesize_anchors", "lr", lambda: synthesize_anchors(X, Y, num_classes=4, lr=0.0), kind="range"),
    bad("synthesize_anchors", "augment", lambda: synthesize_anchors(X, Y, num_classes=4, augment="blur"), kind="name"),
    bad("synthesize_anchors", "dp", lambda: synthesize_anchors(X, Y, num_classes=4, dp="yes"), kind="type"),
    bad(
        "synthesize_anchors", "net_factory", lambda: synthesize_anchors(X, Y, num_classes=4, net_factory=3), kind="type"
    ),
    # ---------------------------------------------------------------------------------- global_anchors
    bad("global_anchors", "anchor_sets", lambda: global_anchors([A]), A, kind="one"),
    bad("global_anchors", "mode", lambda: global_anchors([A, B], "max"), kind="name"),
    bad("global_anchors", "anchor_sets[1]", lambda: global_anchors([A, "b"]), kind="type"),
    bad(
        "global_anchors",
        "anchor_sets[1]",
        lambda: global_anchors([A, AnchorSet(B.images[:4], LAB[:4], 1, (0, 1, 2, 3))]),
        kind="shape",
    ),
    bad(
        "global_anchors",
        "anchor_sets",
        lambda: global_anchors([AnchorSet(A.images, LAB, 2, (0,)), AnchorSet(B.images, LAB, 2, (1,))]),
        kind="orphan-classes",
    ),
    # ------------------------------------------------------------------------------------------ kd_loss
    bad("kd_loss", "teacher_logits", lambda: kd_loss(LOGITS, LOGITS[:3], Y5), kind="shape"),
    bad("kd_loss", "temperature", lambda: kd_loss(LOGITS, LOGITS, Y5, temperature=0.0), kind="range"),
    bad("kd_loss", "distil_weight", lambda: kd_loss(LOGITS, LOGITS, Y5, distil_weight=2.0), kind="range"),
    bad("kd_loss", "reduction", lambda: kd_loss(LOGITS, LOGITS, Y5, reduction="sum"), kind="name"),
    bad("kd_loss", "labels", lambda: kd_loss(LOGITS, LOGITS, Y5.float()), kind="dtype"),
    bad("kd_loss", "labels", lambda: kd_loss(LOGITS, LOGITS, Y5 + 4), kind="out-of-range"),
    bad("kd_loss", "student_logits", lambda: kd_loss(torch.full((5, 4), NAN), LOGITS, Y5), kind="nan"),
    # -------------------------------------------------------------------------------------- supcon_loss
    bad("supcon_loss", "anchor_features", lambda: supcon_loss(F8, F8[:, :4], Y5, Y5), kind="dim"),
    bad("supcon_loss", "temperature", lambda: supcon_loss(F8, F8, Y5, Y5, temperature=0.0), kind="range"),
    bad("supcon_loss", "labels", lambda: supcon_loss(F8, F8, Y5[:3], Y5), kind="length"),
    bad("supcon_loss", "features", lambda: supcon_loss(F8[0], F8, Y5, Y5), kind="ndim"),
    bad("supcon_loss", "features", lambda: supcon_loss(torch.full((5, 8), NAN), F8, Y5, Y5), kind="nan"),
    # ------------------------------------------------------------------------------- DesaConfig.validated
    bad("DesaConfig.validated", "rounds", lambda: cfg(rounds=-1).validated(), kind="range"),
    bad("DesaConfig.validated", "ipc", lambda: cfg(ipc=0).validated(), kind="range"),
    bad("DesaConfig.validated", "lr", lambda: cfg(lr=0.0).validated(), kind="range"),
    bad("DesaConfig.validated", "topology", lambda: cfg(topology="star").validated(), kind="name"),
    bad("DesaConfig.validated", "anchor_mode", lambda: cfg(anchor_mode="max").validated(), kind="name"),
    bad("DesaConfig.validated", "client_ratio", lambda: cfg(client_ratio=0.0).validated(), kind="range"),
    bad("DesaConfig.validated", "lambda_ce", lambda: cfg(lambda_ce=0, lambda_kd=0, lambda_reg=0).validated()),
    bad("DesaConfig.validated", "dp", lambda: cfg(dp="yes").validated(), kind="type"),
    # ------------------------------------------------------------------------------------- make_topology
    bad("make_topology", "n_clients", lambda: make_topology("ring", 1), kind="one"),
    bad("make_topology", "topology", lambda: make_topology("star", 4), kind="name"),
    bad("make_topology", "not connected", lambda: make_topology([[1], [0], [3], [2]], 4), kind="disconnected"),
    bad("make_topology", "not symmetric", lambda: make_topology([[1], [], [1]], 3), kind="asymmetric"),
    bad("make_topology", "topology[0]", lambda: make_topology([[0, 1], [0]], 2), kind="self-loop"),
    bad("make_topology", "degree", lambda: make_topology("random_regular", 5, degree=3), kind="odd"),
    # ------------------------------------------------------------------------------------ sample_clients
    bad("sample_clients", "n_clients", lambda: sample_clients(0, 1.0, 0, 0), kind="range"),
    bad("sample_clients", "client_ratio", lambda: sample_clients(4, 0.0, 0, 0), kind="zero"),
    bad("sample_clients", "client_ratio", lambda: sample_clients(4, 1.5, 0, 0), kind="range"),
    bad("sample_clients", "round_index", lambda: sample_clients(4, 0.5, -1, 0), kind="range"),
    bad("sample_clients", "seed", lambda: sample_clients(4, 0.5, 0, -2), kind="range"),
    # ------------------------------------------------------------------------------------------ run_desa
    bad("run_desa", "models", lambda: run_desa([M0], DATA[:1], CFG), M0, kind="one-client"),
    bad(
        "run_desa",
        "not connected",
        lambda: run_desa(MODELS + [ConvNet(3, 4, 4, im_size=16)], DATA + [DATA[0]], cfg(topology=((1,), (0,), ()))),
    ),
    bad("run_desa", "models[1]", lambda: run_desa([M0, NoEmbed()], DATA, CFG), M0, kind="no-embed"),
    bad("run_desa", "ipc", lambda: run_desa(MODELS, DATA, cfg(ipc=0)), M0, M1, kind="range"),
    bad("run_desa", "backend", lambda: run_desa(MODELS, DATA, CFG, backend="mpi"), kind="name"),
    bad("run_desa", "train_sets", lambda: run_desa(MODELS, DATA[:1], CFG), M0, M1, kind="count"),
    bad("run_desa", "no client holds", lambda: run_desa(MODELS, DATA, cfg(num_classes=5)), M0, M1, kind="classes"),
    bad("run_desa", "models", lambda: run_desa([M0, M0], DATA, CFG), M0, kind="same-module"),
    bad("run_desa", "port", lambda: run_desa(MODELS, DATA, CFG, backend="gloo", port=0), kind="range"),
    bad("run_desa", "config", lambda: run_desa(MODELS, DATA, {"rounds": 1}), kind="type"),
    bad("run_desa", "on_failure", lambda: run_desa(MODELS, DATA, CFG, on_failure="ignore"), M0, kind="name"),
    bad("run_desa", "checkpoint_dir", lambda: run_desa(MODELS, DATA, CFG, checkpoint_dir="ck"), kind="inprocess"),
    bad("run_desa", "checkpoint_dir", lambda: run_desa(MODELS, DATA, CFG, backend="gloo", checkpoint_dir=3), kind="t"),
    # ----------------------------------------------------------------------------------- fashion_domains
    bad("fashion_domains", "n_clients", lambda: fashion_domains(1), kind="one-client"),
    bad("fashion_domains", "n_clients", lambda: fashion_domains("5"), kind="type"),
    bad("fashion_domains", "n_train", lambda: fashion_domains(3, n_train=5), kind="range"),
    bad("fashion_domains", "n_test", lambda: fashion_domains(3, n_test=NAN), kind="nan"),
    bad("fashion_domains", "seed", lambda: fashion_domains(3, seed=-1), kind="range"),
    # ----------------------------------------------------------------------------------- accuracy_matrix
    bad("accuracy_matrix", "models", lambda: accuracy_matrix([], DATA), kind="empty"),
    bad("accuracy_matrix", "test_sets[0]", lambda: accuracy_matrix(MODELS, [X]), kind="pair"),
    bad("accuracy_matrix", "test_sets[0]", lambda: accuracy_matrix(MODELS, [(X, Y[:3])]), kind="length"),
    bad("accuracy_matrix", "batch_size", lambda: accuracy_matrix(MODELS, DATA, batch_size=0), kind="range"),
    bad("accuracy_matrix", "models[0]", lambda: accuracy_matrix(["m"], DATA), kind="type"),
    # ------------------------------------------------------------------------------------ domain_summary
    bad("domain_summary", "acc", lambda: domain_summary(np.zeros((2, 3))), kind="square"),
    bad("domain_summary", "acc", lambda: domain_summary(np.zeros((1, 1))), kind="one"),
    bad("domain_summary", "acc", lambda: domain_summary(np.full((2, 2), NAN)), kind="nan"),
    bad("domain_summary", "acc", lambda: domain_summary(np.zeros(3)), kind="ndim"),
    bad("domain_summary", "acc", lambda: domain_summary([["a", "b"], ["c", "d"]]), ACC, kind="strings"),
    # ------------------------------------------------------------------------------------ local_training
    bad("local_training", "models", lambda: local_training([M0], DATA[:1], CFG), M0, kind="one-client"),
    bad("local_training", "config", lambda: local_training(MODELS, DATA, "cfg"), kind="type"),
    bad("local_training", "labels", lambda: local_training(MODELS, [(X, Y), (X, Y + 4)], CFG), M0, kind="range"),
    bad("local_training", "images", lambda: local_training(MODELS, [(X, Y), (X[:, :, :8], Y)], CFG), kind="shape"),
    bad("local_training", "models[1]", lambda: local_training([M0, NoEmbed()], DATA, CFG), M0, kind="no-embed"),
    # ---------------------------------------------------------------------------- anchors_only_training
    bad("anchors_only_training", "anchors", lambda: anchors_only_training(MODELS, X, CFG), kind="type"),
    bad("anchors_only_training", "config", lambda: anchors_only_training(MODELS, A, 3), kind="type"),
    bad("anchors_only_training", "models", lambda: anchors_only_training([M0], A, CFG), M0, kind="one"),
    bad("anchors_only_training", "models[1]", lambda: anchors_only_training([M0, NoEmbed()], A, CFG), kind="embed"),
    bad("anchors_only_training", "lr", lambda: anchors_only_training(MODELS, A, cfg(lr=NAN)), M0, kind="nan"),
    # ------------------------------------------------------------------------------------- gossip_fedavg
    bad("gossip_fedavg", "model", lambda: gossip_fedavg("m", DATA, CFG), kind="type"),
    bad("gossip_fedavg", "backend", lambda: gossip_fedavg(M0, DATA, CFG, backend="mpi"), M0, kind="name"),
    bad("gossip_fedavg", "models", lambda: gossip_fedavg(M0, DATA[:1], CFG), M0, kind="one-client"),
    bad("gossip_fedavg", "timeout", lambda: gossip_fedavg(M0, DATA, CFG, timeout=0.0), kind="range"),
    bad("gossip_fedavg", "topology", lambda: gossip_fedavg(M0, DATA, cfg(topology="star")), M0, kind="name"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    exempt = {
        "AnchorSet": "plain record of synthesised anchors",
        "DesaResult": "plain record of a run's outcome",
        "ClientFailed": "exception type",
    }
    assert coverage_gaps(desa, CASES, exempt=exempt) == {}
