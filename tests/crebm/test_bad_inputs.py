"""Every public callable of icml24.crebm refuses bad input with a one-line InputError naming the argument, and
leaves the objects passed in (models, tensors, routes) unchanged."""

import pytest
import torch

import icml24.crebm as crebm
from icml24.crebm import (
    EnergyConfig,
    EnergyTransformer,
    Neuralsym,
    NeuralsymConfig,
    PlannedRoute,
    Route,
    Stock,
    Template,
    TrainConfig,
    ValueMLP,
    base_ranking,
    bradley_terry_loss,
    cost_criterion,
    energies,
    feasibility_criterion,
    finetune_energy,
    heuristic_ranking,
    load_route_benchmark,
    preference_pairs,
    pretrain_energy,
    propose,
    rerank,
    retro_star_0,
    sequence_scores,
    tanimoto,
    to_route_benchmark,
    train_neuralsym,
    train_value_mlp,
    yield_criterion,
)
from icml24.crebm.world import Step, load_templates
from icml24.testing import assert_refuses, bad, coverage_gaps

NAN = float("nan")
T = "CC(=O)NCc1ccccc1"
ROUTE = Route(T, (Step(T, ("CC(=O)O", "NCc1ccccc1"), "amide_coupling-1"),))
OTHER = Route(T, (Step(T, ("CC(=O)Cl", "NCc1ccccc1"), "amide_coupling-2"),))
ELSEWHERE = Route("CCOCC", (Step("CCOCC", ("CCBr", "CCO"), "ether-2"),))
PLANNED = [PlannedRoute(ROUTE, 0.2), PlannedRoute(OTHER, 0.1)]
STOCK = Stock({"CC(=O)O": 1.0, "CC(=O)Cl": 2.0, "NCc1ccccc1": 3.0})
TEMPLATES = load_templates()
SMALL = EnergyConfig(16, 16, 1, 2, 32, 0.0)
ENERGY = EnergyTransformer(SMALL, seed=0)
NS_CFG = NeuralsymConfig(orig_fp_size=256, final_fp_size=64, hidden_size=8, epochs=1)
ONESTEP = train_neuralsym([T, "CCOCc1ccccc1"], ["amide_coupling-1", "ether-2"], TEMPLATES, NS_CFG)
V = torch.tensor([0.1, 0.2, 0.3])
GT_PAIRS = [(T, "CC(=O)O.NCc1ccccc1")]
BT_PAIRS = [(T, "CC(=O)O.NCc1ccccc1", "CC(=O)Cl.NCc1ccccc1")]
FAST = TrainConfig(epochs=1, batch_size=2)
AMIDE = TEMPLATES[0]


def nan_phi(route):
    return NAN


CASES = [
    # ---------------------------------------------------------------------------------------------- Stock
    bad("Stock", "prices", lambda: Stock({}), kind="empty"),
    bad("Stock", "prices", lambda: Stock({"not a smiles((": 1.0}), kind="smiles"),
    bad("Stock", "prices", lambda: Stock({"CCO": -1.0}), kind="negative"),
    bad("Stock", "prices", lambda: Stock({"CCO": NAN}), kind="nan"),
    bad("Stock", "prices", lambda: Stock(["CCO"]), kind="type"),
    # ------------------------------------------------------------------------------------------- Template
    bad("Template", "syn_smarts", lambda: Template("x", "not a reaction", AMIDE.retro_smarts), kind="no-arrow"),
    bad("Template", "syn_smarts", lambda: Template("x", "[C:1]((>>[C:1]", AMIDE.retro_smarts), kind="unparsable"),
    bad("Template", "retro_smarts", lambda: Template("x", AMIDE.syn_smarts, "[N:1]>>[X+:9"), kind="unparsable"),
    bad("Template", "retro_smarts", lambda: Template("x", AMIDE.syn_smarts, None), kind="none"),
    bad("Template", "syn_smarts", lambda: Template("x", 3, AMIDE.retro_smarts), kind="type"),
    # -------------------------------------------------------------------------------------- base_ranking
    bad("base_ranking", "routes", lambda: base_ranking(None), kind="none"),
    bad("base_ranking", "routes", lambda: base_ranking("CCO"), kind="string"),
    bad("base_ranking", "routes", lambda: base_ranking([ROUTE]), ROUTE, kind="plain-route"),
    bad("base_ranking", "routes", lambda: base_ranking(PLANNED[0]), kind="single"),
    bad("base_ranking", "routes", lambda: base_ranking([PLANNED[0], 3]), kind="item"),
    # --------------------------------------------------------------------------------- heuristic_ranking
    bad("heuristic_ranking", "heuristic", lambda: heuristic_ranking(PLANNED, "colour"), kind="name"),
    bad("heuristic_ranking", "stock", lambda: heuristic_ranking(PLANNED, "price"), kind="no-stock"),
    bad("heuristic_ranking", "stock", lambda: heuristic_ranking(PLANNED, "price", {"CCO": 1.0}), kind="type"),
    bad("heuristic_ranking", "routes", lambda: heuristic_ranking(None, "steps"), kind="none"),
    bad("heuristic_ranking", "heuristic", lambda: heuristic_ranking(PLANNED, None), kind="none"),
    # ----------------------------------------------------------------------------- load_route_benchmark
    bad("load_route_benchmark", "path", lambda: load_route_benchmark(None), kind="none"),
    bad("load_route_benchmark", "path", lambda: load_route_benchmark(3), kind="int"),
    bad("load_route_benchmark", "path", lambda: load_route_benchmark(["a.json"]), kind="list"),
    bad("load_route_benchmark", "path", lambda: load_route_benchmark(""), kind="empty"),
    bad("load_route_benchmark", "path", lambda: load_route_benchmark("/"), kind="folder"),
    # ------------------------------------------------------------------------------- to_route_benchmark
    bad("to_route_benchmark", "targets", lambda: to_route_benchmark(None), kind="none"),
    bad("to_route_benchmark", "targets", lambda: to_route_benchmark("CCO"), kind="string"),
    bad("to_route_benchmark", "targets", lambda: to_route_benchmark([ROUTE]), kind="route"),
    bad("to_route_benchmark", "targets", lambda: to_route_benchmark(3), kind="int"),
    bad("to_route_benchmark", "targets", lambda: to_route_benchmark([None]), kind="item"),
    # ----------------------------------------------------------------------------------- cost_criterion
    bad("cost_criterion", "stock", lambda: cost_criterion(None), kind="none"),
    bad("cost_criterion", "stock", lambda: cost_criterion({"CCO": 1.0}), kind="dict"),
    bad("cost_criterion", "stock", lambda: cost_criterion("CCO"), kind="string"),
    bad("cost_criterion", "stock", lambda: cost_criterion(3), kind="int"),
    bad("cost_criterion", "stock", lambda: cost_criterion([STOCK]), kind="list"),
    # ---------------------------------------------------------------------------- feasibility_criterion
    bad("feasibility_criterion", "gt", lambda: feasibility_criterion(None, TEMPLATES), kind="none"),
    bad("feasibility_criterion", "gt", lambda: feasibility_criterion("CCO", TEMPLATES), kind="string"),
    bad("feasibility_criterion", "templates", lambda: feasibility_criterion(ROUTE, []), kind="empty"),
    bad("feasibility_criterion", "templates", lambda: feasibility_criterion(ROUTE, ["amide"]), kind="names"),
    bad("feasibility_criterion", "templates", lambda: feasibility_criterion(ROUTE, AMIDE), kind="single"),
    # --------------------------------------------------------------------------------- preference_pairs
    bad("preference_pairs", "target", lambda: preference_pairs("C((", [ROUTE], len), kind="smiles"),
    bad("preference_pairs", "criterion", lambda: preference_pairs(T, [ROUTE], 3), kind="not-callable"),
    bad("preference_pairs", "criterion", lambda: preference_pairs(T, [ROUTE, OTHER], nan_phi), kind="nan"),
    bad("preference_pairs", "max_candidates", lambda: preference_pairs(T, [ROUTE], len, max_candidates=1)),
    bad("preference_pairs", "routes", lambda: preference_pairs(T, [T], len), kind="item"),
    # ------------------------------------------------------------------------------------------- rerank
    bad("rerank", "alpha", lambda: rerank(PLANNED, T, ENERGY, -0.5), ENERGY, kind="negative"),
    bad("rerank", "target", lambda: rerank(PLANNED, "not((smiles", ENERGY), ENERGY, kind="smiles"),
    bad("rerank", "stock", lambda: rerank(PLANNED, T, ENERGY, stock=Stock({"CC(=O)O": 1.0})), kind="incomplete"),
    bad("rerank", "routes", lambda: rerank([ELSEWHERE], T, ENERGY), ENERGY, kind="other-target"),
    bad("rerank", "base_costs", lambda: rerank([ROUTE], T, None, base_costs=[1.0, 2.0]), kind="length"),
    bad("rerank", "model", lambda: rerank(PLANNED, T, torch.nn.Linear(2, 2)), kind="type"),
    bad("rerank", "alpha", lambda: rerank(PLANNED, T, ENERGY, NAN), kind="nan"),
    # ------------------------------------------------------------------------------------------ tanimoto
    bad("tanimoto", "a", lambda: tanimoto("C((", "CCO"), kind="smiles"),
    bad("tanimoto", "b", lambda: tanimoto("CCO", "X1"), kind="smiles"),
    bad("tanimoto", "a", lambda: tanimoto(None, "CCO"), kind="none"),
    bad("tanimoto", "b", lambda: tanimoto("CCO", 3), kind="int"),
    bad("tanimoto", "a", lambda: tanimoto("", "CCO"), kind="empty"),
    # ---------------------------------------------------------------------------------- yield_criterion
    bad("yield_criterion", "yields", lambda: yield_criterion({}), kind="empty"),
    bad("yield_criterion", "yields", lambda: yield_criterion({"a": 1.5}), kind="range"),
    bad("yield_criterion", "yields", lambda: yield_criterion({"a": 0.0}), kind="zero"),
    bad("yield_criterion", "yields", lambda: yield_criterion({"a": NAN}), kind="nan"),
    bad("yield_criterion", "yields", lambda: yield_criterion([0.5]), kind="type"),
    # ------------------------------------------------------------------------------------- EnergyConfig
    bad("EnergyConfig.validated", "embedding_size", lambda: EnergyConfig(embedding_size=15).validated(), kind="odd"),
    bad("EnergyConfig.validated", "hidden_size", lambda: EnergyConfig(hidden_size=10, num_heads=4).validated()),
    bad("EnergyConfig.validated", "num_layers", lambda: EnergyConfig(num_layers=0).validated(), kind="zero"),
    bad("EnergyConfig.validated", "dropout", lambda: EnergyConfig(dropout=1.0).validated(), kind="range"),
    bad("EnergyConfig.validated", "num_heads", lambda: EnergyConfig(num_heads=1.5).validated(), kind="type"),
    # -------------------------------------------------------------------------------- EnergyTransformer
    bad("EnergyTransformer", "config", lambda: EnergyTransformer({"embedding_size": 8}), kind="dict"),
    bad("EnergyTransformer", "seed", lambda: EnergyTransformer(SMALL, seed=-1), kind="negative"),
    bad("EnergyTransformer", "hidden_size", lambda: EnergyTransformer(EnergyConfig(16, 15, 1, 2)), kind="heads"),
    bad("EnergyTransformer", "seed", lambda: EnergyTransformer(SMALL, seed=None), kind="none"),
    bad("EnergyTransformer", "intermediate_size", lambda: EnergyTransformer(EnergyConfig(intermediate_size=0))),
    # -------------------------------------------------------------------------------------- TrainConfig
    bad("TrainConfig.validated", "epochs", lambda: TrainConfig(epochs=0).validated(), kind="zero"),
    bad("TrainConfig.validated", "lr", lambda: TrainConfig(lr=NAN).validated(), kind="nan"),
    bad("TrainConfig.validated", "lr", lambda: TrainConfig(lr=-1.0).validated(), kind="negative"),
    bad("TrainConfig.validated", "batch_size", lambda: TrainConfig(batch_size=0).validated(), kind="zero"),
    bad("TrainConfig.validated", "seed", lambda: TrainConfig(seed=-3).validated(), kind="seed"),
    # ------------------------------------------------------------------------------- bradley_terry_loss
    bad("bradley_terry_loss", "rejected", lambda: bradley_terry_loss(V, V[:2]), kind="shape"),
    bad("bradley_terry_loss", "chosen", lambda: bradley_terry_loss(torch.tensor([NAN]), V[:1]), kind="nan"),
    bad("bradley_terry_loss", "chosen", lambda: bradley_terry_loss(V[None], V[None]), kind="ndim"),
    bad("bradley_terry_loss", "rejected", lambda: bradley_terry_loss(V, [0.1, 0.2, 0.3]), kind="type"),
    bad("bradley_terry_loss", "chosen", lambda: bradley_terry_loss(V[:0], V[:0]), kind="empty"),
    # ----------------------------------------------------------------------------------------- energies
    bad("energies", "model", lambda: energies(torch.nn.Linear(2, 2), [T], ["CCO"]), kind="type"),
    bad("energies", "materials", lambda: energies(ENERGY, [T], ["CC€"]), ENERGY, kind="alphabet"),
    bad("energies", "targets", lambda: energies(ENERGY, [T, T], ["CCO"]), ENERGY, kind="length"),
    bad("energies", "batch_size", lambda: energies(ENERGY, [T], ["CCO"], batch_size=0), kind="zero"),
    bad("energies", "targets", lambda: energies(ENERGY, T, "CCO"), ENERGY, kind="string"),
    # ---------------------------------------------------------------------------------- pretrain_energy
    bad("pretrain_energy", "pairs", lambda: pretrain_energy(ENERGY, [], FAST), ENERGY, kind="empty"),
    bad("pretrain_energy", "pairs", lambda: pretrain_energy(ENERGY, [(T,)], FAST), ENERGY, kind="width"),
    bad("pretrain_energy", "pairs", lambda: pretrain_energy(ENERGY, [(T, "C$C")], FAST), ENERGY, kind="alphabet"),
    bad("pretrain_energy", "config", lambda: pretrain_energy(ENERGY, GT_PAIRS, {"epochs": 1}), ENERGY, kind="type"),
    bad("pretrain_energy", "model", lambda: pretrain_energy(torch.nn.Linear(2, 2), GT_PAIRS, FAST), kind="type"),
    bad("pretrain_energy", "epochs", lambda: pretrain_energy(ENERGY, GT_PAIRS, TrainConfig(epochs=0)), ENERGY),
    # ---------------------------------------------------------------------------------- finetune_energy
    bad("finetune_energy", "pairs", lambda: finetune_energy(ENERGY, GT_PAIRS, FAST), ENERGY, kind="width"),
    bad("finetune_energy", "pairs", lambda: finetune_energy(ENERGY, "CCO", FAST), ENERGY, kind="string"),
    bad("finetune_energy", "pairs", lambda: finetune_energy(ENERGY, [(T, "", "C")], FAST), ENERGY, kind="empty-str"),
    bad("finetune_energy", "model", lambda: finetune_energy(None, BT_PAIRS, FAST), kind="none"),
    bad("finetune_energy", "lr", lambda: finetune_energy(ENERGY, BT_PAIRS, TrainConfig(lr=0.0)), ENERGY),
    # ---------------------------------------------------------------------------------- sequence_scores
    bad("sequence_scores", "model", lambda: sequence_scores(None, [T], ["CCO"]), kind="none"),
    bad("sequence_scores", "targets", lambda: sequence_scores(ENERGY, [], []), ENERGY, kind="empty"),
    bad("sequence_scores", "materials", lambda: sequence_scores(ENERGY, [T], [""]), ENERGY, kind="empty-str"),
    bad("sequence_scores", "targets", lambda: sequence_scores(ENERGY, ["C^C"], ["CCO"]), ENERGY, kind="reserved"),
    bad("sequence_scores", "materials", lambda: sequence_scores(ENERGY, [T], [3]), ENERGY, kind="type"),
    # ---------------------------------------------------------------------------------------- Neuralsym
    bad("Neuralsym", "templates", lambda: Neuralsym([], [1, 2], NS_CFG), kind="empty"),
    bad("Neuralsym", "templates", lambda: Neuralsym(["amide"], [1, 2], NS_CFG), kind="names"),
    bad("Neuralsym", "indices", lambda: Neuralsym(TEMPLATES, [], NS_CFG), kind="empty"),
    bad("Neuralsym", "indices", lambda: Neuralsym(TEMPLATES, [300], NS_CFG), kind="range"),
    bad("Neuralsym", "hidden_size", lambda: Neuralsym(TEMPLATES, [1], NeuralsymConfig(hidden_size=0)), kind="cfg"),
    bad("Neuralsym.featurize", "smiles", lambda: ONESTEP.featurize(["C(("]), ONESTEP, kind="smiles"),
    # ---------------------------------------------------------------------------------- NeuralsymConfig
    bad("NeuralsymConfig.validated", "orig_fp_size", lambda: NeuralsymConfig(orig_fp_size=0).validated()),
    bad("NeuralsymConfig.validated", "depth", lambda: NeuralsymConfig(depth=-1).validated(), kind="depth"),
    bad("NeuralsymConfig.validated", "dropout_head", lambda: NeuralsymConfig(dropout_head=1.0).validated()),
    bad("NeuralsymConfig.validated", "lr", lambda: NeuralsymConfig(lr=NAN).validated(), kind="nan"),
    bad("NeuralsymConfig.validated", "seed", lambda: NeuralsymConfig(seed=-1).validated(), kind="seed"),
    # ---------------------------------------------------------------------------------- train_neuralsym
    bad("train_neuralsym", "template_names", lambda: train_neuralsym([T], [], TEMPLATES, NS_CFG), kind="length"),
    bad("train_neuralsym", "template_names", lambda: train_neuralsym([T], ["nope"], TEMPLATES, NS_CFG)),
    bad("train_neuralsym", "smiles", lambda: train_neuralsym(["C(("], ["ether-2"], TEMPLATES, NS_CFG), kind="smi"),
    bad("train_neuralsym", "templates", lambda: train_neuralsym([T], ["ether-2"], [], NS_CFG), kind="empty"),
    bad("train_neuralsym", "config", lambda: train_neuralsym([T], ["ether-2"], TEMPLATES, {"epochs": 1})),
    # ------------------------------------------------------------------------------------------ propose
    bad("propose", "model", lambda: propose(ENERGY, T), kind="type"),
    bad("propose", "smiles", lambda: propose(ONESTEP, "C(("), ONESTEP, kind="smiles"),
    bad("propose", "topk", lambda: propose(ONESTEP, T, 0), ONESTEP, kind="zero"),
    bad("propose", "max_templates", lambda: propose(ONESTEP, T, max_templates=0), ONESTEP, kind="zero"),
    bad("propose", "first_outcome_only", lambda: propose(ONESTEP, T, first_outcome_only=1), kind="type"),
    # ------------------------------------------------------------------------------------- retro_star_0
    bad("retro_star_0", "target", lambda: retro_star_0("not a smiles((", ONESTEP, STOCK, 2), ONESTEP, kind="smi"),
    bad("retro_star_0", "stock", lambda: retro_star_0(T, ONESTEP, {"CCO": 1.0}, 2), kind="type"),
    bad("retro_star_0", "max_depth", lambda: retro_star_0(T, ONESTEP, STOCK, -1), ONESTEP, kind="negative"),
    bad("retro_star_0", "beam_size", lambda: retro_star_0(T, ONESTEP, STOCK, 2, beam_size=0), kind="zero"),
    bad("retro_star_0", "value_fn", lambda: retro_star_0(T, ONESTEP, STOCK, 2, value_fn=3), kind="type"),
    bad("retro_star_0", "model", lambda: retro_star_0(T, ENERGY, STOCK, 2), kind="type"),
    # ------------------------------------------------------------------------------------------ ValueMLP
    bad("ValueMLP", "fp_size", lambda: ValueMLP(fp_size=0), kind="zero"),
    bad("ValueMLP", "hidden_size", lambda: ValueMLP(hidden_size=-1), kind="negative"),
    bad("ValueMLP", "seed", lambda: ValueMLP(seed=-1), kind="seed"),
    bad("ValueMLP", "fp_size", lambda: ValueMLP(fp_size=2.5), kind="type"),
    bad("ValueMLP.featurize", "smiles", lambda: ValueMLP(fp_size=8).featurize(["C(("]), kind="smiles"),
    # ----------------------------------------------------------------------------------- train_value_mlp
    bad("train_value_mlp", "costs", lambda: train_value_mlp(["CCO"], [-1.0]), kind="negative"),
    bad("train_value_mlp", "costs", lambda: train_value_mlp(["CCO"], [NAN]), kind="nan"),
    bad("train_value_mlp", "costs", lambda: train_value_mlp(["CCO", "CC"], [1.0]), kind="length"),
    bad("train_value_mlp", "epochs", lambda: train_value_mlp(["CCO"], [1.0], epochs=0), kind="zero"),
    bad("train_value_mlp", "smiles", lambda: train_value_mlp(["C(("], [1.0]), kind="smiles"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    exempt = {
        "Route": "plain record of a reaction tree (steps are not validated at construction)",
        "PlannedRoute": "plain record of a planner's route and its cost",
        "RankedRoute": "plain record of a reranked route",
        "BenchmarkTask": "plain record of one benchmark target",
        "steps_criterion": "takes no argument",
    }
    assert coverage_gaps(crebm, CASES, exempt=exempt) == {}
