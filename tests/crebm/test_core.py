"""Unit and property tests of CREBM's parts: templates, world, stock, routes, energy, loss, search, rerank."""

import json
import math
import socket
import urllib.request

import pytest
import torch
import torch.nn.functional as F

from icml24.crebm import (
    EnergyConfig,
    EnergyTransformer,
    PlannedRoute,
    Route,
    Stock,
    bradley_terry_loss,
    feasibility_criterion,
    load_route_benchmark,
    preference_pairs,
    rerank,
    retro_star_0,
    sequence_scores,
    steps_criterion,
    to_route_benchmark,
    train_value_mlp,
)
from icml24.crebm.energy import batch_inputs
from icml24.crebm.world import (
    DEFAULT_TEMPLATES,
    Step,
    enumerate_routes,
    inchikey14,
    load_templates,
    molbloom_buyable,
    replay_forward,
)
from icml24.errors import InputError

# one known reaction per template of the default world: reactants (template order) and product
KNOWN = {
    "amide_coupling-1": (("CC(=O)O", "NCc1ccccc1"), "CC(=O)NCc1ccccc1"),
    "amide_coupling-2": (("CC(=O)Cl", "NCc1ccccc1"), "CC(=O)NCc1ccccc1"),
    "esterification-1": (("CC(=O)Cl", "OCc1ccccc1"), "CC(=O)OCc1ccccc1"),
    "esterification-2": (("CC(=O)O", "OCc1ccccc1"), "CC(=O)OCc1ccccc1"),
    "amination-1": (("Clc1ccccc1", "C1CCNCC1"), "c1ccc(N2CCCCC2)cc1"),
    "amination-2": (("O=Cc1ccccc1", "C1CCNCC1"), "c1ccc(CN2CCCCC2)cc1"),
    "alkylation-1": (("BrCc1ccccc1", "C1CCNCC1"), "c1ccc(CN2CCCCC2)cc1"),
    "ether-2": (("CCBr", "OCc1ccccc1"), "CCOCc1ccccc1"),
    "sulfonamide-1": (("CS(=O)(=O)Cl", "NCc1ccccc1"), "CS(=O)(=O)NCc1ccccc1"),
    "BOC-deprotection": (("CC(C)(C)OC(=O)NCc1ccccc1",), "NCc1ccccc1"),
}


@pytest.fixture(scope="module")
def trained(crebm_trained):
    return crebm_trained


@pytest.mark.parametrize("name", DEFAULT_TEMPLATES)
def test_every_template_parses_and_round_trips_a_known_reaction(name):
    (tpl,) = load_templates([name])
    reactants, product = KNOWN[name]
    assert product in tpl.forward(reactants)
    assert tuple(sorted(reactants)) in tpl.retro(product)


def test_forward_synthesis_then_retro_recovers_the_starting_set(trained):
    world = trained.world
    by_name = {t.name: t for t in world.templates}
    for target in world.train[:30]:
        for step in target.sampled.steps:
            assert step.reactants in by_name[step.template].retro(step.product)
        keys = {r.key() for r in target.alternatives}
        assert target.sampled.key() in keys and target.gt.key() in keys
        assert replay_forward(target.gt, world.templates) == target.smiles
        # the ground truth is the cheapest tree per unit of product
        assert world.route_cost(target.gt) == min(world.route_cost(r) for r in target.alternatives)
        assert target.smiles not in world.stock and target.gt.is_complete(world.stock)


def test_enumeration_finds_both_amide_disconnections():
    stock = Stock({"CC(=O)O": 1.0, "CC(=O)Cl": 2.0, "NCc1ccccc1": 3.0})
    routes = enumerate_routes("CC(=O)NCc1ccccc1", load_templates(), stock, max_depth=1)
    assert {r.materials_string() for r in routes} == {"CC(=O)O.NCc1ccccc1", "CC(=O)Cl.NCc1ccccc1"}


def test_stock_lookups_never_touch_the_network(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("network access")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(urllib.request, "urlretrieve", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    assert molbloom_buyable("CCO") in (True, False)
    assert molbloom_buyable("c1ccccc1C(=O)O") in (True, False)
    stock = Stock({"CCO": 1.0})
    assert "OCC" in stock and "CCC" not in stock and stock.price("C(O)C") == 1.0


def test_route_identity_is_the_inchikey_set():
    a = Route("CC(=O)NCc1ccccc1", (Step("CC(=O)NCc1ccccc1", ("CC(=O)O", "NCc1ccccc1"), "amide_coupling-1"),))
    b = Route("CC(=O)NCc1ccccc1", (Step("CC(=O)NCc1ccccc1", ("NCc1ccccc1", "OC(C)=O"), ""),))
    c = Route("CC(=O)NCc1ccccc1", (Step("CC(=O)NCc1ccccc1", ("CC(=O)Cl", "NCc1ccccc1"), ""),))
    assert a.key() == b.key() != c.key()
    assert a.key() == tuple(sorted([inchikey14("CC(=O)O"), inchikey14("NCc1ccccc1")]))
    assert len(a.key()[0]) == 14
    deep = Route("CCCO", (Step("CCCO", ("CCO", "N"), ""), Step("CCO", ("CO", "O"), "")))
    assert deep.starting_materials() == ("CO", "N", "O") and deep.depth == 2 and deep.n_steps == 2


def test_bradley_terry_loss_against_a_hand_computation():
    c = torch.tensor([0.3, -1.2, 2.0], dtype=torch.float64)
    r = torch.tensor([0.1, 0.5, -1.0], dtype=torch.float64)
    hand = -sum(math.log(1.0 / (1.0 + math.exp(-(x - y)))) for x, y in zip(c.tolist(), r.tolist())) / 3
    assert bradley_terry_loss(c, r).item() == pytest.approx(hand, rel=1e-12)


def test_score_is_the_length_normalised_materials_log_likelihood():
    model = EnergyTransformer(EnergyConfig(16, 16, 1, 2, 32, 0.0), seed=0).eval()
    targets, mats = ["CCO", "c1ccccc1N"], ["CC.O", "Nc1ccccc1.Br"]
    s = sequence_scores(model, targets, mats)
    for i, (t, m) in enumerate(zip(targets, mats)):  # one sequence at a time, no padding
        src, sl, tin, tl, tout, _ = batch_inputs([t], [m])
        logp = F.log_softmax(model(src, sl, tin, tl)[0].double(), -1)
        ids = tout[0].tolist()[: len(m)]  # the material characters; the '$' prediction left out
        hand = sum(logp[j, ids[j]].item() for j in range(len(m))) / len(m)
        assert s[i].item() == pytest.approx(hand, abs=1e-5)


def test_preference_pairs_follow_the_criterion():
    t = "CC(=O)NCc1ccccc1"
    one = Route(t, (Step(t, ("CC(=O)O", "NCc1ccccc1"), "amide_coupling-1"),))
    two = Route(t, (Step(t, ("CC(=O)O", "I"), ""), Step("I", ("NCc1ccccc1", "C"), "")))
    pairs = preference_pairs(t, [two, one], steps_criterion())
    assert pairs == [(t, one.materials_string(), two.materials_string())]
    phi = feasibility_criterion(one, load_templates())
    assert phi(one) == 2.0 and phi(two) < 2.0


def test_planner_and_rerank(trained):
    world, onestep = trained.world, trained.onestep
    hits = 0
    for target in world.test[:10]:
        found = retro_star_0(target.smiles, onestep, world.stock, target.depth, beam_size=5)
        costs = [p.cost for p in found]
        assert costs == sorted(costs) and len({p.route.key() for p in found}) == len(found)
        assert all(p.route.is_complete(world.stock) for p in found)
        hits += any(p.route.key() == target.gt.key() for p in found)
        if found:
            same = rerank(found, target.smiles, trained.crebm, alpha=0.0)
            assert [r.route for r in same] == [p.route for p in found]
            moved = rerank(found, target.smiles, trained.crebm, alpha=1.0, top=3, stock=world.stock)
            assert len(moved) == min(3, len(found))
            assert all(r.total == pytest.approx(r.base_cost + r.energy) for r in moved)
    assert hits >= 7


def test_rerank_works_on_plain_routes_from_any_planner():
    t = "CC(=O)NCc1ccccc1"
    a = Route(t, (Step(t, ("CC(=O)O", "NCc1ccccc1"), ""),))
    b = Route(t, (Step(t, ("CC(=O)Cl", "NCc1ccccc1"), ""),))
    out = rerank([a, b], t, None, base_costs=[2.0, 1.0])
    assert [r.route for r in out] == [b, a]
    assert rerank([PlannedRoute(a, 0.5), PlannedRoute(b, 0.1)], t, None)[0].route == b
    with pytest.raises(InputError, match="stock"):
        rerank([a], t, None, stock=Stock({"CC(=O)O": 1.0}))


def test_benchmark_json_round_trip(tmp_path, trained):
    path = tmp_path / "test_dataset.json"
    path.write_text(json.dumps(to_route_benchmark(trained.world.test[:5])))
    tasks = load_route_benchmark(path)
    assert [t.product for t in tasks] == [x.smiles for x in trained.world.test[:5]]
    assert [set(t.materials[0]) for t in tasks] == [set(x.gt.starting_materials()) for x in trained.world.test[:5]]
    assert [t.depth for t in tasks] == [x.depth for x in trained.world.test[:5]]


def test_retro_star_with_a_value_mlp(trained):
    world, onestep = trained.world, trained.onestep
    mols = [t.smiles for t in world.train[:20]]
    value = train_value_mlp(mols, [float(t.gt.n_steps) for t in world.train[:20]], epochs=50)
    assert value.value(mols[0]) >= 0.0
    t = world.test[0]
    found = retro_star_0(t.smiles, onestep, world.stock, t.depth, beam_size=5, value_fn=value.value)
    assert all(p.route.is_complete(world.stock) for p in found)
