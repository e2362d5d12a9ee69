"""Readers of the official artefacts: the MUTAG model and instances, and the official budget formulas."""

import json
import math

import numpy as np
import pytest
import torch

from icml24.errors import DataUnavailable
from icml24.gnn_certify import (
    build_space,
    load_model_json,
    mutag_instance,
    mutag_model,
    network_from_json,
    network_to_json,
    read_instance,
    run_model,
)
from tests.conftest import needs_mutag


@needs_mutag
def test_mutag_model_reproduces_the_official_labels():
    """The label in each .gcinfo is the official model's prediction: our reading must reproduce all of them."""
    model, net = mutag_model()
    assert [s.relu for s in net.sage] == [True, True, False] and net.num_classes == 2 and net.in_features == 7
    for i in range(188):
        inst = mutag_instance(i)
        out = run_model(model, inst.data.x, inst.data.edge_index, "graph")
        assert int(np.argmax(out)) == inst.label, i
        space, x, _, _ = build_space(net, inst.data, budget=0.1, max_nodes=64)
        np.testing.assert_allclose(net.forward(x, space.adj.astype(np.float64)), out, atol=1e-4)


@needs_mutag
def test_official_budgets_of_graph_0():
    """create_temporary_data_graphclassification.py graph_MUTAG_0.gcinfo tmp 0.1 2 1: Delta = ceil(38 * 0.1)."""
    _, net = mutag_model()
    inst = mutag_instance(0)
    assert inst.edge_entries == 38 and inst.data.num_nodes == 17
    space, _, _, _ = build_space(net, inst.data, budget=0.1, strength=2)
    assert space.global_budget == math.ceil(38 * 0.1) == 4
    deg = space.adj.sum(axis=1)
    np.testing.assert_array_equal(space.local_budget, np.maximum(0, deg - deg.max() + 2))
    assert space.num_slots == 17 * 16 // 2 and not space.directed


@needs_mutag
def test_json_round_trip(tmp_path):
    _, net = mutag_model()
    path = tmp_path / "model.json"
    path.write_text(json.dumps(network_to_json(net)))
    model2, net2 = load_model_json(path)
    for a, b in zip(net.sage, net2.sage):
        np.testing.assert_array_equal(a.w_root, b.w_root)
        np.testing.assert_array_equal(a.w_nbr, b.w_nbr)
    inst = mutag_instance(3)
    np.testing.assert_allclose(
        run_model(model2, inst.data.x, inst.data.edge_index, "graph"),
        run_model(mutag_model()[0], inst.data.x, inst.data.edge_index, "graph"),
        atol=1e-5,
    )


def test_read_ncinfo_and_node_json(tmp_path):
    p = tmp_path / "g.ncinfo"
    p.write_text("3 4 2 3 1 2\n0 1 1 2\n1 0 2 1\n0\n1\n\n")
    inst = read_instance(p)
    assert inst.node == 2 and inst.label == 1 and inst.num_classes == 3
    assert inst.data.x.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    layers = [
        {"L": 2},
        {
            "layer": "sage",
            "in_channels": 2,
            "out_channels": 4,
            "w1": np.ones((4, 2)).tolist(),
            "w2": np.ones((4, 2)).tolist(),
            "b": [0.0] * 4,
            "activation": True,
        },
        {
            "layer": "sage",
            "in_channels": 4,
            "out_channels": 3,
            "w1": np.eye(3, 4).tolist(),
            "w2": np.eye(3, 4).tolist(),
            "b": [0.0] * 3,
            "activation": False,
        },
    ]
    net = network_from_json(layers)
    assert net.task == "node" and net.num_classes == 3


def test_missing_data_names_files(tmp_path):
    with pytest.raises(DataUnavailable, match="model_MUTAG.json"):
        mutag_model(tmp_path)
    with pytest.raises(DataUnavailable, match="graph_MUTAG_5.gcinfo"):
        mutag_instance(5, tmp_path)


def test_graph_without_edges(tmp_path):
    p = tmp_path / "g.gcinfo"
    p.write_text("2 0 3 2 0\n0\n2\n")
    inst = read_instance(p)
    assert inst.data.edge_index.shape == (2, 0) and torch.equal(inst.data.x[1], torch.tensor([0.0, 0.0, 1.0]))


def test_module_from_network_matches_the_numpy_network_on_every_shape():
    """The classifier shape, any other graph stack (unequal widths, ReLU dense layers) and a node stack."""
    from icml24.gnn_certify import module_from_network, run_model
    from icml24.gnn_certify.network import DenseLayer, SageLayer, SageNetwork

    rng = np.random.default_rng(0)

    def sage(i, o, relu=True):
        return SageLayer(rng.standard_normal((o, i)), rng.standard_normal((o, i)), rng.standard_normal(o), relu)

    def dense(i, o, relu):
        return DenseLayer(rng.standard_normal((o, i)), rng.standard_normal(o), relu)

    nets = [
        SageNetwork((sage(3, 4), sage(4, 4)), (dense(4, 2, False),), "graph"),
        SageNetwork((sage(3, 5), sage(5, 4, relu=False)), (dense(4, 6, True), dense(6, 2, False)), "graph"),
        SageNetwork((sage(3, 5), sage(5, 2, relu=False)), (), "node"),
    ]
    adj = np.triu(rng.random((6, 6)) < 0.5, 1)
    adj = (adj | adj.T).astype(float)
    x = rng.standard_normal((6, 3))
    edge_index = np.array(np.nonzero(adj))
    for net in nets:
        got = run_model(module_from_network(net), x, edge_index, net.task)
        np.testing.assert_allclose(got, net.forward(x, adj), rtol=1e-4, atol=1e-4)
