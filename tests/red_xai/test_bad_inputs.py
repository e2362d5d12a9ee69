"""Bad input: every public callable refuses it with a one-line InputError naming the argument, and leaves the
objects passed in as they were."""

import pytest
import torch

import icml24.red_xai as rx
from icml24.testing import assert_refuses, bad, coverage_gaps

GEN = torch.Generator().manual_seed(0)
X = torch.rand(8, 1, 4, 4, generator=GEN)
Y = torch.arange(8) % 3
XNAN = X.clone()
XNAN[0, 0, 0, 0] = float("nan")
MASK = torch.zeros(1, 4, 4, dtype=torch.bool)
MASK[:, 0, 0] = True
NET = rx.SmallNet(16, 3, 8, seed=0).eval()
TRAINING = rx.SmallNet(16, 3, 8, seed=1)  # left in training mode
CAV = rx.ConceptVector("net.1", torch.ones(8) / 8**0.5, 1.0)
U3 = torch.ones(3) / 3**0.5
TOP = rx.ConceptVector("net.4", U3, 1.0)  # at the logits: no layer after it to fine-tune
EDITED = rx.ConceptVector("net.1", torch.ones(8) / 8**0.5, 1.0)
EDITED.vector[0] = float("nan")  # a valid CAV whose tensor was edited in place after construction
NANV, ZERO = torch.full((8,), float("nan")), torch.zeros(8)
X5 = torch.rand(8, 1, 5, 5, generator=GEN)  # images of another size than NET takes
MASK5 = torch.ones(1, 5, 5, dtype=torch.bool)
FROZEN = rx.SmallNet(16, 3, 8, seed=0).eval().requires_grad_(False)
BN1 = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16, 8), torch.nn.BatchNorm1d(8), torch.nn.Linear(8, 3))
H = torch.rand(10, 1, 4, 4, generator=GEN)
XQ = torch.rand(30, 1, 4, 4, generator=GEN)
YQ = torch.arange(30) % 3


def q(model=NET, data=None, out="/tmp/red_xai_never", **kw):
    kw = {"target": 0, "mask": MASK, **kw}
    return rx.question(model, (XQ, YQ) if data is None else data, out, **kw)


CASES = [
    bad("SmallNet", "in_features", lambda: rx.SmallNet(0, 3), kind="range"),
    bad("SmallNet", "classes", lambda: rx.SmallNet(16, 1), kind="one-class"),
    bad("SmallNet", "hidden", lambda: rx.SmallNet(16, 3, hidden=2.5), kind="type"),
    bad("SmallNet", "seed", lambda: rx.SmallNet(16, 3, seed=-1), kind="range"),
    bad("SmallNet", "in_features", lambda: rx.SmallNet(None, 3), kind="none"),
    bad("attribute", "model", lambda: rx.attribute(TRAINING, X, 0), TRAINING, X, kind="training-mode"),
    bad("attribute", "x", lambda: rx.attribute(NET, XNAN, 0), NET, kind="nan"),
    bad("attribute", "x", lambda: rx.attribute(NET, X[0], 0), NET, kind="shape"),
    bad("attribute", "method", lambda: rx.attribute(NET, X, 0, "shap"), NET, X, kind="name"),
    bad("attribute", "target", lambda: rx.attribute(NET, X, 3), NET, X, kind="range"),
    bad("attribute", "x", lambda: rx.attribute(NET, X[:0], 0), NET, kind="empty"),
    bad("attribute", "model", lambda: rx.attribute(None, X, 0), X, kind="none"),
    bad("attribute", "x", lambda: rx.attribute(NET, X.numpy(), 0), NET, kind="type"),
    bad("spray", "heatmaps", lambda: rx.spray(H[:3]), H, kind="too-few"),
    bad("spray", "heatmaps", lambda: rx.spray(H.flatten(1)), H, kind="shape"),
    bad("spray", "heatmaps", lambda: rx.spray(torch.full((6, 4, 4), float("inf"))), kind="inf"),
    bad("spray", "max_clusters", lambda: rx.spray(H, max_clusters=1), H, kind="range"),
    bad("spray", "neighbors", lambda: rx.spray(H, neighbors=0), H, kind="range"),
    bad("spray", "heatmaps", lambda: rx.spray(None), kind="none"),
    bad("concept_vector", "layer", lambda: rx.concept_vector(NET, "net.9", X, X), NET, X, kind="layer-name"),
    bad("concept_vector", "model", lambda: rx.concept_vector(TRAINING, "net.1", X, X), TRAINING, kind="training"),
    bad("concept_vector", "concept_x", lambda: rx.concept_vector(NET, "net.1", X[:1], X), NET, kind="one-image"),
    bad("concept_vector", "random_x", lambda: rx.concept_vector(NET, "net.1", X, XNAN), NET, kind="nan"),
    bad("concept_vector", "random_x", lambda: rx.concept_vector(NET, "net.1", X, torch.rand(4, 1, 5, 5)), kind="shape"),
    bad("concept_vector", "layer", lambda: rx.concept_vector(NET, 1, X, X), NET, kind="type"),
    bad("tcav", "layer", lambda: rx.tcav(NET, "fc", X, 0, X, X), NET, X, kind="layer-name"),
    bad("tcav", "target", lambda: rx.tcav(NET, "net.1", X, 5, X, X), NET, kind="range"),
    bad("tcav", "random_x", lambda: rx.tcav(NET, "net.1", X, 0, X, X[:3]), NET, kind="too-few"),
    bad("tcav", "runs", lambda: rx.tcav(NET, "net.1", X, 0, X, X, runs=1), NET, kind="range"),
    bad("tcav", "x", lambda: rx.tcav(NET, "net.1", XNAN, 0, X, X), NET, kind="nan"),
    bad("tcav", "model", lambda: rx.tcav(TRAINING, "net.1", X, 0, X, X), TRAINING, kind="training"),
    bad("tcav_score", "cav", lambda: rx.tcav_score(NET, X, 0, torch.ones(8)), NET, kind="type"),
    bad("tcav_score", "target", lambda: rx.tcav_score(NET, X, -1, CAV), NET, kind="range"),
    bad("tcav_score", "x", lambda: rx.tcav_score(NET, X[:, 0], 0, CAV), NET, kind="shape"),
    bad("tcav_score", "model", lambda: rx.tcav_score(TRAINING, X, 0, CAV), TRAINING, kind="training"),
    bad(
        "tcav_score", "layer", lambda: rx.tcav_score(NET, X, 0, rx.ConceptVector("nope", CAV.vector, 1.0)), kind="name"
    ),
    bad(
        "tcav_score",
        "cav",
        lambda: rx.tcav_score(NET, X, 0, rx.ConceptVector("net.3", U3, 1.0)),
        kind="size",
    ),
    bad("p_clarc", "cav", lambda: rx.p_clarc(NET, "net.1", X), NET, kind="type"),
    bad("p_clarc", "reference_x", lambda: rx.p_clarc(NET, CAV, XNAN), NET, kind="nan"),
    bad("p_clarc", "model", lambda: rx.p_clarc(TRAINING, CAV, X), TRAINING, kind="training"),
    bad("p_clarc", "layer", lambda: rx.p_clarc(NET, rx.ConceptVector("x", CAV.vector, 1.0), X), NET, kind="name"),
    bad("p_clarc", "reference_x", lambda: rx.p_clarc(NET, CAV, X[:0]), NET, kind="empty"),
    bad("p_clarc", "cav", lambda: rx.p_clarc(NET, rx.ConceptVector("net.3", U3, 1.0), X), kind="size"),
    bad("fit", "y", lambda: rx.fit(NET, X, Y[:5]), NET, X, kind="size"),
    bad("fit", "y", lambda: rx.fit(NET, X, Y.float()), NET, X, kind="dtype"),
    bad("fit", "lr", lambda: rx.fit(NET, X, Y, lr=0.0), NET, kind="range"),
    bad("fit", "y", lambda: rx.fit(NET, X, Y + 3), NET, kind="label-range"),
    bad("fit", "model", lambda: rx.fit("net", X, Y), X, kind="type"),
    bad("fit", "x", lambda: rx.fit(NET, XNAN, Y), NET, kind="nan"),
    bad("rrr", "mask", lambda: rx.rrr(NET, X, Y, torch.ones(1, 5, 5, dtype=torch.bool)), NET, kind="shape"),
    bad("rrr", "mask", lambda: rx.rrr(NET, X, Y, MASK.float()), NET, kind="dtype"),
    bad("rrr", "mask", lambda: rx.rrr(NET, X, Y, torch.zeros_like(MASK)), NET, kind="empty"),
    bad("rrr", "lam", lambda: rx.rrr(NET, X, Y, MASK, lam=-1.0), NET, kind="range"),
    bad("rrr", "lam", lambda: rx.rrr(NET, X, Y, MASK, lam=float("nan")), NET, kind="nan"),
    bad("rrr", "mask", lambda: rx.rrr(NET, X, Y, None), NET, kind="none"),
    bad("rr_clarc", "cav", lambda: rx.rr_clarc(NET, X, Y, "net.1"), NET, X, kind="type"),
    bad("rr_clarc", "layer", lambda: rx.rr_clarc(NET, X, Y, rx.ConceptVector("fc", CAV.vector, 1.0)), NET, kind="name"),
    bad("rr_clarc", "cav", lambda: rx.rr_clarc(NET, X, Y, rx.ConceptVector("net.3", U3, 1.0)), kind="size"),
    bad("rr_clarc", "criterion", lambda: rx.rr_clarc(NET, X, Y, CAV, criterion="logits"), NET, kind="name"),
    bad("rr_clarc", "lam", lambda: rx.rr_clarc(NET, X, Y, CAV, lam=-1.0), NET, kind="range"),
    bad("rr_clarc", "y", lambda: rx.rr_clarc(NET, X, Y + 3, CAV), NET, kind="label-range"),
    bad("rr_clarc", "x", lambda: rx.rr_clarc(NET, XNAN, Y, CAV), NET, kind="nan"),
    bad("rr_clarc", "cav.layer", lambda: rx.rr_clarc(NET, X, Y, TOP), kind="top"),
    bad("a_clarc", "target", lambda: rx.a_clarc(NET, X, Y, MASK, 7), NET, kind="range"),
    bad("a_clarc", "mask", lambda: rx.a_clarc(NET, X, Y, MASK[0], 0), NET, kind="shape"),
    bad("a_clarc", "value", lambda: rx.a_clarc(NET, X, Y, MASK, 0, value=float("inf")), NET, kind="inf"),
    bad("a_clarc", "y", lambda: rx.a_clarc(NET, X, Y[:2], MASK, 0), NET, kind="size"),
    bad("a_clarc", "x", lambda: rx.a_clarc(NET, None, Y, MASK, 0), NET, kind="none"),
    bad("predict", "model", lambda: rx.predict(TRAINING, X), TRAINING, kind="training"),
    bad("predict", "x", lambda: rx.predict(NET, XNAN), NET, kind="nan"),
    bad("predict", "batch", lambda: rx.predict(NET, X, batch=0), NET, kind="range"),
    bad("predict", "x", lambda: rx.predict(NET, X[:0]), NET, kind="empty"),
    bad("predict", "x", lambda: rx.predict(NET, [1.0]), NET, kind="type"),
    bad("accuracy", "y", lambda: rx.accuracy(NET, X, Y[:3]), NET, kind="size"),
    bad("accuracy", "y", lambda: rx.accuracy(NET, X, Y.float()), NET, kind="dtype"),
    bad("accuracy", "x", lambda: rx.accuracy(NET, XNAN, Y), NET, kind="nan"),
    bad("accuracy", "model", lambda: rx.accuracy(TRAINING, X, Y), TRAINING, kind="training"),
    bad("accuracy", "y", lambda: rx.accuracy(NET, X, Y - 1), NET, kind="negative"),
    bad(
        "shortcut_reliance",
        "y",
        lambda: rx.shortcut_reliance(NET, X, torch.zeros(8, dtype=torch.long), 0),
        kind="one-class",
    ),
    bad("shortcut_reliance", "target", lambda: rx.shortcut_reliance(NET, X, Y, 9), NET, kind="range"),
    bad("shortcut_reliance", "x_patched", lambda: rx.shortcut_reliance(NET, XNAN, Y, 0), NET, kind="nan"),
    bad("shortcut_reliance", "model", lambda: rx.shortcut_reliance(TRAINING, X, Y, 0), TRAINING, kind="training"),
    bad("shortcut_reliance", "target", lambda: rx.shortcut_reliance(NET, X, Y, "0"), NET, kind="type"),
    bad("relevance_mass", "mask", lambda: rx.relevance_mass(H, torch.ones(1, 3, 3, dtype=torch.bool)), H, kind="shape"),
    bad("relevance_mass", "heatmaps", lambda: rx.relevance_mass(XNAN, MASK), kind="nan"),
    bad("relevance_mass", "mask", lambda: rx.relevance_mass(H, MASK.long()), H, kind="dtype"),
    bad("relevance_mass", "heatmaps", lambda: rx.relevance_mass(H[:0], MASK), kind="empty"),
    bad("relevance_mass", "mask", lambda: rx.relevance_mass(H, None), H, kind="none"),
    bad("accuracy_only", "threshold", lambda: rx.accuracy_only(NET, X, Y, threshold=1.5), NET, kind="range"),
    bad("accuracy_only", "model", lambda: rx.accuracy_only(TRAINING, X, Y), TRAINING, kind="training"),
    bad("accuracy_only", "y", lambda: rx.accuracy_only(NET, X, Y[:2]), NET, kind="size"),
    bad("accuracy_only", "x", lambda: rx.accuracy_only(NET, XNAN, Y), NET, kind="nan"),
    bad("accuracy_only", "threshold", lambda: rx.accuracy_only(NET, X, Y, threshold=None), NET, kind="none"),
    bad("random_mask", "mask", lambda: rx.random_mask(torch.ones(1, 2, 2, dtype=torch.bool)), kind="full"),
    bad("random_mask", "mask", lambda: rx.random_mask(torch.zeros(1, 2, 2, dtype=torch.bool)), kind="empty"),
    bad("random_mask", "mask", lambda: rx.random_mask(MASK[0]), kind="shape"),
    bad("random_mask", "mask", lambda: rx.random_mask(MASK.float()), kind="dtype"),
    bad("random_mask", "seed", lambda: rx.random_mask(MASK, seed=-3), kind="range"),
    bad("random_mask_rrr", "mask", lambda: rx.random_mask_rrr(NET, X, Y, MASK[0]), NET, kind="shape"),
    bad("random_mask_rrr", "lam", lambda: rx.random_mask_rrr(NET, X, Y, MASK, lam=-2.0), NET, kind="range"),
    bad("random_mask_rrr", "x", lambda: rx.random_mask_rrr(NET, XNAN, Y, MASK), NET, kind="nan"),
    bad("random_mask_rrr", "y", lambda: rx.random_mask_rrr(NET, X, Y[:1], MASK), NET, kind="size"),
    bad("random_mask_rrr", "model", lambda: rx.random_mask_rrr(None, X, Y, MASK), kind="none"),
    bad("whole_image_rrr", "x", lambda: rx.whole_image_rrr(NET, X[0], Y), NET, kind="shape"),
    bad("whole_image_rrr", "x", lambda: rx.whole_image_rrr(NET, XNAN, Y), NET, kind="nan"),
    bad("whole_image_rrr", "y", lambda: rx.whole_image_rrr(NET, X, Y[:3]), NET, kind="size"),
    bad("whole_image_rrr", "lam", lambda: rx.whole_image_rrr(NET, X, Y, lam=-1.0), NET, kind="range"),
    bad("whole_image_rrr", "model", lambda: rx.whole_image_rrr(3, X, Y), kind="type"),
    bad("clean_oracle", "y", lambda: rx.clean_oracle(NET, X, Y[:2]), NET, kind="size"),
    bad("clean_oracle", "epochs", lambda: rx.clean_oracle(NET, X, Y, epochs=-1), NET, kind="range"),
    bad("clean_oracle", "x_clean", lambda: rx.clean_oracle(NET, XNAN, Y), NET, kind="nan"),
    bad("clean_oracle", "seed", lambda: rx.clean_oracle(NET, X, Y, seed=1.5), NET, kind="type"),
    bad("clean_oracle", "model", lambda: rx.clean_oracle(None, X, Y), kind="none"),
    bad("randomization_check", "model", lambda: rx.randomization_check(TRAINING, X, 0), TRAINING, kind="training"),
    bad("randomization_check", "x", lambda: rx.randomization_check(NET, XNAN, 0), NET, kind="nan"),
    bad("randomization_check", "x", lambda: rx.randomization_check(NET, X[:0], 0), NET, kind="empty"),
    bad("randomization_check", "method", lambda: rx.randomization_check(NET, X, 0, "quantus"), NET, kind="name"),
    bad("randomization_check", "target", lambda: rx.randomization_check(NET, X, 3), NET, X, kind="range"),
    bad("randomization_check", "absolute", lambda: rx.randomization_check(NET, X, 0, absolute="yes"), NET, kind="type"),
    bad("randomization_check", "model", lambda: rx.randomization_check(None, X, 0), X, kind="none"),
    bad("pixel_flipping", "heatmaps", lambda: rx.pixel_flipping(NET, X, 0, X[:3]), NET, X, kind="shape"),
    bad("pixel_flipping", "model", lambda: rx.pixel_flipping(TRAINING, X, 0, X), TRAINING, X, kind="training"),
    bad("pixel_flipping", "fraction", lambda: rx.pixel_flipping(NET, X, 0, X, fraction=0.0), NET, kind="range"),
    bad("pixel_flipping", "steps", lambda: rx.pixel_flipping(NET, X, 0, X, steps=0), NET, X, kind="range"),
    bad("pixel_flipping", "heatmaps", lambda: rx.pixel_flipping(NET, X, 0, XNAN), NET, X, kind="nan"),
    bad("pixel_flipping", "target", lambda: rx.pixel_flipping(NET, X, 3, X), NET, X, kind="range"),
    bad("rashomon", "models", lambda: rx.rashomon([NET], X, Y, X, Y, 0, X), NET, X, kind="one-model"),
    bad("rashomon", "models", lambda: rx.rashomon(NET, X, Y, X, Y, 0, X), NET, X, kind="type"),
    bad("rashomon", "models[1]", lambda: rx.rashomon([NET, TRAINING], X, Y, X, Y, 0, X), TRAINING, kind="training"),
    bad("rashomon", "x_explain", lambda: rx.rashomon([NET, NET], X, Y, X, Y, 0, XNAN), NET, kind="nan"),
    bad("rashomon", "method", lambda: rx.rashomon([NET, NET], X, Y, X, Y, 0, X, "shap"), NET, kind="name"),
    bad("question", "model", lambda: q(TRAINING), TRAINING, XQ, kind="training"),
    bad("question", "data", lambda: q(data=XQ), NET, XQ, kind="type"),
    bad("question", "data[0]", lambda: q(data=(XNAN, Y)), NET, kind="nan"),
    bad("question", "data[1]", lambda: q(data=(XQ, YQ[:5])), NET, kind="size"),
    bad("question", "data[1]", lambda: q(data=(XQ, YQ * 0)), NET, kind="one-class"),
    bad("question", "mask", lambda: q(mask=torch.ones(1, 5, 5, dtype=torch.bool)), NET, kind="shape"),
    bad("question", "target", lambda: q(target=7), NET, XQ, kind="range"),
    bad("question", "layer", lambda: q(layer="net.9"), NET, XQ, kind="layer-name"),
    bad("question", "out", lambda: q(out=None), NET, XQ, kind="none"),
    bad("question", "data", lambda: q(data=(XQ[:8], YQ[:8])), NET, kind="too-few"),
    bad("question", "holdout", lambda: q(holdout=1.0), NET, XQ, kind="range"),
    bad("question", "method", lambda: q(method="shap"), NET, XQ, kind="name"),
    bad("question", "peers", lambda: q(peers=NET), NET, XQ, kind="type"),
    bad("question", "peers[0]", lambda: q(peers=[TRAINING]), NET, TRAINING, kind="training"),
    bad("question", "peers[1]", lambda: q(peers=[NET, rx.SmallNet(16, 4, 8).eval()]), NET, kind="classes"),
    bad("question", "peers", lambda: q(peers=[]), NET, XQ, kind="empty"),
    bad("attribute", "method", lambda: rx.attribute(NET, X, 0, "lrp_gamma"), NET, X, kind="rule"),
    bad("question", "artifact", lambda: q(artifact="border"), NET, XQ, kind="name"),
    bad("question", "held_out", lambda: q(held_out=XQ), NET, XQ, kind="type"),
    bad("question", "held_out[0]", lambda: q(held_out=(X[:, :, :3], Y)), NET, X, kind="shape"),
    bad("question", "held_out[0]", lambda: q(held_out=(XNAN, Y)), NET, XNAN, kind="nan"),
    bad("question", "held_out[1]", lambda: q(held_out=(X, Y[:5])), NET, X, kind="size"),
    bad("question", "held_out", lambda: q(held_out=(X[:1], Y[:1])), NET, X, kind="too-few"),
    bad("question", "held_out[1]", lambda: q(held_out=(X, Y + 3)), NET, X, kind="classes"),
    bad("artifact_flips", "model", lambda: rx.artifact_flips(TRAINING, X, MASK), TRAINING, X, kind="training"),
    bad("artifact_flips", "x", lambda: rx.artifact_flips(NET, XNAN, MASK), NET, kind="nan"),
    bad("artifact_flips", "x", lambda: rx.artifact_flips(NET, X[:1], MASK), NET, X, kind="too-few"),
    bad("artifact_flips", "mask", lambda: rx.artifact_flips(NET, X, MASK[:, :2]), NET, X, kind="shape"),
    bad("artifact_flips", "mask", lambda: rx.artifact_flips(NET, X, MASK & False), NET, X, kind="empty"),
    bad("artifact_flips", "seed", lambda: rx.artifact_flips(NET, X, MASK, seed=-1), NET, X, kind="range"),
    # issue 47: NaN, zero or unnormalised concept vectors (at construction, or edited in place after it)
    bad("ConceptVector", "vector", lambda: rx.ConceptVector("net.1", NANV, 1.0), kind="nan"),
    bad("ConceptVector", "vector", lambda: rx.ConceptVector("net.1", ZERO, 1.0), kind="zero"),
    bad("ConceptVector", "vector", lambda: rx.ConceptVector("net.1", torch.ones(8), 1.0), kind="unnormalised"),
    bad("ConceptVector", "vector", lambda: rx.ConceptVector("net.1", torch.ones(2, 4) / 8**0.5, 1.0), kind="shape"),
    bad("ConceptVector", "vector", lambda: rx.ConceptVector("net.1", [1.0, 0.0], 1.0), kind="type"),
    bad(
        "ConceptVector", "vector", lambda: rx.ConceptVector("net.1", torch.ones(1, dtype=torch.long), 1.0), kind="dtype"
    ),
    bad("ConceptVector", "vector", lambda: rx.ConceptVector("net.1", torch.ones(0), 1.0), kind="empty"),
    bad("ConceptVector", "layer", lambda: rx.ConceptVector(None, CAV.vector, 1.0), kind="none"),
    bad("ConceptVector", "layer", lambda: rx.ConceptVector("", CAV.vector, 1.0), kind="empty"),
    bad("ConceptVector", "accuracy", lambda: rx.ConceptVector("net.1", CAV.vector, 1.5), kind="range"),
    bad("tcav_score", "vector", lambda: rx.tcav_score(NET, X, 0, rx.ConceptVector("net.1", NANV, 1.0)), kind="nan"),
    bad("tcav_score", "vector", lambda: rx.tcav_score(NET, X, 0, rx.ConceptVector("net.1", ZERO, 1.0)), kind="zero"),
    bad("tcav_score", "cav.vector", lambda: rx.tcav_score(NET, X, 0, EDITED), NET, X, kind="nan-edited"),
    bad("p_clarc", "vector", lambda: rx.p_clarc(NET, rx.ConceptVector("net.1", NANV, 1.0), X), kind="nan"),
    bad("p_clarc", "vector", lambda: rx.p_clarc(NET, rx.ConceptVector("net.1", ZERO, 1.0), X), kind="zero"),
    bad("p_clarc", "cav.vector", lambda: rx.p_clarc(NET, EDITED, X), NET, X, kind="nan-edited"),
    bad("rr_clarc", "vector", lambda: rx.rr_clarc(NET, X, Y, rx.ConceptVector("net.1", NANV, 1.0)), kind="nan"),
    bad("rr_clarc", "vector", lambda: rx.rr_clarc(NET, X, Y, rx.ConceptVector("net.1", ZERO, 1.0)), kind="zero"),
    bad("rr_clarc", "cav.vector", lambda: rx.rr_clarc(NET, X, Y, EDITED), NET, X, kind="nan-edited"),
    # issue 47: images the model cannot take, labels beyond its outputs, frozen models, BatchNorm on one image
    bad("predict", "x", lambda: rx.predict(NET, X5), NET, X5, kind="image-size"),
    bad("accuracy", "y", lambda: rx.accuracy(NET, X, Y + 3), NET, kind="label-range"),
    bad("accuracy_only", "x", lambda: rx.accuracy_only(NET, X5, Y), NET, kind="image-size"),
    bad("attribute", "x", lambda: rx.attribute(NET, X5, 0), NET, X5, kind="image-size"),
    bad("concept_vector", "concept_x", lambda: rx.concept_vector(NET, "net.1", X5, X5), NET, kind="image-size"),
    bad("tcav", "concept_x", lambda: rx.tcav(NET, "net.1", X, 0, X5, X5), NET, kind="image-size"),
    bad("tcav_score", "x", lambda: rx.tcav_score(NET, X5, 0, CAV), NET, kind="image-size"),
    bad("p_clarc", "reference_x", lambda: rx.p_clarc(NET, CAV, X5), NET, kind="image-size"),
    bad("fit", "x", lambda: rx.fit(NET, X5, Y), NET, kind="image-size"),
    bad("fit", "model", lambda: rx.fit(FROZEN, X, Y), FROZEN, kind="frozen"),
    bad("fit", "batch", lambda: rx.fit(BN1, X, Y, batch=7), BN1, X, kind="batchnorm-one-image"),
    bad("rrr", "model", lambda: rx.rrr(FROZEN, X, Y, MASK), FROZEN, kind="frozen"),
    bad("rr_clarc", "x", lambda: rx.rr_clarc(NET, X5, Y, CAV), NET, kind="image-size"),
    bad("rr_clarc", "cav.layer", lambda: rx.rr_clarc(FROZEN, X, Y, CAV), FROZEN, kind="frozen"),
    bad("a_clarc", "x", lambda: rx.a_clarc(NET, X5, Y, MASK, 0), NET, kind="image-size"),
    bad("shortcut_reliance", "y", lambda: rx.shortcut_reliance(NET, X, Y + 3, 0), NET, kind="label-range"),
    bad("shortcut_reliance", "x_patched", lambda: rx.shortcut_reliance(NET, X5, Y, 0), NET, kind="image-size"),
    bad("artifact_flips", "x", lambda: rx.artifact_flips(NET, X5, MASK5), NET, kind="image-size"),
    bad("pixel_flipping", "x", lambda: rx.pixel_flipping(NET, X5, 0, X5), NET, kind="image-size"),
    bad("randomization_check", "x", lambda: rx.randomization_check(NET, X5, 0), NET, kind="image-size"),
    bad("rashomon", "y_patched", lambda: rx.rashomon([NET, NET], X, Y, X, Y[:3], 0, X), NET, kind="size"),
    bad("rashomon", "y_patched", lambda: rx.rashomon([NET, NET], X, Y, X, Y.float(), 0, X), NET, kind="dtype"),
    bad("rashomon", "y_patched", lambda: rx.rashomon([NET, NET], X, Y, X, Y * 0, 0, X), NET, kind="target-only"),
    bad("rashomon", "x_explain", lambda: rx.rashomon([NET, NET], X, Y, X, Y, 0, X5), NET, kind="image-size"),
    bad(
        "rashomon",
        "models[1]",
        lambda: rx.rashomon([NET, rx.SmallNet(16, 4, 8).eval()], X, Y, X, Y, 0, X),
        kind="classes",
    ),
    bad("whole_image_rrr", "model", lambda: rx.whole_image_rrr(FROZEN, X, Y), FROZEN, kind="frozen"),
    bad("clean_oracle", "x_clean", lambda: rx.clean_oracle(NET, X5, Y), NET, kind="image-size"),
    bad("random_mask_rrr", "model", lambda: rx.random_mask_rrr(FROZEN, X, Y, MASK), FROZEN, kind="frozen"),
    bad(
        "question",
        "data[0]",
        lambda: q(data=(torch.rand(30, 1, 5, 5), YQ), mask=MASK5),
        NET,
        kind="image-size",
    ),
    bad("question", "peers[0]", lambda: q(peers=[rx.SmallNet(25, 3, 8).eval()]), NET, XQ, kind="image-size"),
    bad("spray", "clusters", lambda: rx.spray(torch.ones(12, 4, 4), clusters=2), kind="identical-maps"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    exempt = {"SprayResult": "a plain record of results"}
    assert coverage_gaps(rx, CASES, exempt=exempt) == {}
