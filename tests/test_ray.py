"""``verify --engine ray``: claims x seeds as Ray tasks on a local two-CPU cluster give the in-process results."""

import importlib.util
import json
import os

import pytest

from icml24.verify import verify

# Metrics that measure wall-clock time differ between any two runs; everything else must be equal (up to the
# last bits of floating-point sums).
_TIMED = ("seconds", "_ms", "ms_", "time", "speed")
CLAIMS = ["dynamic_attention/exact", "group_dro/alem-beats-smd-mero"]


def _untimed(metrics):
    return {k: v for k, v in metrics.items() if not any(t in k for t in _TIMED)}


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="the ray extra is not installed")
def test_ray_engine_equals_local_engine(tmp_path, monkeypatch):
    import ray

    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    local = verify(CLAIMS, scale="smoke", seeds=[0, 1], out=tmp_path / "local", progress=False)
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}}
    )
    try:
        remote = verify(CLAIMS, scale="smoke", seeds=[0, 1], out=tmp_path / "ray", progress=False, engine="ray")
    finally:
        ray.shutdown()
    assert remote.exit_code == local.exit_code == 0
    key = lambda r: (r["key"], r["seed"])  # noqa: E731
    a, b = sorted(local.records, key=key), sorted(remote.records, key=key)
    assert [key(r) for r in a] == [key(r) for r in b] and len(a) == 4
    for x, y in zip(a, b):
        assert x["status"] == y["status"] and x["holds"] == y["holds"]
        # equal up to BLAS summation order (the workers' thread pools are not the driver's): 1e-9 relative
        assert _untimed(y["metrics"]) == pytest.approx(_untimed(x["metrics"]), rel=1e-9, nan_ok=True), x["key"]
    cfg = json.loads((remote.run_dir.path / "config.json").read_text())
    assert cfg["engine"] == "ray" and cfg["seeds"] == [0, 1]
    lines = (remote.run_dir.path / "results.jsonl").read_text().splitlines()
    assert len(lines) == 4 and os.path.exists(remote.run_dir.path / "report.md")


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="the ray extra is not installed")
def test_ray_runs_each_shared_experiment_once(tmp_path, monkeypatch):
    import ray
    from toy_shared import METHOD

    from icml24 import registry

    counter = tmp_path / "counter"
    counter.write_text("")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setenv("TOY_SHARED_COUNTER", str(counter))
    tests_dir = os.path.dirname(os.path.abspath(__file__))
    registry.register(METHOD)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": {"OMP_NUM_THREADS": "1", "PYTHONPATH": tests_dir}},
    )
    try:
        targets = ["toy_shared/beats", "toy_shared/gap", "toy_shared/needs-data"]
        out = verify(targets, scale="smoke", seeds=[0, 1], out=tmp_path / "ray", progress=False, engine="ray")
    finally:
        ray.shutdown()
        registry.unregister(METHOD.slug)
    assert out.exit_code == 0 and len(out.records) == 6
    assert sorted(counter.read_text().split()) == ["0", "1"]  # two claims, one task per seed
    assert {r["status"] for r in out.records if r["claim"] == "needs-data"} == {"not_run"}
