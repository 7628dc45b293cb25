"""A 2-node Ray cluster on this machine (``ray.cluster_utils``), connected to by address (so the
upskills package is shipped as a runtime_env module): a node leaving mid-run, and teach."""

from __future__ import annotations

import threading
import time

import pytest

ray = pytest.importorskip("ray")

from upskills.executor import verdict_signature  # noqa: E402
from upskills.executor.ray_executor import RayExecutor  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()


@pytest.mark.slow  # ~35 s on 2 shared cores
def test_node_leaving_mid_run_is_survived(cluster, units, local_results):
    keep = ("softmax_rows", "row_sum_fp16", "row_sum_fp16__drops_tail", "syntax")
    units = [u for u in units if u.key in keep]
    local_results = {k: local_results[k] for k in keep}

    worker = cluster.add_node(num_cpus=1)
    removed: list[str] = []
    ex = RayExecutor("cpu", address=cluster.address, actors=2)

    def remove_worker_node() -> None:
        deadline = time.monotonic() + 120
        while not removed and time.monotonic() < deadline:
            for key, actor in list(ex.in_flight.items()):
                if actor.node == worker.node_id:
                    time.sleep(0.3)
                    cluster.remove_node(worker)
                    removed.append(key)
                    break
            time.sleep(0.02)

    thread = threading.Thread(target=remove_worker_node, daemon=True)
    thread.start()
    got = {}
    for r in ex.run(units):
        assert r.key not in got  # never twice
        got[r.key] = r
    thread.join(timeout=5)
    assert removed, "the worker node never held a unit"
    assert ex.stats.node_losses >= 1
    assert sorted(got) == sorted(local_results)  # nothing lost
    assert got[removed[0]].attempts == 2  # re-run on the surviving node
    for key, r in got.items():  # a node loss is not the candidate's crash
        assert verdict_signature(r.verdict) == verdict_signature(local_results[key].verdict)
    ex.close()  # leaves Ray connected: the cluster fixture ends it


@pytest.mark.slow
def test_teach_spreads_tasks_over_the_cluster(cluster, tmp_path):
    import json

    from tests.agent.helpers import calls, kernel
    from upskills.agent.config import AgentConfig
    from upskills.executor.teach_ray import teach_on_ray
    from upskills.trace import read_trace

    script = tmp_path / "teacher.json"  # each task's session replays it from the start
    replies = [calls(("check", {"source": kernel("vector_add")})), calls(("submit", {}))]
    script.write_text(json.dumps([r.model_dump(mode="json") for r in replies]))
    config = AgentConfig(role="teacher", device="cpu", check_seeds=1, max_turns=4)
    out = tmp_path / "traces"
    ran: list[tuple[str, str]] = []
    on_task = lambda name, path, outcome: ran.append((name, outcome))  # noqa: E731
    spec = f"mock/{script}"
    paths = teach_on_ray(
        ["vector_add", "relu"], spec, out, config, address=cluster.address, on_task=on_task
    )
    assert [p.name for p in paths] == ["vector_add.jsonl", "relu.jsonl"]
    ends = {p.stem: read_trace(p).end for p in paths}
    assert ends["vector_add"] is not None and ends["vector_add"].outcome == "solved"
    assert ends["relu"] is not None and ends["relu"].outcome != "solved"  # wrong kernel for relu
    assert sorted(ran) == sorted((k, e.outcome) for k, e in ends.items() if e is not None)
    ran.clear()
    teach_on_ray(
        ["vector_add", "relu"], spec, out, config, address=cluster.address, on_task=on_task
    )
    assert sorted(ran) == [("relu", "skipped"), ("vector_add", "skipped")]  # resume: nothing
