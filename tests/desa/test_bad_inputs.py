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
X8 = torch.randn(12, 3, 8, 8, generator=G)
M0_3 = ConvNet(3, 3, 4, im_size=16, seed=0)
LIN = torch.nn.Linear(3, 3)
A1 = AnchorSet(torch.randn(8, 1, 16, 16, generator=G), LAB, 2, (0, 1, 2, 3))


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
    bad("ConvNet", "seed", lambda: ConvNet(width=2, seed=2**70), kind="beyond-generator"),
    # the forward refuses what the network cannot take (issue 47: torch errors escaped)
    bad("ConvNet.forward", "x", lambda: M0(torch.randn(2, 3, 8, 8)), M0, kind="image-size"),
    bad("ConvNet.forward", "x", lambda: M0(torch.randn(2, 1, 16, 16)), M0, kind="channels"),
    bad("ConvNet.forward", "x", lambda: M0(torch.randn(3, 16, 16)), M0, kind="ndim"),
    bad("ConvNet.forward", "x", lambda: M0(torch.full((2, 3, 16, 16), NAN)), M0, kind="nan"),
    bad("ConvNet.forward", "x", lambda: M0(torch.ones(2, 3, 16, 16, dtype=torch.long)), M0, kind="dtype"),
    bad("ConvNet.forward", "x", lambda: M0(None), M0, kind="none"),
    bad("ConvNet.embed", "x", lambda: M0.embed(torch.randn(2, 1, 16, 16)), M0, kind="channels"),
    bad("ConvNet.classify", "h", lambda: M0.classify(torch.randn(2, 5)), M0, kind="shape"),
    # ------------------------------------------------------------------------------------------ AlexNet
    bad("AlexNet", "width", lambda: AlexNet(width=0), kind="range"),
    bad("AlexNet", "channel", lambda: AlexNet(channel=0), kind="range"),
    bad("AlexNet", "num_classes", lambda: AlexNet(num_classes=1), kind="range"),
    bad("AlexNet", "im_size", lambda: AlexNet(im_size=4), kind="range"),
    bad("AlexNet", "seed", lambda: AlexNet(seed="a"), kind="type"),
    bad("AlexNet.forward", "x", lambda: M1(torch.randn(2, 3, 8, 8)), M1, kind="image-size"),
    bad("AlexNet.forward", "x", lambda: M1(torch.randn(2, 1, 16, 16)), M1, kind="channels"),
    bad("AlexNet.classify", "h", lambda: M1.classify(torch.randn(2, 5)), M1, kind="shape"),
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
    bad("diff_augment", "x", lambda: diff_augment(X * NAN, "flip", 0), kind="nan"),
    # ------------------------------------------------------------------------------------------ dm_loss
    bad("dm_loss", "net", lambda: dm_loss(NoEmbed(), [X], [X]), kind="no-embed"),
    bad("dm_loss", "syn", lambda: dm_loss(M0, [X, X], [X]), M0, kind="length"),
    bad("dm_loss", "real", lambda: dm_loss(M0, X, [X]), M0, kind="type"),
    bad("dm_loss", "real", lambda: dm_loss(M0, [X[:0]], [X]), kind="empty"),
    bad("dm_loss", "syn[0]", lambda: dm_loss(M0, [X], [X[:0]]), kind="missing"),
    bad("dm_loss", "real[0]", lambda: dm_loss(M0, [X[0]], [X]), kind="ndim"),
    bad("dm_loss", "real[0]", lambda: dm_loss(M0, [X[:, :1]], [X[:, :1]]), M0, kind="channels-for-net"),
    bad("dm_loss", "syn[0]", lambda: dm_loss(M0, [X], [X[:, :, :8, :8]]), M0, kind="shape-mismatch"),
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
    bad(
        "synthesize_anchors",
        "net_factory",
        lambda: synthesize_anchors(X, Y, num_classes=4, iterations=1, net_factory=lambda s: 3),
        X,
        kind="returns-no-module",
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
    # ----------------------------------------------------------------- DesaConfig (checked when constructed)
    bad("DesaConfig", "rounds", lambda: cfg(rounds=-1).validated(), kind="range"),
    bad("DesaConfig", "ipc", lambda: cfg(ipc=0).validated(), kind="range"),
    bad("DesaConfig", "lr", lambda: cfg(lr=0.0).validated(), kind="range"),
    bad("DesaConfig", "topology", lambda: cfg(topology="star").validated(), kind="name"),
    bad("DesaConfig", "anchor_mode", lambda: cfg(anchor_mode="max").validated(), kind="name"),
    bad("DesaConfig", "client_ratio", lambda: cfg(client_ratio=0.0).validated(), kind="range"),
    bad("DesaConfig", "lambda_ce", lambda: cfg(lambda_ce=0, lambda_kd=0, lambda_reg=0).validated()),
    bad("DesaConfig", "dp", lambda: cfg(dp="yes").validated(), kind="type"),
    bad("DesaConfig", "rounds", lambda: DesaConfig(rounds=-1), kind="range-at-construction"),
    bad("DesaConfig", "lr", lambda: DesaConfig(lr=NAN), kind="nan-at-construction"),
    bad("DesaConfig", "batch_size", lambda: DesaConfig(batch_size=None), kind="none"),
    bad("DesaConfig", "augment", lambda: DesaConfig(augment="blur"), kind="name"),
    bad("DesaConfig", "augment", lambda: DesaConfig(augment=3), kind="type"),
    bad("DesaConfig", "topology[0]", lambda: DesaConfig(topology=[["a"], ["b"]]), kind="str-entries"),
    bad("DesaConfig", "topology[0]", lambda: DesaConfig(topology=[1, 0]), kind="int-rows"),
    bad("DesaConfig", "kl_reduction", lambda: DesaConfig(kl_reduction="sum"), kind="name"),
    bad("DesaConfig", "seed", lambda: DesaConfig(seed=1.5), kind="type"),
    # ------------------------------------------------------------------------------------- make_topology
    bad("make_topology", "n_clients", lambda: make_topology("ring", 1), kind="one"),
    bad("make_topology", "topology", lambda: make_topology("star", 4), kind="name"),
    bad("make_topology", "not connected", lambda: make_topology([[1], [0], [3], [2]], 4), kind="disconnected"),
    bad("make_topology", "not symmetric", lambda: make_topology([[1], [], [1]], 3), kind="asymmetric"),
    bad("make_topology", "topology[0]", lambda: make_topology([[0, 1], [0]], 2), kind="self-loop"),
    bad("make_topology", "degree", lambda: make_topology("random_regular", 5, degree=3), kind="odd"),
    bad("make_topology", "degree", lambda: make_topology("mesh", 3, degree=-1), kind="range-unused"),
    bad("make_topology", "topology[0]", lambda: make_topology([[1.5], [0]], 2), kind="float-entry"),
    bad("make_topology", "topology[0]", lambda: make_topology([["1"], ["0"]], 2), kind="str-entry"),
    bad("make_topology", "topology[0]", lambda: make_topology([[5], [0]], 2), kind="out-of-range"),
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
    bad("run_desa", "models[0]", lambda: run_desa(MODELS, [(X8, Y)] * 2, CFG), M0, M1, kind="image-size"),
    bad("run_desa", "num_classes", lambda: run_desa([M0_3, M1], DATA, CFG), M0_3, M1, kind="model-classes"),
    # ----------------------------------------------------------------------------------- fashion_domains
    bad("fashion_domains", "n_clients", lambda: fashion_domains(1), kind="one-client"),
    bad("fashion_domains", "n_clients", lambda: fashion_domains("5"), kind="type"),
    bad("fashion_domains", "n_train", lambda: fashion_domains(3, n_train=5), kind="range"),
    bad("fashion_domains", "n_test", lambda: fashion_domains(3, n_test=NAN), kind="nan"),
    bad("fashion_domains", "seed", lambda: fashion_domains(3, seed=-1), kind="range"),
    bad("fashion_domains", "root", lambda: fashion_domains(3, root=3), kind="type"),
    # ----------------------------------------------------------------------------------- accuracy_matrix
    bad("accuracy_matrix", "models", lambda: accuracy_matrix([], DATA), kind="empty"),
    bad("accuracy_matrix", "test_sets[0]", lambda: accuracy_matrix(MODELS, [X]), kind="pair"),
    bad("accuracy_matrix", "test_sets[0]", lambda: accuracy_matrix(MODELS, [(X, Y[:3])]), kind="length"),
    bad("accuracy_matrix", "batch_size", lambda: accuracy_matrix(MODELS, DATA, batch_size=0), kind="range"),
    bad("accuracy_matrix", "models[0]", lambda: accuracy_matrix(["m"], DATA), kind="type"),
    # issue 47: wrongly sized images raised raw and left models[0] in eval mode
    bad("accuracy_matrix", "test_sets[0] images", lambda: accuracy_matrix(MODELS, [(X8, Y)]), M0, M1, kind="size"),
    bad("accuracy_matrix", "test_sets[0] images", lambda: accuracy_matrix(MODELS, [(X[:, :1], Y)]), M0, kind="chan"),
    bad("accuracy_matrix", "test_sets[0] labels", lambda: accuracy_matrix(MODELS, [(X, Y - 1)]), M0, kind="negative"),
    bad("accuracy_matrix", "test_sets[0] labels", lambda: accuracy_matrix(MODELS, [(X, Y + 4)]), M0, kind="classes"),
    bad("accuracy_matrix", "models[0]", lambda: accuracy_matrix([LIN], DATA), LIN, kind="forward-fails"),
    bad("accuracy_matrix", "test_sets[0] images", lambda: accuracy_matrix(MODELS, [(X * NAN, Y)]), M0, kind="nan"),
    # ------------------------------------------------------------------------------------ domain_summary
    bad("domain_summary", "acc", lambda: domain_summary(np.zeros((2, 3))), kind="square"),
    bad("domain_summary", "acc", lambda: domain_summary(np.zeros((1, 1))), kind="one"),
    bad("domain_summary", "acc", lambda: domain_summary(np.full((2, 2), NAN)), kind="nan"),
    bad("domain_summary", "acc", lambda: domain_summary(np.zeros(3)), kind="ndim"),
    bad("domain_summary", "acc", lambda: domain_summary([["a", "b"], ["c", "d"]]), ACC, kind="strings"),
    bad("domain_summary", "acc", lambda: domain_summary(ACC + 1), kind="above-one"),
    # ------------------------------------------------------------------------------------ local_training
    bad("local_training", "models", lambda: local_training([M0], DATA[:1], CFG), M0, kind="one-client"),
    bad("local_training", "config", lambda: local_training(MODELS, DATA, "cfg"), kind="type"),
    bad("local_training", "labels", lambda: local_training(MODELS, [(X, Y), (X, Y + 4)], CFG), M0, kind="range"),
    bad("local_training", "images", lambda: local_training(MODELS, [(X, Y), (X[:, :, :8], Y)], CFG), kind="shape"),
    bad("local_training", "models[1]", lambda: local_training([M0, NoEmbed()], DATA, CFG), M0, kind="no-embed"),
    bad("local_training", "models[0]", lambda: local_training(MODELS, [(X8, Y)] * 2, CFG), M0, M1, kind="image-size"),
    # ---------------------------------------------------------------------------- anchors_only_training
    bad("anchors_only_training", "anchors", lambda: anchors_only_training(MODELS, X, CFG), kind="type"),
    bad("anchors_only_training", "config", lambda: anchors_only_training(MODELS, A, 3), kind="type"),
    bad("anchors_only_training", "models", lambda: anchors_only_training([M0], A, CFG), M0, kind="one"),
    bad("anchors_only_training", "models[1]", lambda: anchors_only_training([M0, NoEmbed()], A, CFG), kind="embed"),
    bad("anchors_only_training", "lr", lambda: anchors_only_training(MODELS, A, cfg(lr=NAN)), M0, kind="nan"),
    bad("anchors_only_training", "anchors", lambda: anchors_only_training(MODELS, A1, CFG), M0, M1, kind="channels"),
    # ------------------------------------------------------------------------------------- gossip_fedavg
    bad("gossip_fedavg", "model", lambda: gossip_fedavg("m", DATA, CFG), kind="type"),
    bad("gossip_fedavg", "backend", lambda: gossip_fedavg(M0, DATA, CFG, backend="mpi"), M0, kind="name"),
    bad("gossip_fedavg", "models", lambda: gossip_fedavg(M0, DATA[:1], CFG), M0, kind="one-client"),
    bad("gossip_fedavg", "timeout", lambda: gossip_fedavg(M0, DATA, CFG, timeout=0.0), kind="range"),
    bad("gossip_fedavg", "topology", lambda: gossip_fedavg(M0, DATA, cfg(topology="star")), M0, kind="name"),
    bad("gossip_fedavg", "model", lambda: gossip_fedavg(M0, [(X8, Y)] * 2, CFG), M0, kind="image-size"),
    bad("gossip_fedavg", "model", lambda: gossip_fedavg(LIN, DATA, CFG), LIN, kind="forward-fails"),
    # ---------------------------------------------------------------------------------------- AnchorSet
    bad("AnchorSet", "images", lambda: AnchorSet(None, LAB, 2, (0, 1, 2, 3)), kind="none"),
    bad("AnchorSet", "labels", lambda: AnchorSet(A.images, LAB[:3], 2, (0, 1, 2, 3)), kind="length"),
    bad("AnchorSet", "labels", lambda: AnchorSet(A.images, LAB.float(), 2, (0, 1, 2, 3)), kind="dtype"),
    bad("AnchorSet", "ipc", lambda: AnchorSet(A.images, LAB, 0, (0, 1, 2, 3)), kind="range"),
    bad("AnchorSet", "classes_present", lambda: AnchorSet(A.images, LAB, 2, 4), kind="type"),
    bad("AnchorSet", "classes_present", lambda: AnchorSet(A.images, LAB, 2, (-1,)), kind="range"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    exempt = {
        "DesaResult": "plain record of a run's outcome",
        "ClientFailed": "exception type",
    }
    assert coverage_gaps(desa, CASES, exempt=exempt) == {}


class _FailsOnSecondBatch(torch.nn.Module):
    """Takes the images, then fails mid-evaluation (a model's own bug, not a bad argument)."""

    def __init__(self):
        super().__init__()
        self.inner = ConvNet(3, 4, 4, im_size=16, seed=0)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        if self.calls > 2:  # the shape check's one-image probe, then one batch
            raise RuntimeError("boom")
        return self.inner(x)


def test_accuracy_matrix_restores_every_submodules_mode_even_when_a_model_fails():
    model = _FailsOnSecondBatch().train()
    model.inner.features.eval()  # a frozen part stays frozen: modes are restored per submodule
    modes = [m.training for m in model.modules()]
    with pytest.raises(RuntimeError, match="boom"):
        accuracy_matrix([model], [(X, Y)], batch_size=4)
    assert [m.training for m in model.modules()] == modes
    m0 = ConvNet(3, 4, 4, im_size=16, seed=0).train()
    m0.classifier.eval()
    accuracy_matrix([m0], DATA)
    assert m0.training and not m0.classifier.training and m0.features.training


def test_desa_config_is_checked_and_normalised_when_made():
    c = DesaConfig(rounds=np.int64(3), topology=[[1], [0]], lr=1)
    assert type(c.rounds) is int and type(c.lr) is float and c.topology == ((1,), (0,))
    assert c.validated() is c
