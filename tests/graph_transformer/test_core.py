import networkx as nx
import numpy as np
import pytest
import torch
from torch_geometric.utils import to_undirected

from icml24.graph_transformer import (
    ShallowGT,
    attention_stats,
    fit_gnn,
    fit_hinge,
    hop_context,
    pattern_graph,
    sample_context,
)


def _random_graph(n, p, seed):
    g = nx.gnp_random_graph(n, p, seed=seed)
    ei = torch.tensor(list(g.edges), dtype=torch.long).T.reshape(2, -1)
    return g, to_undirected(ei, num_nodes=n)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hop_context_matches_networkx(seed):
    g, ei = _random_graph(40, 0.07, seed)
    ctx = hop_context(ei, 40, 3)
    ours = {(int(t), int(s)): int(d) for t, s, d in zip(ctx.target, ctx.source, ctx.dist)}
    truth = {(t, s): d for t, ds in nx.all_pairs_shortest_path_length(g, cutoff=3) for s, d in ds.items()}
    assert ours == truth


def test_attention_rows_sum_to_one():
    data = pattern_graph(120, seed=0, degree=3.0)
    ctx = hop_context(data.edge_index, 120, 3)
    model = ShallowGT(32, 3, seed=1)
    with torch.no_grad():
        model.b.copy_(torch.tensor([0.3, -1.0, 2.0, 0.5]))
        w = model.attend(data.x, ctx)
    sums = torch.zeros(120).index_add_(0, ctx.target, w)
    assert torch.allclose(sums, torch.ones(120), atol=1e-5)


def test_no_pe_with_identical_keys_equals_uniform():
    data = pattern_graph(100, seed=0, degree=3.0)
    ctx = hop_context(data.edge_index, 100, 3)
    soft = ShallowGT(32, 3, pe="none", seed=0)
    uni = ShallowGT(32, 3, attention="uniform", seed=0)
    with torch.no_grad():
        soft.W_K.zero_()  # every key identical (0): the softmax is uniform over each context
    torch.testing.assert_close(soft(data.x, ctx), uni(data.x, ctx))


def test_generator_ground_truth():
    data = pattern_graph(300, seed=3, gamma_d=0.3, core_dist=2, degree=3.0)
    p = data.patterns.double()
    torch.testing.assert_close(p @ p.T, torch.eye(p.shape[0], dtype=torch.float64), atol=1e-6, rtol=0)
    g = nx.Graph()
    g.add_nodes_from(range(300))
    g.add_edges_from(data.edge_index.T.tolist())
    disc = data.disc.tolist()
    for n in range(0, 300, 7):
        at = [s for s, d in nx.single_source_shortest_path_length(g, n, cutoff=2).items() if d == 2]
        vote = sum(disc[s] for s in at)
        assert int(data.margin[n]) == abs(vote)
        assert bool(data.valid[n]) == (abs(vote) >= 1)
        if vote:
            assert int(data.y[n]) == int(vote > 0)
    # features are patterns plus noise of norm <= tau
    kind = (data.x @ data.patterns.T).argmax(-1)
    assert float((data.x - data.patterns[kind]).norm(dim=1).max()) <= 0.1 + 1e-5


def test_training_finds_core_hop_and_records():
    data = pattern_graph(300, seed=0, degree=3.0, core_dist=2)
    ctx = hop_context(data.edge_index, 300, 3)
    valid = data.valid.nonzero().flatten()
    model = ShallowGT(32, 3, init_scale=0.0, seed=0).eval()
    hist = fit_hinge(model, data, valid[:64], context=ctx, steps=100, lr=1.0, record_every=20, monitor=valid[64:])
    assert not model.training  # mode restored
    assert int(model.b.detach()[1:].argmax()) + 1 == 2
    assert hist.stats[-1]["core_mass"] > hist.stats[0]["core_mass"]
    assert hist.stats[-1]["entropy"] < hist.stats[0]["entropy"]
    s = attention_stats(model, data, valid[64:], context=ctx)
    assert abs(sum(s[f"hop_mass_{z}"] for z in range(4)) - 1) < 1e-5


def test_sampled_context():
    data = pattern_graph(200, seed=0, degree=4.0)
    ctx = hop_context(data.edge_index, 200, 3)
    sub = sample_context(ctx, 2, seed=0)
    counts = np.bincount((sub.target * 4 + sub.dist).numpy(), minlength=800).reshape(200, 4)
    full = np.bincount((ctx.target * 4 + ctx.dist).numpy(), minlength=800).reshape(200, 4)
    assert (counts[:, 0] == 1).all() and (counts[:, 1:] == np.minimum(full[:, 1:], 2)).all()
    pe = sample_context(ctx, 2, seed=0, hop_weights=torch.tensor([0.0, 1.0, 0.0]))
    assert set(pe.dist.tolist()) <= {0, 2}
    model = ShallowGT(32, 3)
    assert model(data.x, sub).shape == (200,)


def test_fit_gnn_peers_run():
    data = pattern_graph(120, seed=0, degree=3.0)
    idx = data.valid.nonzero().flatten()[:30]
    for kind in ("gcn", "sage", "gps"):
        model = fit_gnn(data, idx, kind=kind, epochs=3)
        assert model(data.x, data.edge_index).shape == (120, 2)


def test_discriminative_fractions_count_nodes_nearer_their_own_class():
    from icml24.graph_transformer.experiments import discriminative_fractions

    e = torch.eye(3)
    # class 0: three nodes on e0 and one on e1 (not discriminative); class 1: four nodes on e1
    x = torch.stack([e[0], e[0], e[0], e[1], e[1], e[1], e[1], e[1]]) * torch.arange(1, 9).view(-1, 1)
    y = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    for rule in ("centroid", "pattern"):
        d = discriminative_fractions(x, y, rule=rule)
        assert d["fractions"] == [0.75, 1.0], rule
        assert len(d["spectrum"]) <= 10 and abs(sum(d["spectrum"]) - 1.0) < 1e-9  # 3 features: all of the trace


def _fit_on(y):
    data = pattern_graph(80, seed=0, degree=3.0)
    data.y = y(data.y)
    valid = data.valid.nonzero().flatten()
    model = ShallowGT(32, 3, init_scale=0.0, seed=0)
    fit_hinge(model, data, valid[:20], steps=30, lr=1.0)
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_fit_hinge_reads_two_labels_by_order():
    # the larger label is the +1 class: 0/1, -1/+1, -1/0 and 1/2 train the same model (-1/0 used to be one class)
    ref = _fit_on(lambda y: y)
    for to in (lambda y: 2 * y - 1, lambda y: y - 1, lambda y: y + 1):
        torch.testing.assert_close(_fit_on(to), ref, rtol=0, atol=0)


def test_gt_error_reads_labels_by_order():
    from icml24.graph_transformer.experiments import gt_error

    data = pattern_graph(80, seed=0, degree=3.0)
    ctx = hop_context(data.edge_index, 80, 3)
    model, nodes = ShallowGT(32, 3, seed=0), data.valid.nonzero().flatten()
    ref = gt_error(model, data, ctx, nodes)
    data.y = 2 * data.y - 1
    assert gt_error(model, data, ctx, nodes) == ref


def test_attention_stats_on_a_users_graph():
    from torch_geometric.data import Data

    data = pattern_graph(80, seed=0, degree=3.0)
    nodes = data.valid.nonzero().flatten()
    model = ShallowGT(32, 3, seed=0)
    full = attention_stats(model, data, nodes)
    plain = attention_stats(model, Data(x=data.x, edge_index=data.edge_index), nodes)  # no labels, no ground truth
    assert plain == {k: v for k, v in full.items() if k not in ("core_mass", "disc_mass")}
    with_disc = attention_stats(model, Data(x=data.x, edge_index=data.edge_index, disc=data.disc), nodes)
    assert with_disc == {k: v for k, v in full.items() if k != "core_mass"}
    users = Data(x=data.x, edge_index=data.edge_index, y=data.y)
    hist = fit_hinge(model, users, nodes[:20], steps=2, monitor=nodes[20:])
    assert set(hist.stats[-1]) == set(plain)


def test_attend_and_forward_take_any_float_dtype():
    data = pattern_graph(60, seed=0, degree=3.0)
    ctx = hop_context(data.edge_index, 60, 3)
    model = ShallowGT(32, 3, seed=0)
    torch.testing.assert_close(model.attend(data.x.double(), ctx), model.attend(data.x, ctx))
    torch.testing.assert_close(model(data.x.double(), ctx), model(data.x, ctx))
    fit_hinge(model.double(), data, data.valid.nonzero().flatten()[:10], steps=1)  # a float64 model, float32 data


def test_edge_cases_now_accepted():
    from torch_geometric.data import Data

    data = pattern_graph(60, seed=0, degree=3.0)
    ctx = hop_context(data.edge_index, 60, 3)
    w = torch.ones(3, requires_grad=True)
    assert sample_context(ctx, 2, hop_weights=w).dist.max() <= 3  # a weight tensor that requires grad
    idx = data.valid.nonzero().flatten()[:10]
    edgeless = Data(x=data.x, edge_index=torch.zeros(2, 0, dtype=torch.long), y=data.y)
    assert fit_gnn(edgeless, idx, epochs=1)(data.x, edgeless.edge_index).shape == (60, 2)
    # a deep radius on a small graph stops once nothing farther is reached
    deep = hop_context(data.edge_index, 60, 10**6)
    assert deep.hops == 10**6 and int(deep.dist.max()) < 60
