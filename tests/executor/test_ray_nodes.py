"""A node leaving mid-run: a 2-node Ray cluster on this machine (``ray.cluster_utils``), the
executor connecting by address (so the upskills package is shipped as a runtime_env module)."""

from __future__ import annotations

import threading
import time

import pytest

ray = pytest.importorskip("ray")

from upskills.executor import verdict_signature  # noqa: E402
from upskills.executor.ray_executor import RayExecutor  # noqa: E402


def test_node_leaving_mid_run_is_survived(units, local_results):
    from ray.cluster_utils import Cluster

    keep = ("softmax_rows", "row_sum_fp16", "row_sum_fp16__drops_tail", "syntax")
    units = [u for u in units if u.key in keep]
    local_results = {k: local_results[k] for k in keep}

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    worker = cluster.add_node(num_cpus=1)
    removed: list[str] = []
    try:
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
        ex.close()
    finally:
        ray.shutdown()
        cluster.shutdown()
