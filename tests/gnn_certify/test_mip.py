"""MIP-level behaviour: exact optimum, abt's local cuts, the greedy attack, node-task pruning, the benchmark."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from icml24.gnn_certify import NOT_ROBUST, ROBUST, brute_force_minimum, build_space, certify, compute_bounds
from icml24.gnn_certify.attacks import greedy_attack
from icml24.gnn_certify.exact_cases import synthetic_case
from icml24.gnn_certify.mip import CertificationMIP, needed_nodes
from icml24.threads import single_thread
from tests.conftest import needs_mutag

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("seed", [1])
def test_optimum_and_abt_local_cuts(seed):
    """Solved to optimality sbt and abt return the brute-force minimum; on this case abt branches and separates
    local cuts below the root (and global ones at the root)."""
    net, data = synthetic_case(seed, n=6)
    space, x, _, _ = build_space(net, data, global_budget=2, strength=2)
    c = int(np.argmax(net.forward(x, space.adj.astype(float))))
    bf, _ = brute_force_minimum(net, space, c, 1 - c)
    res = {}
    with single_thread():
        for mode in ("sbt", "abt"):  # basic's optimum is checked by the exactness claim
            mip = CertificationMIP(net, space, compute_bounds(net, space, mode), c, 1 - c, separator=mode == "abt")
            res[mode] = mip.solve(time_limit=60, decision=False, params={"separating/aggregation/freq": -1})
            assert res[mode].status == "optimal"
            assert abs(res[mode].primal - bf) <= 1e-5 * (1 + abs(bf))
    assert res["abt"].nodes > 1 and res["abt"].local_cuts > 0 and res["abt"].global_cuts > 0


def test_greedy_attack_never_claims_robustness():
    hits = 0
    for seed in range(4):
        net, data = synthetic_case(seed, n=6)
        space, x, _, _ = build_space(net, data, global_budget=2, strength=2)
        logits = net.forward(x, space.adj.astype(float))
        c = int(np.argmax(logits))
        net.dense[-1].bias[c] -= 0.8 * (logits[c] - logits[1 - c])  # a small margin: attacks exist
        m, flips = greedy_attack(net, space, c, 1 - c, restarts=2, seed=seed)
        bf, _ = brute_force_minimum(net, space, c, 1 - c)
        assert space.is_feasible(flips) and m >= bf - 1e-9  # an attack, never better than the optimum
        hits += m < 0
        with single_thread():
            rep = certify(net, data, global_budget=2, strength=2, attack_first=True)
        for cert in rep.certificates:
            assert (cert.verdict == ROBUST) == (bf > 0) or cert.verdict == NOT_ROBUST and bf < 0
            if cert.status == "greedy attack":
                assert cert.verdict == NOT_ROBUST and cert.checked_margin < 0
    assert hits >= 1


def test_greedy_start_ends_an_attackable_run_before_presolving_with_the_same_verdicts():
    """The greedy attack handed to SCIP decides a not-robust target at once (status primallimit, no B&B
    node); on every target, with or without it, the verdict is the same and agrees with brute force."""
    seen_primal_stop = 0
    for seed in range(3):
        net, data = synthetic_case(seed, n=6)
        space, x, _, _ = build_space(net, data, global_budget=2, strength=2)
        logits = net.forward(x, space.adj.astype(float))
        c = int(np.argmax(logits))
        net.dense[-1].bias[c] -= 0.8 * (logits[c] - logits[1 - c])  # a small margin: attacks exist
        bf, _ = brute_force_minimum(net, space, c, 1 - c)
        with single_thread():
            on = certify(net, data, global_budget=2, strength=2, time_limit=30)
            off = certify(net, data, global_budget=2, strength=2, time_limit=30, greedy_start=False)
        for a, b in zip(on.certificates, off.certificates):
            assert a.verdict == b.verdict == (NOT_ROBUST if bf < 0 else ROBUST)
            if a.verdict == NOT_ROBUST:
                assert a.checked_margin < 0 and a.margin_upper >= bf - 1e-6
            if a.status == "primallimit":
                seen_primal_stop += 1
                assert a.verdict == NOT_ROBUST and a.nodes == 0
    assert seen_primal_stop >= 1


def test_node_task_models_only_what_reaches_the_target():
    import torch
    from torch_geometric.data import Data

    from icml24.gnn_certify import SAGENodeClassifier, network_from_module

    torch.manual_seed(0)
    net = network_from_module(SAGENodeClassifier(2, 2, hidden_channels=3))
    # a path 0 -> 1 -> 2 -> 3 -> 4 plus 4 -> 3: the 2-hop subgraph of node 4 is {2, 3, 4}
    ei = torch.tensor([[0, 1, 2, 3, 4], [1, 2, 3, 4, 3]])
    data = Data(x=torch.ones(5, 2), edge_index=ei)
    space, _, subset, _ = build_space(net, data, node=4, global_budget=1, strength=1)
    assert sorted(subset.tolist()) == [2, 3, 4]
    need = needed_nodes(net, space)
    t = space.target_node
    assert need[-1].sum() == 1 and need[-1][t] and need[0].sum() == 2  # layer 1: node 4 and its in-neighbour 3


@needs_mutag
def test_benchmark_runs(tmp_path, capsys):
    spec = importlib.util.spec_from_file_location("bench_gc", ROOT / "benchmarks" / "gnn_certify.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert (
        bench.main(
            ["--graphs", "16", "--budget", "0.02", "--time-limit", "20", "--modes", "sbt", "--out", str(tmp_path)]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "threads: 1" in out and "decided" in out
    assert "against the official C plugin" in out and "fast+greedy-start" in out and "load average" in out
    assert list(tmp_path.glob("*-bench-gnn_certify/results.json"))
