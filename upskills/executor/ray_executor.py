"""The ``ray`` executor: one warm verifier actor per GPU of a Ray cluster.

The driver keeps one unit in flight per actor and yields each verdict the moment it arrives, so
the caller can append it before anything else happens. What crosses the wire: a unit's JSON
(candidate source, options, key) and, once per task per node, the Task itself through Ray's
object store; back comes the UnitResult's JSON. Faults:

- an actor that dies (its process killed, out of memory, a kernel that took its GPU context
  down) is replaced; the unit it held is tried again on another actor, and a unit that kills
  ``max_attempts`` actors is recorded as the candidate's ``crash``;
- an actor lost with its node does not count against the unit, which is simply re-run
  elsewhere; the pool shrinks to what the cluster still has, and grows back when it can.

Ray is imported lazily: without it, building this executor raises an ExecutorError naming the
``upskills[ray]`` extra.
"""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from upskills.executor.base import (
    Executor,
    ExecutorError,
    UnitResult,
    WorkUnit,
    crash_verdict,
)

RAY_EXTRA = "pip install 'upskills[ray]'"


def import_ray() -> Any:
    """The ``ray`` module, or an ExecutorError saying which extra installs it."""
    try:
        import ray
    except ImportError as exc:
        raise ExecutorError(
            f"--executor ray needs Ray, which is not installed: {RAY_EXTRA}"
        ) from exc
    return ray


def connect(address: str | None, ship_code: bool | None = None) -> bool:
    """Connect to (or start) Ray unless this process already is; whether we started it.

    Args:
        address: ``auto``, ``HOST:PORT``, ``ray://HOST:PORT``, or None for a private local
            instance (no dashboard).
        ship_code: upload this ``upskills`` package to the cluster (``runtime_env`` py_modules,
            cached per node by content hash); default: when ``address`` is given.
    """
    ray = import_ray()
    if ray.is_initialized():
        return False
    runtime_env: dict[str, Any] = {}
    if address is not None if ship_code is None else ship_code:
        import upskills

        runtime_env["py_modules"] = [str(Path(upskills.__file__).parent)]
    kwargs: dict[str, Any] = {"log_to_driver": False, "runtime_env": runtime_env or None}
    if address is None:  # "local": a new instance, never a stale one found on disk
        kwargs["include_dashboard"] = False
    ray.init(address=address or "local", **kwargs)
    return True


class VerifierActor:
    """A Ray actor holding one warm verifier (wrapped by ``ray.remote`` at start-up)."""

    def __init__(self, device: str) -> None:
        """Args: device: ``cpu`` or ``cuda`` (Ray sets CUDA_VISIBLE_DEVICES to its GPU)."""
        from upskills.executor.judge import UnitJudge

        self.device = device
        self.judge: Any = None
        self.UnitJudge = UnitJudge

    def ready(self, label: str) -> str:
        """Start the judge under ``label``; returns the node id this actor runs on."""
        import ray

        node = ray.get_runtime_context().get_node_id()
        self.judge = self.UnitJudge(self.device, f"ray:{node[:8]}/{label}")
        return node

    def pid(self) -> int:
        """This actor's process id (tests kill it)."""
        return os.getpid()

    def close(self) -> None:
        """Stop the warm verifier (before the actor is killed)."""
        if self.judge is not None:
            self.judge.close()

    def check(self, task: Any, unit_json: str) -> str:
        """Judge one unit (its task arrives separately, through the object store)."""
        unit = WorkUnit.model_validate({**json.loads(unit_json), "task": task})
        return self.judge.judge(unit).model_dump_json()


@dataclass
class _Actor:
    handle: Any
    label: str
    node: str = ""
    ready_ref: Any = None
    busy: bool = False


@dataclass
class _Pending:
    unit: WorkUnit
    deaths: int = 0
    """Actors that died while holding this unit (node losses not counted)."""
    tries: int = 0


@dataclass
class _Stats:
    actors_started: int = 0
    actors_died: int = 0
    node_losses: int = 0
    crashes_recorded: int = 0
    retried: list[str] = field(default_factory=list)


class RayExecutor(Executor):
    """Verifier actors on a Ray cluster, one per GPU (``num_gpus=1``) or one per CPU slot.

    Args:
        device: ``cpu`` or ``cuda``.
        address: ``auto``, ``HOST:PORT`` or ``ray://HOST:PORT`` of a running cluster; None
            starts (or reuses) a local one in this process.
        actors: actor count; default every GPU of the cluster (CUDA) or every CPU (CPU).
        max_attempts: actors a unit may kill before it is recorded as a crash.
        ship_code: send this ``upskills`` package to the cluster (``runtime_env`` py_modules);
            default on when connecting to an existing cluster.
        start_timeout_s: how long the run may wait with no live actor before giving up.
    """

    name = "ray"

    def __init__(
        self,
        device: str,
        address: str | None = None,
        actors: int | None = None,
        max_attempts: int = 2,
        ship_code: bool | None = None,
        start_timeout_s: float = 600.0,
    ) -> None:
        super().__init__(device)
        self.ray = import_ray()
        self.max_attempts = max_attempts
        self.start_timeout_s = start_timeout_s
        self._owns_ray = connect(address, ship_code)
        self.requested = actors
        self._actor_cls = self.ray.remote(VerifierActor).options(
            num_gpus=1 if device == "cuda" else 0,
            num_cpus=0 if device == "cuda" else 1,
            max_restarts=0,
            max_task_retries=0,
        )
        self._actors: list[_Actor] = []
        self._next = 0
        self._task_refs: dict[str, Any] = {}
        self.stats = _Stats()
        self.in_flight: dict[str, _Actor] = {}
        """Unit key -> the actor judging it (read by tests and progress displays)."""

    def capacity(self) -> int:
        """Actors the cluster can hold now (GPUs, or CPUs on CPU), capped by ``actors``."""
        res = self.ray.cluster_resources()
        slots = int(res.get("GPU" if self.device == "cuda" else "CPU", 0))
        return min(slots, self.requested) if self.requested else slots

    def _start_actor(self) -> None:
        label = f"a{self._next}"
        self._next += 1
        handle = self._actor_cls.remote(self.device)
        self._actors.append(_Actor(handle, label, ready_ref=handle.ready.remote(label)))
        self.stats.actors_started += 1

    def _top_up(self) -> None:
        for _ in range(self.capacity() - len(self._actors)):
            self._start_actor()

    def _task_ref(self, unit: WorkUnit) -> Any:
        ref = self._task_refs.get(unit.task.hash)
        if ref is None:  # each distinct task enters the object store once; nodes cache it
            ref = self._task_refs[unit.task.hash] = self.ray.put(unit.task)
        return ref

    def _dispatch(self, actor: _Actor, item: _Pending, calls: dict[Any, tuple]) -> None:
        unit_json = item.unit.model_dump_json(exclude={"task"})
        ref = actor.handle.check.remote(self._task_ref(item.unit), unit_json)
        item.tries += 1
        actor.busy = True
        calls[ref] = (actor, item)
        self.in_flight[item.unit.key] = actor

    def _lost_with_node(self, actor: _Actor, exc: BaseException) -> bool:
        if "its node has died" in str(exc):
            return True
        alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        return bool(actor.node) and actor.node not in alive

    def _drop(self, actor: _Actor) -> None:
        if actor in self._actors:
            self._actors.remove(actor)
        self.stats.actors_died += 1
        try:
            self.ray.kill(actor.handle, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass

    def run(self, units: Iterable[WorkUnit]) -> Iterator[UnitResult]:
        """Judge ``units`` on the cluster; yield each result as it arrives."""
        ray = self.ray
        queue = deque(_Pending(u) for u in units)
        calls: dict[Any, tuple[_Actor, _Pending]] = {}
        self._top_up()
        idle_since = time.monotonic()
        while queue or calls:
            for actor in self._actors:
                if queue and actor.ready_ref is None and not actor.busy:
                    self._dispatch(actor, queue.popleft(), calls)
            starting = {a.ready_ref: a for a in self._actors if a.ready_ref is not None}
            waiting = list(calls) + list(starting)
            if not waiting:
                self._top_up()
                if not self._actors and time.monotonic() - idle_since > self.start_timeout_s:
                    raise ExecutorError(
                        "no verifier actor could start on the Ray cluster "
                        f"(device {self.device}); results so far are kept, rerun to resume"
                    )
                time.sleep(1.0)
                continue
            done, _ = ray.wait(waiting, num_returns=1, timeout=5.0)
            if not done:
                self._top_up()  # nodes may have joined
                continue
            idle_since = time.monotonic()
            ref = done[0]
            if ref in starting:
                self._on_started(starting[ref], ref)
                continue
            actor, item = calls.pop(ref)
            self.in_flight.pop(item.unit.key, None)
            actor.busy = False
            result = self._collect(ref, actor, item, queue)
            if result is not None:
                yield result

    def _on_started(self, actor: _Actor, ref: Any) -> None:
        actor.ready_ref = None
        try:
            actor.node = self.ray.get(ref)
        except self.ray.exceptions.RayActorError:
            self._drop(actor)
            self._top_up()

    def _collect(
        self, ref: Any, actor: _Actor, item: _Pending, queue: deque[_Pending]
    ) -> UnitResult | None:
        ray = self.ray
        try:
            result = UnitResult.model_validate_json(ray.get(ref))
        except ray.exceptions.RayActorError as exc:
            lost = self._lost_with_node(actor, exc)
            self._drop(actor)
            self._top_up()
            self.stats.retried.append(item.unit.key)
            if lost:
                self.stats.node_losses += 1
            else:
                item.deaths += 1
            if item.deaths < self.max_attempts:
                queue.appendleft(item)
                return None
            self.stats.crashes_recorded += 1
            message = (
                f"the verifier worker died while judging this candidate, {item.deaths} times "
                f"on different workers (last: {str(exc).splitlines()[0]})"
            )
            verdict = crash_verdict(item.unit, self.device, message)
            return UnitResult(
                key=item.unit.key, verdict=verdict, worker="ray:dead", attempts=item.tries
            )
        return result.model_copy(update={"attempts": item.tries})

    def close(self) -> None:
        """Stop the actors (and the local Ray instance this executor started)."""
        live = [a.handle.close.remote() for a in self._actors if a.ready_ref is None]
        if live:
            self.ray.wait(live, num_returns=len(live), timeout=30)
        for actor in self._actors:
            try:
                self.ray.kill(actor.handle, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
        self._actors.clear()
        self._task_refs.clear()
        if self._owns_ray:
            self.ray.shutdown()
            self._owns_ray = False
