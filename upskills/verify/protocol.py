"""Typed messages between the judge and the candidate's process.

The judge (inputs, reference, comparison, verdict) and the candidate (its module, its kernels)
live in two processes that talk over one Unix socket: a 4-byte length, then one JSON object
validated into one of the models below. Nothing crosses as a pickle, so nothing the candidate
sends can run code in the judge; tensors cross as handles to memory the judge owns (shared
memory on CPU; on a GPU, VMM allocations whose file descriptors travel beside the message, or
CUDA IPC where the driver cannot export them). The candidate's replies carry only metadata
and timings: a reply can make the judge reject a candidate, never accept one, because every
value the judge accepts is read from its own buffers and compared with a reference it computed
itself.
"""

from __future__ import annotations

import array
import json
import socket
import struct
import time
from typing import Annotated, Literal, cast

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from upskills.verify.verdict import FlushMode

MAX_REPLY_BYTES = 2 * 1024 * 1024
"""The largest message the judge accepts from the candidate (a bigger one is an error)."""

MAX_FDS = 250
"""File descriptors one message may carry (Linux allows 253 per ``SCM_RIGHTS``)."""


class _Message(BaseModel):
    # NaN and infinities travel as JSON's NaN/Infinity constants (``json.loads`` reads them):
    # a fingerprint of a NaN-poisoned buffer or of a subclass's output is NaN, and the judge
    # must see that value (and fail the audit), not a null that makes the reply malformed
    model_config = ConfigDict(extra="forbid", ser_json_inf_nan="constants")


class CudaIpc(_Message):
    """A CUDA IPC handle of a storage (what ``UntypedStorage._share_cuda_`` returns)."""

    device: int
    """CUDA device index."""
    handle: str
    """The memory handle, hex."""
    storage_size: int
    """Size of the storage in bytes."""
    storage_offset: int
    """Offset of the storage within the allocation, bytes."""
    ref_counter_handle: str
    """Handle of torch's cross-process reference counter, hex."""
    ref_counter_offset: int
    """Offset within the reference counter file."""
    event_handle: str
    """Handle of the IPC event the receiver waits on, hex ('' when none)."""
    event_sync_required: bool
    """Whether the receiver must wait on that event before reading."""


class CudaVmm(_Message):
    """A judge allocation made with CUDA's VMM API.

    Its file descriptor travels beside the message (``SCM_RIGHTS``), in the order
    :func:`fd_ids` lists the message's allocations.
    """

    device: int
    """CUDA device index."""
    alloc: int
    """The allocation's number within the check."""
    size: int
    """Bytes of the allocation (a multiple of the device's granularity)."""


class TensorHandle(_Message):
    """Where a tensor lives in judge-owned memory, and how to view it."""

    kind: Literal["tensor"] = "tensor"
    dtype: str
    """torch dtype name without prefix (``float32``)."""
    shape: list[int]
    """Sizes."""
    stride: list[int]
    """Strides, in elements."""
    offset: int = 0
    """Storage offset, in elements."""
    nbytes: int
    """Bytes of the storage behind it."""
    shm_alloc: int | None = None
    """CPU: the shared-memory allocation holding the storage (its number within the check). The
    file has no name: its descriptor travels beside the message, in :func:`fd_ids` order."""
    cuda: CudaIpc | None = None
    """CUDA: the IPC handle of the storage."""
    vmm: CudaVmm | None = None
    """CUDA: the VMM allocation holding the storage (crosses users, unlike IPC)."""


class Scalar(_Message):
    """A plain value argument."""

    kind: Literal["scalar"] = "scalar"
    value: int | float | bool | str | None
    """The value."""


class Sequence(_Message):
    """A list or tuple argument of further arguments."""

    kind: Literal["list"] = "list"
    items: list[Arg]
    """The elements."""
    tuple: bool = False
    """Rebuilt as a tuple when true."""


Arg = Annotated[TensorHandle | Scalar | Sequence, Field(discriminator="kind")]
"""One argument of a constructor or a forward call."""
Sequence.model_rebuild()


class Param(_Message):
    """One parameter of the reference's ``__init__`` or ``forward`` (for the interface check)."""

    name: str
    kind: str
    """``inspect.Parameter.kind`` name."""
    text: str
    """As ``str(parameter)`` prints it."""


# ----------------------------------------------------------------------------- judge -> candidate


class Setup(_Message):
    """Build ``ModelNew`` for one variant: constructor arguments and the reference's state."""

    op: Literal["setup"] = "setup"
    variant: str
    init_args: list[Arg]
    """``get_init_inputs()`` of the variant, as the judge drew them."""
    state: dict[str, TensorHandle] = Field(default_factory=dict)
    """The reference's parameters and buffers, copied into same-named ones of ``ModelNew``."""
    interface: bool = False
    """Check ``ModelNew``'s signatures against the parameters below (first setup only)."""
    init_params: list[Param] = Field(default_factory=list[Param])
    """The reference ``Model.__init__``'s parameters (interface check)."""
    forward_params: list[Param] = Field(default_factory=list[Param])
    """The reference ``Model.forward``'s parameters (interface check)."""


class Trial(_Message):
    """Run ``forward`` once on judge inputs and copy the outputs into judge buffers."""

    op: Literal["trial"] = "trial"
    label: str
    """What this trial is, for messages (``variant 'ragged' seed 3``)."""
    inputs: list[Arg]
    outputs: list[TensorHandle]
    """One buffer per output tensor, shaped and typed as the reference's outputs."""
    structure: str
    """The reference output's structure: ``tensor``, ``tuple[2]``, ``list[3]``."""
    flush: FlushMode | None = None
    """The late trial of a GPU check: L2 is flushed so before the call, as before a timed one,
    and the GPU's kernels are recorded (CUPTI) for its busy time (None: neither)."""


class TimeRun(_Message):
    """Time ``forward`` with CUDA events, inputs rotated in the judge's order."""

    op: Literal["time"] = "time"
    input_sets: list[list[Arg]]
    """Candidate inputs, one list per set."""
    order: list[int]
    """Which set the i-th call (warm-up included) loads; the plan may stop early."""
    keep: list[list[TensorHandle]]
    """Buffers for the kept timed calls' outputs (oldest first): the last ``len(keep)``, or
    those at ``keep_at``."""
    max_reps: int
    target_ms: float
    keep_at: list[float] = []
    """Keep the timed calls at these fractions of the planned repetitions
    (:func:`upskills.verify.timing.kept_calls`), not the last ones; empty: the last ones."""
    perturb: list[int] = []
    """The i-th call's inputs are perturbed with seed ``perturb[i % len]`` after loading
    (:mod:`upskills.verify.perturb`); empty: not perturbed."""
    flush: FlushMode = "write"
    """How L2 is flushed before each timed call (:data:`upskills.verify.verdict.FlushMode`)."""
    fingerprint_seed: int | None = None
    """When set, every timed call's outputs are fingerprinted with this seed, outside the events
    (:mod:`upskills.verify.fingerprint`), and returned in ``TimeDone.fingerprints``."""


class Bulk(_Message):
    """Run ``forward`` ``calls`` times back to back, then synchronise once (judge clock check)."""

    op: Literal["bulk"] = "bulk"
    calls: int
    inputs: list[Arg]
    outputs: list[TensorHandle]
    """Buffers for one call's outputs: the ``land_at``-th (0-based), else the last."""
    land_at: int | None = None
    graph: Literal["", "capture", "replay"] = ""
    """``capture``: record one forward on ``inputs`` in a CUDA graph (no calls timed);
    ``replay``: replay that graph ``calls`` times (the judge has changed the inputs' values in
    between, so a graph that does not compute returns a stale result)."""
    perturb: list[int] = Field(default_factory=list[int])
    """An audited clock check: call ``i`` runs on a copy of ``inputs`` perturbed by
    ``perturb[i]`` and its outputs are fingerprinted (``fingerprint_seed``); none is landed."""
    fingerprint_seed: int | None = None
    calibrate: bool = False
    """With ``perturb``: the same loop without ``forward`` (the judge's buffers fingerprinted
    in its place), so the judge can subtract what the copies, perturbations and fingerprints
    cost its clock."""


class Ping(_Message):
    """Measure the round trip (judge clock check), or ask what the candidate's code changed."""

    op: Literal["ping"] = "ping"
    inspect: bool = False
    """Reply with the library functions and dispatcher kernels changed since before the import
    (``Ack.library_changes``)."""


class Bye(_Message):
    """The judge is done; the candidate's process exits."""

    op: Literal["bye"] = "bye"


Request = Annotated[Setup | Trial | TimeRun | Bulk | Ping | Bye, Field(discriminator="op")]
REQUEST: TypeAdapter[Setup | Trial | TimeRun | Bulk | Ping | Bye] = TypeAdapter(Request)


# ----------------------------------------------------------------------------- candidate -> judge


class Failure(_Message):
    """A stage failed inside the candidate's process."""

    error_class: str
    """An ``ErrorClass`` value."""
    stage: str
    """A ``VerdictStage`` value."""
    message: str
    guard: str | None = None
    """The guard that fired, when it was one."""


class Hello(_Message):
    """First message: the candidate's module imported (or not) and the environment."""

    op: Literal["hello"] = "hello"
    failure: Failure | None = None
    env: dict[str, str] = Field(default_factory=dict)


class OpSeen(_Message):
    """An aten op the candidate's forward ran outside its own launches."""

    name: str
    numel: int
    """Largest element count among its tensors."""
    calls: int = 1
    """How many times it ran."""
    total_numel: int = 0
    """Elements summed over every call (ops split into small chunks add up here)."""


class OutputMeta(_Message):
    """What the candidate's forward returned, as its process saw it."""

    type_name: str
    """``type(out).__qualname__`` with its module."""
    exact_tensor: bool
    """``type(out) is torch.Tensor``."""
    shape: list[int] = Field(default_factory=list[int])
    dtype: str = ""
    device: str = ""
    aliases_input: bool = False
    """The output's memory overlaps an input's."""


class Ack(_Message):
    """Reply to ``setup``, ``ping`` and ``bye``."""

    op: Literal["ack"] = "ack"
    failure: Failure | None = None
    library_changes: list[str] = Field(default_factory=list)
    """To ``Ping(inspect=True)``: what changed since before the candidate's import."""


class TrialDone(_Message):
    """Reply to ``trial``."""

    op: Literal["trial_done"] = "trial_done"
    failure: Failure | None = None
    structure: str = ""
    """The output's structure (``tensor``, ``tuple[2]``)."""
    outputs: list[OutputMeta] = Field(default_factory=list[OutputMeta])
    launches: int = 0
    """Kernel launches of its own during the call."""
    ops: list[OpSeen] = Field(default_factory=list[OpSeen])
    python_scalars: int = 0
    """Tensor-to-Python conversions (``item``/``tolist``/``numpy``) during the call."""
    threads_started: int = 0
    """Python threads started during the call."""
    library_changes: list[str] = Field(default_factory=list)
    """Library functions that were replaced (found after the call)."""
    default_dtype: str = "float32"
    gpu_busy_ms: float | None = None
    """How long the GPU ran kernels and copies during the watched forward (CUPTI; None on CPU)."""


class TimeDone(_Message):
    """Reply to ``time``."""

    op: Literal["time_done"] = "time_done"
    failure: Failure | None = None
    times_ms: list[float] = Field(default_factory=list[float])
    """Event time of each timed call."""
    picks: list[int] = Field(default_factory=list[int])
    """Input set of each kept output (oldest first)."""
    launches: int = 0
    library_changes: list[str] = Field(default_factory=list)
    threads: int = 0
    """Threads started while timed, or alive beyond the census before the candidate's import
    (:func:`~upskills.verify.library_snapshot.threads_since`); any refuses the check."""
    fingerprints: list[list[float]] = Field(default_factory=list[list[float]])
    """With ``TimeRun.fingerprint_seed``: one list per timed call, one value per output tensor."""
    late_calls: int | None = None
    """Timed calls the host was still enqueuing when the GPU reached their start event
    (``Timing.late_calls``; the candidate's process says so: a diagnostic only)."""
    head_start_x: int | None = None
    """The head start's growth by the last timed call (``Timing.head_start_x``; a diagnostic)."""
    persisting_l2_bytes: int | None = None
    """L2 set aside for persisting lines (``Timing.persisting_l2_bytes``; a diagnostic)."""
    persisting_l2_default_bytes: int | None = None
    """The context's limit before the candidate ran (``Timing.persisting_l2_default_bytes``)."""
    released_bytes: int = 0
    """GPU memory the candidate's process gave back to the driver after its timed calls (their
    inputs' copy and outputs, cached): the judge's late trial waits for the driver to clear it."""


class BulkDone(_Message):
    """Reply to ``bulk``."""

    op: Literal["bulk_done"] = "bulk_done"
    failure: Failure | None = None
    event_ms: float = 0.0
    """The candidate's own event time over all calls."""
    launches: int = 0
    fingerprints: list[list[float]] = Field(default_factory=list[list[float]])
    """With ``Bulk.perturb``: one list per call (``PROJECTIONS`` values per output tensor)."""
    released_bytes: int = 0
    """GPU memory the candidate's process gave back after them (``TimeDone.released_bytes``)."""
    threads: int = 0
    """As ``TimeDone.threads``: the calibration pass included."""


Reply = Annotated[Hello | Ack | TrialDone | TimeDone | BulkDone, Field(discriminator="op")]
REPLY: TypeAdapter[Hello | Ack | TrialDone | TimeDone | BulkDone] = TypeAdapter(Reply)


# ----------------------------------------------------------------------------- framing


class ChannelClosed(Exception):
    """The other side closed the connection (or died)."""


class ChannelTimeout(Exception):
    """No message came before the deadline."""


class Channel:
    """Length-prefixed JSON messages over a connected stream socket."""

    def __init__(
        self, sock: socket.socket, max_bytes: int = MAX_REPLY_BYTES, accept_fds: bool = False
    ) -> None:
        self.sock = sock
        self.max_bytes = max_bytes
        self.accept_fds = accept_fds
        """Take file descriptors sent beside messages (the candidate's side only: the judge
        never accepts any, and the kernel closes what it is sent without asking)."""
        self.fds: list[int] = []
        """Descriptors received since the last :meth:`take_fds`."""

    def send(self, message: BaseModel, fds: list[int] | None = None) -> None:
        """Send one message, with file descriptors beside its first byte."""
        data = message.model_dump_json().encode()
        frame = struct.pack(">I", len(data)) + data
        if not fds:
            self.sock.sendall(frame)
            return
        if len(fds) > MAX_FDS:
            raise ValueError(f"{len(fds)} descriptors in one message (at most {MAX_FDS})")
        rights = array.array("i", fds).tobytes()
        sent = self.sock.sendmsg([frame], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
        if sent < len(frame):
            self.sock.sendall(frame[sent:])

    def take_fds(self) -> list[int]:
        """The descriptors received with the last message(s), handed to the caller to close."""
        fds, self.fds = self.fds, []
        return fds

    def _recv(self, n: int) -> bytes:
        if not self.accept_fds:
            return self.sock.recv(n)
        data, ancillary, flags, _ = self.sock.recvmsg(n, socket.CMSG_SPACE(MAX_FDS * 4))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                usable = len(payload) - len(payload) % 4
                self.fds.extend(array.array("i", payload[:usable]))
        if flags & socket.MSG_CTRUNC:
            raise ChannelClosed("file descriptors beside a message were cut off")
        return data

    def _recv_exact(self, n: int, deadline: float | None) -> bytes:
        chunks: list[bytes] = []
        got = 0
        while got < n:
            if deadline is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ChannelTimeout("no reply before the deadline")
                self.sock.settimeout(left)
            else:
                self.sock.settimeout(None)
            try:
                chunk = self._recv(min(n - got, 1 << 20))
            except TimeoutError as exc:
                raise ChannelTimeout("no reply before the deadline") from exc
            except OSError as exc:
                raise ChannelClosed(str(exc)) from exc
            if not chunk:
                raise ChannelClosed("connection closed")
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)

    def recv_raw(self, deadline: float | None = None) -> dict[str, object]:
        """One message as parsed JSON (size-limited)."""
        (size,) = struct.unpack(">I", self._recv_exact(4, deadline))
        if size > self.max_bytes:
            raise ChannelClosed(f"message of {size} bytes is over the {self.max_bytes} limit")
        try:
            value = json.loads(self._recv_exact(size, deadline))
        except ValueError as exc:
            raise ChannelClosed(f"malformed message: {exc}") from exc
        if not isinstance(value, dict):
            raise ChannelClosed("malformed message: not an object")
        return cast(dict[str, object], value)


def fd_ids(raw: object) -> list[int]:
    """The allocations a message names (VMM and shared memory), each once, in order.

    The judge sends their descriptors in this order; the candidate pairs them up the same way
    from the JSON it received. Both kinds share one numbering within a check.
    """
    seen: dict[int, None] = {}

    def walk(value: object) -> None:
        if isinstance(value, dict):
            d = cast(dict[str, object], value)
            vmm = d.get("vmm")
            if isinstance(vmm, dict) and isinstance(cast(dict[str, object], vmm).get("alloc"), int):
                seen.setdefault(cast(int, cast(dict[str, object], vmm)["alloc"]), None)
            shm = d.get("shm_alloc")
            if isinstance(shm, int) and not isinstance(shm, bool):
                seen.setdefault(shm, None)
            for v in d.values():
                walk(v)
        elif isinstance(value, list):
            for v in cast(list[object], value):
                walk(v)

    walk(raw)
    return list(seen)
