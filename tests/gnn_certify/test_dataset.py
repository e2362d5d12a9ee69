"""certify_dataset: one report per graph of a Batch / Dataset / DataLoader / list, equal to certifying each graph
alone; resumable results (a truncated last line is dropped, other models or graphs are refused); a summary."""

import json

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data
from torch_geometric.loader import DataLoader

from icml24.errors import InputError
from icml24.gnn_certify import NOT_ROBUST, ROBUST, certify, certify_dataset
from tests.gnn_certify.test_soundness import _graph_case


def _same(a, b):
    assert a.verdict == b.verdict and a.predicted == b.predicted
    for ca, cb in zip(a.certificates, b.certificates, strict=True):
        assert (ca.target, ca.verdict, ca.flips) == (cb.target, cb.verdict, cb.flips)
        assert ca.margin_lower == pytest.approx(cb.margin_lower, abs=1e-6)


def _graphs(f, n=3):
    out = []
    for seed in range(n):
        rng = np.random.default_rng(seed + 40)
        k = 5 + seed % 2
        adj = np.triu(rng.random((k, k)) < 0.5, 1)
        adj = adj | adj.T
        out.append(
            Data(
                x=torch.tensor(rng.integers(0, 2, (k, f)).astype(np.float32)),
                edge_index=torch.tensor(np.stack(np.nonzero(adj)), dtype=torch.long),
            )
        )
    return out


def test_a_batch_of_three_graphs_gives_three_reports_equal_to_each_alone(tmp_path):
    model, _, _, _ = _graph_case(0)
    model.train()
    graphs = _graphs(model.convs[0].in_channels)
    batch = Batch.from_data_list(graphs)
    with pytest.raises(InputError, match="certify_dataset"):
        certify(model, batch, global_budget=2)  # a batch is never certified as one merged graph
    res = certify_dataset(model, batch, global_budget=2, time_limit=20, out=tmp_path / "r.jsonl")
    assert len(res) == 3 and model.training
    alone = [certify(model, g, global_budget=2, time_limit=20) for g in graphs]
    for got, want in zip(res.reports, alone):
        _same(got, want)
    s = res.summary
    assert s["graphs"] == 3 and s["robust"] + s["not_robust"] + s["unknown"] == 3
    assert s["solved"] == sum(v in (ROBUST, NOT_ROBUST) for v in res.verdicts)
    assert {ROBUST, NOT_ROBUST} & set(res.verdicts)
    # the same graphs as a list and through a DataLoader (two batches): the same verdicts
    for ds in (graphs, DataLoader(graphs, batch_size=2)):
        _same_all = certify_dataset(model, ds, global_budget=2, time_limit=20)
        assert _same_all.verdicts == res.verdicts


def test_resume_skips_finished_graphs_and_repairs_a_truncated_line(tmp_path):
    model, _, _, _ = _graph_case(0)
    graphs = _graphs(model.convs[0].in_channels)
    out = tmp_path / "r.jsonl"
    first = certify_dataset(model, graphs, global_budget=1, time_limit=20, out=out)
    lines = out.read_text().splitlines()
    assert len(lines) == 4 and json.loads(lines[0])["kind"] == "config"
    out.write_text("\n".join(lines[:3]) + "\n" + lines[3][: len(lines[3]) // 2])  # killed while writing graph 2
    again = certify_dataset(model, graphs, global_budget=1, time_limit=20, out=out)
    assert again.resumed == 2 and again.verdicts == first.verdicts
    assert len(out.read_text().splitlines()) == 4
    with pytest.raises(InputError, match="another model or other options"):
        certify_dataset(model, graphs, global_budget=2, time_limit=20, out=out)
    with pytest.raises(InputError, match="another graph"):
        certify_dataset(model, graphs[::-1], global_budget=1, time_limit=20, out=out)
    with pytest.raises(InputError, match="already holds results"):
        certify_dataset(model, graphs, global_budget=1, time_limit=20, out=out, resume=False)


def test_a_graph_certify_refuses_is_recorded_and_the_run_goes_on():
    model, _, _, _ = _graph_case(0)
    graphs = _graphs(model.convs[0].in_channels, 2)
    loops = Data(x=graphs[0].x, edge_index=torch.cat([graphs[0].edge_index, torch.tensor([[0], [0]])], dim=1))
    res = certify_dataset(model, [graphs[0], loops, graphs[1]], global_budget=1, time_limit=20)
    assert res.verdicts[1] == "refused" and "self-loops" in res.refused[1]
    assert res.summary["refused"] == 1 and res.reports[0] is not None
