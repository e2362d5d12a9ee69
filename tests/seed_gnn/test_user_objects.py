"""The user's PyG objects as they come: PyG's own models, adj_t graphs, optional masks, NumPy ids, float64
features, the model's device, and the user's model left as it was."""

import gc
import warnings

import numpy as np
import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.data import Data
from torch_geometric.nn.models import GCN, GIN, GraphSAGE

from icml24.data import csbm
from icml24.errors import InputError
from icml24.nn import build_backbone, pretrain_inductive
from icml24.seed_gnn import EGNNEditor, FineTuneEditor, GREEditor, SeedGNNEditor, select_targets
from icml24.seed_gnn.editor import mlp_shape
from icml24.seed_gnn.workflow import train_rest_split


@pytest.fixture(scope="module")
def graph():
    data = csbm(
        300,
        n_classes=4,
        avg_degree=6.0,
        homophily=0.75,
        snr=0.25,
        n_features=60,
        features="bow",
        words_per_node=10,
        num_train_per_class=0,
        num_val=0,
        num_test=0,
        seed=4,
    )
    return train_rest_split(data, 80, 80, seed=1)


def _pyg(cls, graph, **kwargs):
    torch.manual_seed(0)
    gnn = cls(graph.num_features, 16, 2, out_channels=4, **kwargs)
    pretrain_inductive(gnn, graph, epochs=40, seed=0)
    return gnn


def _snapshot(m):
    return (
        {k: v.detach().clone() for k, v in m.state_dict().items()},
        [p.requires_grad for p in m.parameters()],
        m.training,
    )


def _same(m, snap):
    sd, flags, training = snap
    return (
        all(torch.equal(v, sd[k]) for k, v in m.state_dict().items())
        and [p.requires_grad for p in m.parameters()] == flags
        and m.training == training
    )


@pytest.mark.parametrize("cls", [GCN, GraphSAGE, GIN])
def test_pyg_models_edit_without_extra_arguments(graph, cls):
    gnn = _pyg(cls, graph, dropout=0.5)
    assert mlp_shape(gnn) == (16, 2, 0.5)  # read from PyG's own attributes (dropout is a Dropout module)
    nodes, labels = select_targets(gnn, graph, 4, seed=0)
    assert nodes
    ed = SeedGNNEditor(gnn, graph)
    recs = ed.edit_many(nodes, labels)
    assert ed.mlp.dropout == 0.5 and recs[-1].success_rate == 1.0


def test_any_module_with_forward_x_edge_index(graph):
    class Plain(torch.nn.Module):  # no hidden_channels / num_layers / dropout attributes
        def __init__(self):
            super().__init__()
            self.inner = GCN(graph.num_features, 8, 2, out_channels=4)

        def forward(self, x, edge_index):
            return self.inner(x, edge_index)

    gnn = Plain()
    assert mlp_shape(gnn) == (32, 2, 0.1)
    assert mlp_shape(gnn, 12, 3, 0.2) == (12, 3, 0.2)
    ed = SeedGNNEditor(gnn, graph, mlp_hidden=12, mlp_layers=3)
    assert len(ed.mlp.layers) == 3 and ed.mlp.hidden_channels == 12
    ed.edit(np.int64(5), np.int32(1))  # NumPy integers as ids and labels
    assert ed.targets == [5] and type(ed.targets[0]) is int


def test_adj_t_graph_edits_like_edge_index(graph):
    gnn = _pyg(GCN, graph, dropout=0.1)
    nodes, labels = select_targets(gnn, graph, 4, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        sparse = T.ToSparseTensor()(graph.clone())
        assert getattr(sparse, "edge_index", None) is None and sparse.adj_t.is_sparse_csr
        for cls in (SeedGNNEditor, FineTuneEditor, GREEditor):
            a, b = cls(gnn, graph), cls(gnn, sparse)
            ra, rb = a.edit_many(nodes, labels), b.edit_many(nodes, labels)
            assert [r.steps for r in ra] == [r.steps for r in rb]
            torch.testing.assert_close(a.logits(), b.logits(), rtol=1e-4, atol=1e-4)
    assert sparse.adj_t.is_sparse_csr and getattr(sparse, "edge_index", None) is None  # the user's Data as it was


def test_optional_masks_and_float64_features(graph):
    gnn = build_backbone("gcn", graph.num_features, 4, seed=0)
    pretrain_inductive(gnn, graph, epochs=30, seed=0)
    nodes, labels = select_targets(gnn, graph, 3, seed=0)
    bare = Data(x=graph.x.double(), edge_index=graph.edge_index, y=graph.y, train_mask=graph.train_mask)
    ed = SeedGNNEditor(gnn, bare)
    rec = ed.edit(nodes[0], labels[0])
    assert rec.target_correct and np.isnan(rec.drawdown) and np.isnan(ed.base_acc[2])
    assert ed.data.x.dtype == torch.float32 and bare.x.dtype == torch.float64  # cast for us, not in place
    assert FineTuneEditor(gnn, Data(x=graph.x, edge_index=graph.edge_index, y=graph.y)).edit(0, 1).steps >= 0
    with pytest.raises(InputError, match="train_mask"):
        SeedGNNEditor(gnn, Data(x=graph.x, edge_index=graph.edge_index, y=graph.y))
    with pytest.raises(InputError, match="neither edge_index nor adj_t"):
        SeedGNNEditor(gnn, Data(x=graph.x, y=graph.y, train_mask=graph.train_mask))


@pytest.mark.parametrize("how", ["close", "with", "del"])
def test_user_model_unchanged_after_the_editor(graph, how):
    gnn = _pyg(GCN, graph, dropout=0.5)
    gnn.train()  # the user's mode, whatever it is, is theirs
    snap = _snapshot(gnn)
    nodes, labels = select_targets(gnn, graph, 3, seed=0)
    for cls in (SeedGNNEditor, EGNNEditor, FineTuneEditor):
        if how == "with":
            with cls(gnn, graph) as ed:
                ed.edit_many(nodes, labels)
                assert _same(gnn, snap)  # also while editing
        else:
            ed = cls(gnn, graph)
            ed.edit_many(nodes, labels)
            assert _same(gnn, snap)
            if how == "close":
                ed.close()
            else:
                del ed
                gc.collect()
        assert _same(gnn, snap)
    closed = SeedGNNEditor(gnn, graph)
    closed.close()
    with pytest.raises(InputError, match="closed"):
        closed.edit(nodes[0], labels[0])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_editor_runs_on_the_models_device(graph):
    gnn = _pyg(GCN, graph, dropout=0.1).cuda()
    nodes, labels = select_targets(gnn, graph.clone().to("cuda"), 4, seed=0)
    for cls in (SeedGNNEditor, EGNNEditor, FineTuneEditor, GREEditor):
        ed = cls(gnn, graph)  # the graph on the CPU: moved to the model's device
        recs = ed.edit_many(nodes, labels)
        assert ed.logits().device.type == "cuda" and len(recs) == len(nodes)
        if cls is SeedGNNEditor:
            assert next(ed.mlp.parameters()).device.type == "cuda" and recs[-1].success_rate == 1.0
    cpu = SeedGNNEditor(gnn.cpu(), graph)
    gpu = SeedGNNEditor(gnn.cuda(), graph)
    rc, rg = cpu.edit_many(nodes, labels), gpu.edit_many(nodes, labels)
    assert [r.target_correct for r in rc] == [r.target_correct for r in rg]


@pytest.mark.parametrize("name", ["gcn", "sage", "gin"])
def test_chunked_outputs_equal_the_full_forward(graph, name):
    from icml24.seed_gnn.graph_input import chunked_outputs, gnn_outputs, prepare_graph

    gnn = build_backbone(name, graph.num_features, 4, seed=0)
    pretrain_inductive(gnn, graph, epochs=5, seed=0)
    d = prepare_graph(graph, gnn)
    full = gnn_outputs(gnn, d.x, d.adj)
    torch.testing.assert_close(chunked_outputs(gnn, d, gnn.num_layers, 37), full, rtol=1e-5, atol=1e-5)


def test_editor_with_chunked_inference_edits_the_same(graph):
    gnn = _pyg(GCN, graph, dropout=0.1)
    nodes, labels = select_targets(gnn, graph, 4, seed=0)
    a, b = SeedGNNEditor(gnn, graph), SeedGNNEditor(gnn, graph, inference_batch=50)
    torch.testing.assert_close(a.g, b.g, rtol=1e-5, atol=1e-5)
    ra, rb = a.edit_many(nodes, labels), b.edit_many(nodes, labels)
    assert [r.steps for r in ra] == [r.steps for r in rb]
    f = FineTuneEditor(gnn, graph, inference_batch=64)
    torch.testing.assert_close(f.logits(), a.g, rtol=1e-5, atol=1e-5)

    class NoDepth(torch.nn.Module):
        def forward(self, x, edge_index):
            return gnn(x, edge_index)

    with pytest.raises(InputError, match="num_layers"):
        SeedGNNEditor(NoDepth(), graph, inference_batch=50)
