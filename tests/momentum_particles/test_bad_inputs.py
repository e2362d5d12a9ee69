"""Every public callable of icml24.momentum_particles refuses bad input with a one-line InputError naming the
argument, and leaves the objects passed in (models, data, particles, the methods themselves) unchanged."""

import pytest
import torch

import icml24.momentum_particles as mp
from icml24.momentum_particles import (
    ABP,
    MPD,
    PGD,
    PPCA,
    FunctionModel,
    GeneratorNet,
    ToyHierarchical,
    flow_step,
    momentum_from_target,
    noise_covariance,
    ppca_em,
    ppca_log_likelihood,
    ppca_mle,
    sample_posterior,
    toy_em,
    toy_log_likelihood,
)
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN, INF = float("nan"), float("inf")
F64 = {"dtype": torch.float64}

TOY = ToyHierarchical(0.0).train()
Y = torch.randn(6, 1, **F64)
Y_NAN = Y.clone()
Y_NAN[2, 0] = NAN
X0 = torch.randn(3, 6, 1, **F64)
X0_BAD = torch.randn(3, 5, 1, **F64)  # five data, not six
PP = PPCA(4, 2, seed=0)
YP = torch.randn(10, 4, **F64)
YP_WIDE = torch.randn(10, 5, **F64)  # five columns for a four-dimensional PPCA
GEN = GeneratorNet(9, 2, 4, seed=0)
SHAPE_MODEL = FunctionModel(lambda th, x, y: (x * th).sum(dim=(1, 2)), torch.zeros(1, **F64), 1)  # (P,), not (P, n)
NAN_MODEL = FunctionModel(lambda th, x, y: (x * th).sum(-1) * NAN, torch.zeros(1, **F64), 1)
# latents of size 3 for a model that multiplies them by a 2-vector: torch raises inside forward
MISMATCH = FunctionModel(lambda th, x, y: (x @ th.reshape(2, 1)).squeeze(-1), torch.zeros(2, **F64), 3)
NO_LATENT = torch.nn.Linear(2, 2)  # no latent_dim and no x0; also not a log density


def mpd(**kw):
    base = dict(eta_theta=10.0, eta_x=10.0, n_particles=3)
    return MPD(1e-3, 1e-2, **{**base, **kw})


ALG = mpd()
PGD_ALG = PGD(1e-3, 1e-2, n_particles=3)
ABP_ALG = ABP(1e-3, 1e-2, chain_length=2, n_particles=3)
Z = torch.zeros(3, **F64)

CASES = [
    # ----------------------------------------------------------------------------------- MPD
    bad("MPD", "h_theta", lambda: MPD(0.0, 1e-2, eta_theta=1, eta_x=1), kind="range"),
    bad("MPD", "h_x", lambda: MPD(1e-3, -1.0, eta_theta=1, eta_x=1), kind="range"),
    bad("MPD", "gamma_theta", lambda: mpd(gamma_theta=0.0), kind="range"),
    bad("MPD", "gamma_x", lambda: mpd(gamma_x=NAN), kind="nan"),
    bad("MPD", "n_particles", lambda: mpd(n_particles=0), kind="range"),
    bad("MPD", "n_particles", lambda: mpd(n_particles=2.5), kind="type"),
    bad("MPD", "preconditioner", lambda: mpd(preconditioner="adam"), kind="name"),
    bad("MPD", "eta_theta", lambda: mpd(momentum_theta=0.9), kind="both"),
    bad("MPD", "momentum_x", lambda: MPD(1e-3, 1e-2, eta_theta=1.0, momentum_x=1.0), kind="range"),
    bad("MPD", "restart", lambda: mpd(restart="yes"), kind="type"),
    bad("MPD", "eta_x", lambda: mpd(eta_x=None, momentum_x=None), kind="none"),
    bad("MPD.fit", "model", lambda: ALG.fit("a model", Y, 3), Y, ALG, kind="type"),
    bad("MPD.fit", "model", lambda: ALG.fit(SHAPE_MODEL, Y, 3), SHAPE_MODEL, Y, ALG, kind="shape"),
    bad("MPD.fit", "model", lambda: ALG.fit(NAN_MODEL, Y, 3), NAN_MODEL, Y, ALG, kind="nan"),
    bad("MPD.fit", "model", lambda: ALG.fit(MISMATCH, Y, 3), MISMATCH, Y, ALG, kind="latent-size"),
    bad("MPD.fit", "model", lambda: ALG.fit(NO_LATENT, Y, 3), NO_LATENT, Y, kind="no-latent"),
    bad("MPD.fit", "y", lambda: ALG.fit(TOY, Y_NAN, 3), TOY, Y_NAN, ALG, kind="nan"),
    bad("MPD.fit", "y", lambda: ALG.fit(TOY, torch.zeros(0, 1, **F64), 3), TOY, ALG, kind="empty"),
    bad("MPD.fit", "y", lambda: ALG.fit(TOY, None, 3), TOY, kind="none"),
    bad("MPD.fit", "y", lambda: ALG.fit(PP, YP_WIDE, 3), PP, YP_WIDE, ALG, kind="shape"),
    bad("MPD.fit", "steps", lambda: ALG.fit(TOY, Y, -1), TOY, Y, kind="range"),
    bad("MPD.fit", "x0", lambda: ALG.fit(TOY, Y, 3, x0=X0_BAD), TOY, Y, X0_BAD, kind="shape"),
    bad("MPD.fit", "seed", lambda: ALG.fit(TOY, Y, 3, seed=-1), TOY, kind="range"),
    bad("MPD.fit", "every", lambda: ALG.fit(TOY, Y, 3, every=0), TOY, kind="range"),
    bad("MPD.fit", "callback", lambda: ALG.fit(TOY, Y, 3, callback=3), TOY, kind="type"),
    # ----------------------------------------------------------------------------------- PGD
    bad("PGD", "h_theta", lambda: PGD(-1e-3, 1e-2), kind="range"),
    bad("PGD", "h_x", lambda: PGD(1e-3, INF), kind="inf"),
    bad("PGD", "n_particles", lambda: PGD(1e-3, 1e-2, n_particles=-2), kind="range"),
    bad("PGD", "preconditioner", lambda: PGD(1e-3, 1e-2, preconditioner=3), kind="type"),
    bad("PGD.fit", "model", lambda: PGD_ALG.fit(NAN_MODEL, Y, 3), NAN_MODEL, Y, PGD_ALG, kind="nan"),
    bad("PGD.fit", "x0", lambda: PGD_ALG.fit(TOY, Y, 3, x0=X0_BAD), TOY, X0_BAD, PGD_ALG, kind="shape"),
    bad("PGD.fit", "y", lambda: PGD_ALG.fit(TOY, [[1.0]], 3), TOY, kind="type"),
    bad("PGD.fit", "steps", lambda: PGD_ALG.fit(TOY, Y, 2.5), TOY, kind="type"),
    # ----------------------------------------------------------------------------------- ABP
    bad("ABP", "h_theta", lambda: ABP(0, 1e-2), kind="range"),
    bad("ABP", "h_x", lambda: ABP(1e-3, NAN), kind="nan"),
    bad("ABP", "chain_length", lambda: ABP(1e-3, 1e-2, chain_length=0), kind="range"),
    bad("ABP", "n_particles", lambda: ABP(1e-3, 1e-2, n_particles=None), kind="none"),
    bad("ABP.fit", "model", lambda: ABP_ALG.fit(SHAPE_MODEL, Y, 2), SHAPE_MODEL, ABP_ALG, kind="shape"),
    bad("ABP.fit", "x0", lambda: ABP_ALG.fit(TOY, Y, 2, x0=X0_BAD), TOY, X0_BAD, kind="shape"),
    bad("ABP.fit", "y", lambda: ABP_ALG.fit(TOY, Y_NAN, 2), TOY, Y_NAN, kind="nan"),
    # ----------------------------------------------------------------------------- FunctionModel
    bad("FunctionModel", "fn", lambda: FunctionModel("f", torch.zeros(1), 1), kind="type"),
    bad("FunctionModel", "theta", lambda: FunctionModel(lambda t, x, y: x, torch.tensor([NAN]), 1), kind="nan"),
    bad("FunctionModel", "theta", lambda: FunctionModel(lambda t, x, y: x, [0.0], 1), kind="type"),
    bad("FunctionModel", "theta", lambda: FunctionModel(lambda t, x, y: x, torch.zeros(0), 1), kind="empty"),
    bad("FunctionModel", "latent_dim", lambda: FunctionModel(lambda t, x, y: x, torch.zeros(1), 0), kind="range"),
    bad("FunctionModel", "latent_dim", lambda: FunctionModel(lambda t, x, y: x, torch.zeros(1), None), kind="none"),
    # ----------------------------------------------------------------------------- maths
    bad("noise_covariance", "gamma", lambda: noise_covariance(0.0, 1.0, 0.1), kind="range"),
    bad("noise_covariance", "eta", lambda: noise_covariance(1.0, -1.0, 0.1), kind="range"),
    bad("noise_covariance", "h", lambda: noise_covariance(1.0, 1.0, NAN), kind="nan"),
    bad("noise_covariance", "h", lambda: noise_covariance(1.0, 1.0, "0.1"), kind="type"),
    bad("noise_covariance", "gamma", lambda: noise_covariance(None, 1.0, 0.1), kind="none"),
    bad("momentum_from_target", "momentum", lambda: momentum_from_target(1.0, 1.0, 0.1), kind="range"),
    bad("momentum_from_target", "momentum", lambda: momentum_from_target(-0.1, 1.0, 0.1), kind="range"),
    bad("momentum_from_target", "gamma", lambda: momentum_from_target(0.9, 0.0, 0.1), kind="range"),
    bad("momentum_from_target", "h", lambda: momentum_from_target(0.9, 1.0, INF), kind="inf"),
    bad("momentum_from_target", "momentum", lambda: momentum_from_target(None, 1.0, 0.1), kind="none"),
    bad("flow_step", "z", lambda: flow_step([0.0], Z, Z, gamma=1, eta=1, h=0.1), kind="type"),
    bad("flow_step", "m", lambda: flow_step(Z, torch.zeros(2, **F64), Z, gamma=1, eta=1, h=0.1), Z, kind="shape"),
    bad("flow_step", "force", lambda: flow_step(Z, Z, torch.full((3,), NAN), gamma=1, eta=1, h=0.1), Z, kind="nan"),
    bad("flow_step", "gamma", lambda: flow_step(Z, Z, Z, gamma=0, eta=1, h=0.1), Z, kind="range"),
    bad("flow_step", "h", lambda: flow_step(Z, Z, Z, gamma=1, eta=1, h=-0.1), Z, kind="range"),
    bad("flow_step", "eta", lambda: flow_step(Z, Z, Z, gamma=1, eta=NAN, h=0.1), Z, kind="nan"),
    # ----------------------------------------------------------------------------- sample_posterior
    bad("sample_posterior", "model", lambda: sample_posterior(None, Y, steps=2, h=0.1), Y, kind="none"),
    bad("sample_posterior", "y", lambda: sample_posterior(TOY, Y_NAN, steps=2, h=0.1), TOY, Y_NAN, kind="nan"),
    bad("sample_posterior", "steps", lambda: sample_posterior(TOY, Y, steps=-2, h=0.1), TOY, kind="range"),
    bad("sample_posterior", "h", lambda: sample_posterior(TOY, Y, steps=2, h=0.0), TOY, kind="range"),
    bad(
        "sample_posterior", "n_particles", lambda: sample_posterior(TOY, Y, steps=2, h=0.1, n_particles=0), kind="range"
    ),
    bad("sample_posterior", "x0", lambda: sample_posterior(TOY, Y, steps=2, h=0.1, x0=X0), TOY, X0, kind="shape"),
    bad("sample_posterior", "y", lambda: sample_posterior(GEN, torch.rand(4, 8), steps=2, h=0.1), GEN, kind="shape"),
    # ----------------------------------------------------------------------------- EM and closed forms
    bad("toy_em", "y", lambda: toy_em(Y_NAN, 0.0, 3), Y_NAN, kind="nan"),
    bad("toy_em", "y", lambda: toy_em(torch.zeros(0), 0.0, 3), kind="empty"),
    bad("toy_em", "y", lambda: toy_em(torch.zeros(2, 2, 2), 0.0, 3), kind="shape"),
    bad("toy_em", "theta0", lambda: toy_em(Y, NAN, 3), Y, kind="nan"),
    bad("toy_em", "steps", lambda: toy_em(Y, 0.0, -3), Y, kind="range"),
    bad("toy_em", "y", lambda: toy_em(None, 0.0, 3), kind="none"),
    bad("ppca_em", "y", lambda: ppca_em(torch.zeros(5, **F64), 1, 3), kind="shape"),
    bad("ppca_em", "latent_dim", lambda: ppca_em(YP, 0, 3), YP, kind="range"),
    bad("ppca_em", "latent_dim", lambda: ppca_em(YP, 4, 3), YP, kind="range"),
    bad("ppca_em", "steps", lambda: ppca_em(YP, 2, -1), YP, kind="range"),
    bad("ppca_em", "seed", lambda: ppca_em(YP, 2, 3, seed=-1), YP, kind="range"),
    bad("ppca_em", "y", lambda: ppca_em(YP * NAN, 2, 3), kind="nan"),
    bad("ppca_mle", "y", lambda: ppca_mle(torch.zeros(5), 1), kind="shape"),
    bad("ppca_mle", "y", lambda: ppca_mle(torch.zeros(0, 4), 1), kind="empty"),
    bad("ppca_mle", "y", lambda: ppca_mle(YP * INF, 1), kind="inf"),
    bad("ppca_mle", "latent_dim", lambda: ppca_mle(YP, 4), YP, kind="range"),
    bad("ppca_mle", "latent_dim", lambda: ppca_mle(YP, "2"), YP, kind="type"),
    bad("toy_log_likelihood", "y", lambda: toy_log_likelihood(Y_NAN, 0.0), Y_NAN, kind="nan"),
    bad("toy_log_likelihood", "y", lambda: toy_log_likelihood(torch.zeros(0), 0.0), kind="empty"),
    bad("toy_log_likelihood", "y", lambda: toy_log_likelihood(torch.zeros(2, 2, 2), 0.0), kind="shape"),
    bad("toy_log_likelihood", "theta", lambda: toy_log_likelihood(Y, INF), Y, kind="inf"),
    bad("toy_log_likelihood", "theta", lambda: toy_log_likelihood(Y, None), Y, kind="none"),
    bad(
        "ppca_log_likelihood",
        "W",
        lambda: ppca_log_likelihood(YP, torch.zeros(5, 2), torch.zeros(4), 1.0),
        kind="shape",
    ),
    bad(
        "ppca_log_likelihood",
        "mu",
        lambda: ppca_log_likelihood(YP, torch.zeros(4, 2), torch.zeros(3), 1.0),
        kind="shape",
    ),
    bad(
        "ppca_log_likelihood",
        "sigma2",
        lambda: ppca_log_likelihood(YP, torch.zeros(4, 2), torch.zeros(4), 0.0),
        kind="range",
    ),
    bad(
        "ppca_log_likelihood",
        "y",
        lambda: ppca_log_likelihood(YP * NAN, torch.zeros(4, 2), torch.zeros(4), 1.0),
        kind="nan",
    ),
    bad(
        "ppca_log_likelihood",
        "W",
        lambda: ppca_log_likelihood(YP, torch.full((4, 2), NAN), torch.zeros(4), 1.0),
        kind="nan",
    ),
    # ----------------------------------------------------------------------------- models
    bad("ToyHierarchical", "theta", lambda: ToyHierarchical(NAN), kind="nan"),
    bad("ToyHierarchical", "theta", lambda: ToyHierarchical("0"), kind="type"),
    bad("ToyHierarchical", "replicates", lambda: ToyHierarchical(0.0, 0), kind="range"),
    bad("ToyHierarchical", "replicates", lambda: ToyHierarchical(0.0, 1.5), kind="type"),
    bad("ToyHierarchical", "dtype", lambda: ToyHierarchical(0.0, 1, torch.int64), kind="dtype"),
    bad("ToyHierarchical.forward", "x", lambda: TOY(torch.zeros(2, 6, 2, **F64), Y), TOY, Y, kind="shape"),
    bad("ToyHierarchical.forward", "y", lambda: TOY(X0, torch.zeros(5, 1, **F64)), TOY, X0, kind="shape"),
    bad("PPCA", "data_dim", lambda: PPCA(1, 1), kind="range"),
    bad("PPCA", "latent_dim", lambda: PPCA(4, 0), kind="range"),
    bad("PPCA", "latent_dim", lambda: PPCA(4, 4), kind="range"),
    bad("PPCA", "seed", lambda: PPCA(4, 2, seed=-1), kind="range"),
    bad("PPCA", "dtype", lambda: PPCA(4, 2, dtype=torch.int32), kind="dtype"),
    bad("PPCA.log_likelihood", "y", lambda: PP.log_likelihood(YP_WIDE), PP, YP_WIDE, kind="shape"),
    bad("PPCA.forward", "x", lambda: PP(torch.zeros(2, 10, 3, **F64), YP), PP, YP, kind="shape"),
    bad("GeneratorNet", "data_dim", lambda: GeneratorNet(0), kind="range"),
    bad("GeneratorNet", "latent_dim", lambda: GeneratorNet(9, 0), kind="range"),
    bad("GeneratorNet", "hidden", lambda: GeneratorNet(9, 2, -4), kind="range"),
    bad("GeneratorNet", "sigma", lambda: GeneratorNet(9, 2, 4, 0.0), kind="range"),
    bad("GeneratorNet", "sigma", lambda: GeneratorNet(9, 2, 4, NAN), kind="nan"),
    bad("GeneratorNet", "seed", lambda: GeneratorNet(9, seed="s"), kind="type"),
    bad("GeneratorNet.decode", "x", lambda: GEN.decode(torch.zeros(3, 5)), GEN, kind="shape"),
    bad("GeneratorNet.forward", "y", lambda: GEN(torch.zeros(2, 3, 2), torch.zeros(3, 8)), GEN, kind="shape"),
]

# issue 47: raw errors from the user's callables and from extreme steps, silent acceptances in forwards and EM
RAISES = FunctionModel(lambda th, x, y: (_ for _ in ()).throw(ValueError("bad")), torch.zeros(1, **F64), 1)


def crash(model, particles):
    return 1 / 0


CASES += [
    bad("MPD", "gamma_x", lambda: MPD(1e-3, 1e-2, gamma_x=1e300, eta_x=1e300, eta_theta=1.0), kind="overflow"),
    bad("MPD", "momentum_theta", lambda: MPD(1e-300, 1e-2, gamma_theta=1e-300, momentum_theta=0.0, eta_x=1.0)),
    bad("MPD.fit", "callback", lambda: ALG.fit(TOY, Y, 2, callback=crash), TOY, Y, ALG, kind="raises"),
    bad("MPD.fit", "callback", lambda: ALG.fit(TOY, Y, 2, callback=lambda m, x: "a"), TOY, ALG, kind="returns-str"),
    bad("MPD.fit", "model", lambda: ALG.fit(RAISES, Y, 2), RAISES, Y, ALG, kind="value-error"),
    bad(
        "PGD.fit", "callback", lambda: PGD_ALG.fit(TOY, Y, 2, callback=lambda m, x: {"a": "x"}), TOY, kind="not-number"
    ),
    bad("ABP.fit", "callback", lambda: ABP_ALG.fit(TOY, Y, 2, callback=crash), TOY, ABP_ALG, kind="raises"),
    bad("noise_covariance", "gamma", lambda: noise_covariance(1e-300, 1e-300, 1e-300), kind="underflow"),
    bad("noise_covariance", "gamma", lambda: noise_covariance(1e300, 1e300, 1.0), kind="overflow"),
    bad("momentum_from_target", "gamma", lambda: momentum_from_target(0.5, 1e-300, 1e-300), kind="underflow"),
    bad("flow_step", "gamma", lambda: flow_step(Z, Z, Z, gamma=1e-300, eta=1e-300, h=1.0), Z, kind="underflow"),
    bad("toy_em", "y", lambda: toy_em(torch.ones(3, 2, **F64), 0.0, 2), kind="columns"),
    bad("toy_log_likelihood", "y", lambda: toy_log_likelihood(torch.ones(3, 2, **F64), 0.0), kind="columns"),
    bad("ppca_mle", "y", lambda: ppca_mle(YP * 1e200, 2), kind="overflow"),
    bad(
        "ppca_log_likelihood",
        "W",
        lambda: ppca_log_likelihood(YP, torch.full((4, 2), 1e200, **F64), torch.zeros(4), 1.0),
    ),
    bad("ToyHierarchical.forward", "x", lambda: TOY(X0 * NAN, Y), TOY, Y, kind="nan"),
    bad("ToyHierarchical.forward", "x", lambda: TOY(X0.float(), Y), TOY, Y, kind="dtype"),
    bad("ToyHierarchical.forward", "x", lambda: TOY(X0[:0], Y), TOY, Y, kind="empty"),
    bad("ToyHierarchical.forward", "y", lambda: TOY(X0, None), TOY, X0, kind="none"),
    bad("PPCA.forward", "x", lambda: PP(torch.zeros(2, 10, 2), YP), PP, YP, kind="dtype"),
    bad("GeneratorNet.decode", "x", lambda: GEN.decode(torch.zeros(3, 2, **F64)), GEN, kind="dtype"),
    bad("GeneratorNet.decode", "x", lambda: GEN.decode(torch.tensor(1.0)), GEN, kind="scalar"),
    bad("GeneratorNet.forward", "x", lambda: GEN(torch.zeros(2, 3, 2, **F64), torch.zeros(3, 9, **F64)), GEN),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    exempt = {"ParticleFit": "a plain record that fit returns; users read it, they do not build it"}
    assert coverage_gaps(mp, CASES, exempt=exempt) == {}


def test_refusal_leaves_the_users_model_mode():
    assert TOY.training and PP.training


def test_a_log_density_free_of_theta_gives_zero_parameter_gradients():
    # MPD and ABP differentiated log p in theta alone and torch refused a graph without theta
    free = FunctionModel(lambda th, x, y: -0.5 * (x**2).sum(-1) + 0 * y.sum(-1), torch.ones(1, **F64), 1)
    for alg in (ALG, ABP_ALG):
        fit = alg.fit(free, Y, 3)
        assert torch.equal(fit.theta_trace()[-1], torch.ones(1, **F64))
