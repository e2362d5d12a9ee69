"""Every public callable of icml24.crebm refuses bad input with a one-line InputError naming the argument, and
leaves the objects passed in (models, tensors, routes) unchanged."""

import json

import pytest
import torch

import icml24.crebm as crebm
from icml24.crebm import (
    BenchmarkTask,
    EnergyConfig,
    EnergyTransformer,
    Neuralsym,
    NeuralsymConfig,
    PlannedRoute,
    RankedRoute,
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
    steps_criterion,
    tanimoto,
    to_route_benchmark,
    train_neuralsym,
    train_value_mlp,
    yield_criterion,
)
from icml24.crebm.world import Step, load_templates
from icml24.errors import DataError
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
    bad("EnergyConfig", "embedding_size", lambda: EnergyConfig(embedding_size=15), kind="odd"),
    bad("EnergyConfig", "hidden_size", lambda: EnergyConfig(hidden_size=10, num_heads=4)),
    bad("EnergyConfig", "num_layers", lambda: EnergyConfig(num_layers=0), kind="zero"),
    bad("EnergyConfig", "dropout", lambda: EnergyConfig(dropout=1.0), kind="range"),
    bad("EnergyConfig", "num_heads", lambda: EnergyConfig(num_heads=1.5), kind="type"),
    # -------------------------------------------------------------------------------- EnergyTransformer
    bad("EnergyTransformer", "config", lambda: EnergyTransformer({"embedding_size": 8}), kind="dict"),
    bad("EnergyTransformer", "seed", lambda: EnergyTransformer(SMALL, seed=-1), kind="negative"),
    bad("EnergyTransformer", "hidden_size", lambda: EnergyTransformer(EnergyConfig(16, 15, 1, 2)), kind="heads"),
    bad("EnergyTransformer", "seed", lambda: EnergyTransformer(SMALL, seed=None), kind="none"),
    bad("EnergyTransformer", "intermediate_size", lambda: EnergyTransformer(EnergyConfig(intermediate_size=0))),
    # -------------------------------------------------------------------------------------- TrainConfig
    bad("TrainConfig", "epochs", lambda: TrainConfig(epochs=0), kind="zero"),
    bad("TrainConfig", "lr", lambda: TrainConfig(lr=NAN), kind="nan"),
    bad("TrainConfig", "lr", lambda: TrainConfig(lr=-1.0), kind="negative"),
    bad("TrainConfig", "batch_size", lambda: TrainConfig(batch_size=0), kind="zero"),
    bad("TrainConfig", "seed", lambda: TrainConfig(seed=-3), kind="seed"),
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
    bad("NeuralsymConfig", "orig_fp_size", lambda: NeuralsymConfig(orig_fp_size=0)),
    bad("NeuralsymConfig", "depth", lambda: NeuralsymConfig(depth=-1), kind="depth"),
    bad("NeuralsymConfig", "dropout_head", lambda: NeuralsymConfig(dropout_head=1.0)),
    bad("NeuralsymConfig", "lr", lambda: NeuralsymConfig(lr=NAN), kind="nan"),
    bad("NeuralsymConfig", "seed", lambda: NeuralsymConfig(seed=-1), kind="seed"),
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

# Issue 47: records and configs check their fields when made; every route argument leads to the given target.
CYCLE = (Step("CCO", ("CC",), ""), Step("CC", ("CCO",), ""))
DOUBLE = (Step("CCO", ("CC",), ""), Step("CC", ("C",), ""), Step("CC", ("CO",), ""))
UNUSED = (Step("CCO", ("CC",), ""), Step("CCN", ("CC",), ""))
AMINE_ONLY = Stock({"CC(=O)O": 1.0})  # the benzylamine is left open: retro_star_0 calls value_fn on it
OTHER_TARGET = [ROUTE, OTHER, ELSEWHERE]
IDS = torch.zeros(1, 3, dtype=torch.long)
LEN = torch.tensor([3])
INDEXED = torch.zeros(1, len(ONESTEP.indices))


def nan_value(smiles):
    return NAN


CASES += [
    # ---------------------------------------------------------------------------------------------- Route
    bad("Route", "target", lambda: Route("C(("), kind="smiles"),
    bad("Route", "target", lambda: Route(None), kind="none"),
    bad("Route", "steps", lambda: Route(T, list(ROUTE.steps)), kind="type"),
    bad("Route", "steps", lambda: Route("CCO", CYCLE), kind="cycle"),
    bad("Route", "steps", lambda: Route(T, ELSEWHERE.steps), kind="other-target"),
    bad("Route", "steps", lambda: Route("CCO", DOUBLE), kind="made-twice"),
    bad("Route", "steps", lambda: Route("CCO", UNUSED), kind="unused-step"),
    bad("Route", "reactants", lambda: Route(T, (Step(T, "CCO"),)), kind="string"),
    bad("Route", "reactants", lambda: Route(T, (Step(T, ("CCO", "C((")),)), kind="smiles"),
    bad("Route", "product", lambda: Route(T, (Step(None, ("CCO",)),)), kind="none"),
    bad("Route", "template", lambda: Route(T, (Step(T, ("CCO",), None),)), kind="none"),
    bad("Route.route_yield", "yields", lambda: ROUTE.route_yield({"amide_coupling-1": 1.5}), kind="range"),
    bad("Route.route_yield", "yields", lambda: ROUTE.route_yield({"amide_coupling-1": -0.5}), kind="negative"),
    bad("Route.route_yield", "yields", lambda: ROUTE.route_yield({"amide_coupling-1": NAN}), kind="nan"),
    bad("Route.route_yield", "yields", lambda: ROUTE.route_yield([0.5]), kind="type"),
    bad("Route.route_yield", "yields", lambda: ROUTE.route_yield(None), kind="none"),
    bad("Route.route_yield", "yields", lambda: ROUTE.route_yield({}), kind="empty"),
    bad("Route.route_yield", "yields", lambda: ROUTE.route_yield({3: 0.5}), kind="key"),
    bad("Route.price", "stock", lambda: ROUTE.price({"CCO": 1.0}), kind="dict"),
    bad("Route.price", "stock", lambda: ROUTE.price(None), kind="none"),
    bad("Route.is_complete", "stock", lambda: ROUTE.is_complete({"CCO": 1.0}), kind="dict"),
    bad("Route.is_complete", "stock", lambda: ROUTE.is_complete(None), kind="none"),
    # ---------------------------------------------------------------------------------------------- Stock
    bad("Stock.price", "smiles", lambda: STOCK.price("C(("), STOCK, kind="smiles"),
    bad("Stock.price", "smiles", lambda: STOCK.price(None), STOCK, kind="none"),
    bad("Stock.price", "smiles", lambda: STOCK.price(3), STOCK, kind="int"),
    bad("Stock", "prices", lambda: Stock({"CCO": float("inf")}), kind="inf"),
    bad("Stock", "prices", lambda: Stock({"CCO": True}), kind="bool"),
    # ------------------------------------------------------------------------------------------- Template
    bad("Template", "name", lambda: Template(3, AMIDE.syn_smarts, AMIDE.retro_smarts), kind="type"),
    bad("Template", "name", lambda: Template("", AMIDE.syn_smarts, AMIDE.retro_smarts), kind="empty"),
    bad("Template.matches", "smiles", lambda: AMIDE.matches(None, 0), kind="none"),
    bad("Template.matches", "smiles", lambda: AMIDE.matches(3, 0), kind="int"),
    bad("Template.matches", "smiles", lambda: AMIDE.matches("C((", 0), kind="smiles"),
    bad("Template.matches", "role", lambda: AMIDE.matches("CCO", 5), kind="range"),
    bad("Template.matches", "role", lambda: AMIDE.matches("CCO", -1), kind="negative"),
    bad("Template.matches", "role", lambda: AMIDE.matches("CCO", 1.5), kind="float"),
    bad("Template.matches", "role", lambda: AMIDE.matches("CCO", None), kind="none"),
    bad("Template.matches", "role", lambda: AMIDE.matches("CCO", True), kind="bool"),
    bad("Template.forward", "reactants", lambda: AMIDE.forward("CC(=O)O"), kind="string"),
    bad("Template.forward", "reactants", lambda: AMIDE.forward(None), kind="none"),
    bad("Template.forward", "reactants", lambda: AMIDE.forward(["CC(=O)O"]), kind="count"),
    bad("Template.forward", "reactants", lambda: AMIDE.forward([None, None]), kind="item"),
    bad("Template.forward", "reactants", lambda: AMIDE.forward(["C((", "NC"]), kind="smiles"),
    bad("Template.retro", "product", lambda: AMIDE.retro(None), kind="none"),
    bad("Template.retro", "product", lambda: AMIDE.retro("C(("), kind="smiles"),
    bad("Template.retro", "product", lambda: AMIDE.retro(""), kind="empty"),
    # --------------------------------------------------------------------------------------- PlannedRoute
    bad("PlannedRoute", "cost", lambda: PlannedRoute(ROUTE, NAN), kind="nan"),
    bad("PlannedRoute", "cost", lambda: PlannedRoute(ROUTE, float("inf")), kind="inf"),
    bad("PlannedRoute", "cost", lambda: PlannedRoute(ROUTE, "0.1"), kind="type"),
    bad("PlannedRoute", "route", lambda: PlannedRoute("CCO", 0.1), kind="string"),
    bad("PlannedRoute", "route", lambda: PlannedRoute(None, 0.1), kind="none"),
    # ---------------------------------------------------------------------------------------- RankedRoute
    bad("RankedRoute", "base_cost", lambda: RankedRoute(ROUTE, NAN, 0.0, 0.0), kind="nan"),
    bad("RankedRoute", "energy", lambda: RankedRoute(ROUTE, 0.0, float("inf"), 0.0), kind="inf"),
    bad("RankedRoute", "total", lambda: RankedRoute(ROUTE, 0.0, 0.0, "1"), kind="type"),
    bad("RankedRoute", "route", lambda: RankedRoute(None, 0.0, 0.0, 0.0), kind="none"),
    bad("RankedRoute", "route", lambda: RankedRoute(PLANNED[0], 0.0, 0.0, 0.0), kind="planned"),
    # -------------------------------------------------------------------------------------- BenchmarkTask
    bad("BenchmarkTask", "product", lambda: BenchmarkTask("C((", (("CCO",),), 1), kind="smiles"),
    bad("BenchmarkTask", "materials", lambda: BenchmarkTask(T, (), 1), kind="empty"),
    bad("BenchmarkTask", "materials", lambda: BenchmarkTask(T, ("CCO",), 1), kind="flat"),
    bad("BenchmarkTask", "materials", lambda: BenchmarkTask(T, (("C((",),), 1), kind="smiles"),
    bad("BenchmarkTask", "depth", lambda: BenchmarkTask(T, (("CCO",),), -1), kind="negative"),
    bad("BenchmarkTask", "depth", lambda: BenchmarkTask(T, (("CCO",),), 1.5), kind="float"),
    # --------------------------------------------------------------------------- rankings and criteria
    bad("base_ranking", "routes", lambda: base_ranking([PLANNED[0], PlannedRoute(ELSEWHERE, 0.1)]), kind="targets"),
    bad("heuristic_ranking", "stock", lambda: heuristic_ranking(PLANNED, "steps", {"CCO": 1.0}), kind="type"),
    bad("heuristic_ranking", "routes", lambda: heuristic_ranking([PLANNED[0], PlannedRoute(ELSEWHERE, 0.1)], "steps")),
    bad("to_route_benchmark", "targets", lambda: to_route_benchmark([]), kind="empty"),
    bad("feasibility_criterion", "route", lambda: feasibility_criterion(ROUTE, TEMPLATES)(ELSEWHERE), kind="target"),
    bad("feasibility_criterion", "templates", lambda: feasibility_criterion(ROUTE, [AMIDE, None]), kind="item"),
    bad("cost_criterion", "route", lambda: cost_criterion(STOCK)("CCO"), kind="phi-string"),
    bad("yield_criterion", "yields", lambda: yield_criterion({3: 0.5}), kind="key"),
    bad("yield_criterion", "yields", lambda: yield_criterion({"a": float("inf")}), kind="inf"),
    bad("preference_pairs", "routes", lambda: preference_pairs("CCO", [ROUTE, OTHER], len), kind="other-target"),
    bad("preference_pairs", "routes", lambda: preference_pairs(T, OTHER_TARGET, len), kind="mixed-targets"),
    bad("preference_pairs", "gt", lambda: preference_pairs(T, [ROUTE], len, gt=ELSEWHERE), kind="other-target"),
    bad("preference_pairs", "criterion", lambda: preference_pairs(T, [ROUTE, OTHER], lambda r: True), kind="bool"),
    bad("preference_pairs", "routes", lambda: preference_pairs(T, None, len), kind="none"),
    bad("rerank", "base_costs", lambda: rerank([ROUTE], T, None, base_costs={0: 1.0}), kind="dict"),
    bad("rerank", "base_costs", lambda: rerank([ROUTE], T, None, base_costs=[float("inf")]), kind="inf"),
    bad("rerank", "routes", lambda: rerank(iter(PLANNED), T, None), kind="iterator"),
    # --------------------------------------------------------------------------------------------- configs
    bad("EnergyConfig", "hidden_size", lambda: EnergyConfig(hidden_size=None), kind="none"),
    bad("EnergyConfig", "dropout", lambda: EnergyConfig(dropout=NAN), kind="nan"),
    bad("EnergyConfig", "num_layers", lambda: EnergyConfig(num_layers=-1), kind="negative"),
    bad("NeuralsymConfig", "epochs", lambda: NeuralsymConfig(epochs=0), kind="zero"),
    bad("NeuralsymConfig", "final_fp_size", lambda: NeuralsymConfig(orig_fp_size=64, final_fp_size=128)),
    bad("NeuralsymConfig", "dropout_body", lambda: NeuralsymConfig(dropout_body=NAN), kind="nan"),
    bad("NeuralsymConfig", "batch_size", lambda: NeuralsymConfig(batch_size=None), kind="none"),
    bad("TrainConfig", "lr", lambda: TrainConfig(lr="1e-3"), kind="type"),
    bad("TrainConfig", "warmup", lambda: TrainConfig(warmup=0), kind="zero"),
    bad("TrainConfig", "max_pairs", lambda: TrainConfig(max_pairs=-1), kind="negative"),
    # -------------------------------------------------------------------------------------------- energy
    bad("EnergyTransformer", "config", lambda: EnergyTransformer("big"), kind="string"),
    bad("EnergyTransformer.forward", "src", lambda: ENERGY(IDS.float(), LEN, IDS, LEN), ENERGY, kind="dtype"),
    bad("EnergyTransformer.forward", "src_len", lambda: ENERGY(IDS, LEN[:0], IDS, LEN), ENERGY, kind="shape"),
    bad("EnergyTransformer.forward", "tgt_in", lambda: ENERGY(IDS, LEN, IDS + 99, LEN), ENERGY, kind="range"),
    bad("energies", "targets", lambda: energies(ENERGY, [], []), ENERGY, kind="empty"),
    bad("energies", "targets", lambda: energies(ENERGY, None, None), ENERGY, kind="none"),
    bad("energies", "targets", lambda: energies(ENERGY, iter([T]), iter(["CCO"])), ENERGY, kind="iterator"),
    bad("energies", "materials", lambda: energies(ENERGY, [T], ["C(("]), ENERGY, kind="smiles"),
    bad("sequence_scores", "targets", lambda: sequence_scores(ENERGY, None, None), ENERGY, kind="none"),
    bad("sequence_scores", "targets", lambda: sequence_scores(ENERGY, 3, 3), ENERGY, kind="int"),
    bad("pretrain_energy", "pairs", lambda: pretrain_energy(ENERGY, [(T, "CCCC((")], FAST), ENERGY, kind="smiles"),
    bad("finetune_energy", "pairs", lambda: finetune_energy(ENERGY, [(T, "C((", "CC")], FAST), ENERGY, kind="smiles"),
    bad("finetune_energy", "config", lambda: finetune_energy(ENERGY, BT_PAIRS, 3), ENERGY, kind="type"),
    # ------------------------------------------------------------------------------------------- onestep
    bad("Neuralsym", "indices", lambda: Neuralsym(TEMPLATES, None, NS_CFG), kind="none"),
    bad("Neuralsym", "indices", lambda: Neuralsym(TEMPLATES, "12", NS_CFG), kind="string"),
    bad("Neuralsym", "indices", lambda: Neuralsym(TEMPLATES, [1.5], NS_CFG), kind="float"),
    bad("Neuralsym", "indices", lambda: Neuralsym(TEMPLATES, [1, 1], NS_CFG), kind="repeat"),
    bad("Neuralsym", "config", lambda: Neuralsym(TEMPLATES, [1], {"epochs": 1}), kind="dict"),
    bad("Neuralsym", "templates", lambda: Neuralsym([AMIDE, AMIDE], [1], NS_CFG), kind="repeat"),
    bad("Neuralsym.featurize", "smiles", lambda: ONESTEP.featurize(None), ONESTEP, kind="none"),
    bad("Neuralsym.featurize", "smiles", lambda: ONESTEP.featurize(3), ONESTEP, kind="int"),
    bad("Neuralsym.forward", "x", lambda: ONESTEP(torch.zeros(2, 3)), ONESTEP, kind="shape"),
    bad("Neuralsym.forward", "x", lambda: ONESTEP(INDEXED + NAN), ONESTEP, kind="nan"),
    bad("train_neuralsym", "products", lambda: train_neuralsym(None, None, TEMPLATES, NS_CFG), kind="none"),
    bad("train_neuralsym", "products", lambda: train_neuralsym(iter([T]), ["ether-2"], TEMPLATES, NS_CFG)),
    bad("train_neuralsym", "templates", lambda: train_neuralsym([T], ["ether-2"], None, NS_CFG), kind="none"),
    bad("train_neuralsym", "templates", lambda: train_neuralsym([T], ["ether-2"], [AMIDE, None], NS_CFG)),
    bad("train_neuralsym", "templates", lambda: train_neuralsym([T], ["ether-2"], [*TEMPLATES, AMIDE], NS_CFG)),
    bad("train_neuralsym", "template_names", lambda: train_neuralsym([T], [["ether-2"]], TEMPLATES, NS_CFG)),
    # -------------------------------------------------------------------------------------------- search
    bad("retro_star_0", "value_fn", lambda: retro_star_0(T, ONESTEP, AMINE_ONLY, 2, value_fn=nan_value), ONESTEP),
    bad("retro_star_0", "value_fn", lambda: retro_star_0(T, ONESTEP, AMINE_ONLY, 2, value_fn=str), kind="string"),
    bad("ValueMLP.featurize", "smiles", lambda: ValueMLP(fp_size=8).featurize(None), kind="none"),
    bad("ValueMLP.forward", "x", lambda: ValueMLP(fp_size=8)(torch.zeros(2, 3)), kind="shape"),
    bad("ValueMLP.forward", "x", lambda: ValueMLP(fp_size=8)([[0.0] * 8]), kind="list"),
    bad("ValueMLP.forward", "x", lambda: ValueMLP(fp_size=8)(torch.full((1, 8), NAN)), kind="nan"),
    bad("train_value_mlp", "smiles", lambda: train_value_mlp(None, None), kind="none"),
    bad("train_value_mlp", "smiles", lambda: train_value_mlp(iter(["CCO"]), [1.0]), kind="iterator"),
    bad("train_value_mlp", "costs", lambda: train_value_mlp(["CCO"], [float("inf")]), kind="inf"),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_refuses(case):
    assert_refuses(case)


def test_every_public_callable_is_covered():
    exempt = {"steps_criterion": "takes no argument"}
    assert coverage_gaps(crebm, CASES, exempt=exempt) == {}


# ------------------------------------------------------------------------ load_route_benchmark: file contents
TREE = {"retro_routes": [[f"{T}>0>CC(=O)O.NCc1ccccc1"]], "materials": ["CC(=O)O", "NCc1ccccc1"], "depth": 1}
ENTRY = {"num_reaction_trees": 1, "depth": 1, "1": TREE}


@pytest.mark.parametrize(
    "change, named",
    [
        ({"num_reaction_trees": 0}, "num_reaction_trees"),
        ({"num_reaction_trees": True}, "num_reaction_trees"),
        ({"depth": -1}, "depth"),
        ({"depth": 2.5}, "depth"),
        ({"1": {**TREE, "materials": ["C(("]}}, "materials"),
        ({"1": {**TREE, "materials": "CCO"}}, "materials"),
        ({"1": {**TREE, "materials": []}}, "materials"),
        ({"1": {**TREE, "retro_routes": [["C((>0>CCO"]]}}, "product"),
    ],
    ids=["zero-trees", "bool-trees", "negative-depth", "float-depth", "smiles", "string", "empty", "product"],
)
def test_load_route_benchmark_refuses_bad_records(tmp_path, change, named):
    path = tmp_path / "test_dataset.json"
    path.write_text(json.dumps({"7": {**ENTRY, **change}}))
    with pytest.raises(DataError, match=named) as info:
        load_route_benchmark(path)
    assert "\n" not in str(info.value) and "'7'" in str(info.value)


def test_load_route_benchmark_refuses_a_file_without_targets(tmp_path):
    path = tmp_path / "test_dataset.json"
    path.write_text("{}")
    with pytest.raises(DataError, match="no targets"):
        load_route_benchmark(path)
    path.write_text(json.dumps({"7": ENTRY}))
    assert load_route_benchmark(path) == [BenchmarkTask(T, (("CC(=O)O", "NCc1ccccc1"),), 1)]


def test_empty_pools_and_edge_yields_are_still_answered():
    """A target the planner found no route for ranks to nothing; yields 0 and 1 are valid."""
    assert base_ranking([]) == [] and heuristic_ranking([], "price", STOCK) == [] and rerank([], T, ENERGY) == []
    phi = steps_criterion()
    assert preference_pairs(T, [], phi) == [] and preference_pairs(T, [OTHER], phi, gt=ROUTE) == []
    assert ROUTE.route_yield({"amide_coupling-1": 0.0}) == 0.0 and ROUTE.route_yield({"other": 1}) == 1.0
    assert Route(T).starting_materials() == (T,) and Route(T).depth == 0
