"""The judge/candidate channel carries file descriptors beside messages (for VMM buffers).

The GPU half (VMM memory mapped by a candidate running as another user) is exercised by every
CUDA check in ``-m gpu``; ``test_gpu.py::test_a_cuda_candidate_runs_as_another_user`` pins it.
"""

from __future__ import annotations

import os
import socket
import tempfile

import pytest

from upskills.verify import transport
from upskills.verify.protocol import (
    REPLY,
    BulkDone,
    Channel,
    CudaVmm,
    Scalar,
    TensorHandle,
    Trial,
    fd_ids,
)


def _handle(alloc: int) -> TensorHandle:
    return TensorHandle(
        dtype="float32",
        shape=[4],
        stride=[1],
        nbytes=16,
        vmm=CudaVmm(device=0, alloc=alloc, size=2 << 20),
    )


def _trial() -> Trial:
    return Trial(
        label="default",
        inputs=[_handle(3), Scalar(value=2), _handle(1)],
        outputs=[_handle(3), _handle(7)],
        structure="tensor",
    )


def _file_with(text: str) -> int:
    fd, path = tempfile.mkstemp()
    os.write(fd, text.encode())
    os.unlink(path)
    return fd


def test_fd_ids_lists_each_allocation_once_in_message_order():
    assert fd_ids(_trial().model_dump(mode="json")) == [3, 1, 7]
    shm = TensorHandle(dtype="float32", shape=[4], stride=[1], nbytes=16, shm_alloc=5)
    both = Trial(label="d", inputs=[shm, _handle(3)], outputs=[_handle(3), shm], structure="t")
    assert fd_ids(both.model_dump(mode="json")) == [5, 3]  # one numbering for both kinds
    assert fd_ids({"inputs": [{"kind": "scalar", "value": 1}]}) == []


def test_descriptors_travel_beside_a_message_and_pair_with_its_buffers():
    a, b = socket.socketpair()
    sender, receiver = Channel(a), Channel(b, accept_fds=True)
    fds = [_file_with(name) for name in ("three", "one", "seven")]
    try:
        sender.send(_trial(), fds)
        raw = receiver.recv_raw(deadline=None)
        got = receiver.take_fds()
        assert len(got) == 3 and not set(got) & set(fds)  # the receiver's own copies
        transport.receive_fds(raw, got)
        seen = {}
        for alloc, fd in transport._RECEIVED.items():  # pyright: ignore[reportPrivateUsage]
            os.lseek(fd, 0, os.SEEK_SET)
            seen[alloc] = os.read(fd, 16).decode()
        assert seen == {3: "three", 1: "one", 7: "seven"}
        transport.release_opened()
        assert not transport._RECEIVED  # pyright: ignore[reportPrivateUsage]
        for fd in got:  # closed by release_opened
            with pytest.raises(OSError):
                os.fstat(fd)
    finally:
        for fd in fds:
            os.close(fd)
        a.close()
        b.close()


def test_the_judge_side_never_takes_descriptors_it_is_sent():
    """A candidate may send descriptors too; the judge's channel reads the bytes and leaves
    the descriptors to the kernel (which closes them)."""
    a, b = socket.socketpair()
    candidate, judge = Channel(a, accept_fds=True), Channel(b)
    fd = _file_with("x")
    try:
        candidate.send(_trial(), [fd])
        assert judge.recv_raw(deadline=None)["label"] == "default"
        assert judge.take_fds() == []
    finally:
        os.close(fd)
        a.close()
        b.close()


def test_a_count_mismatch_is_an_error_and_closes_what_came():
    fd = _file_with("x")
    dup = os.dup(fd)
    os.close(fd)
    with pytest.raises(ValueError, match="1 file descriptors came for 3 buffers"):
        transport.receive_fds(_trial().model_dump(mode="json"), [dup])
    with pytest.raises(OSError):
        os.fstat(dup)


def test_a_buffer_without_its_descriptor_is_refused():
    with pytest.raises(ValueError, match="no file descriptor came with buffer 3"):
        transport.open_handle(_handle(3))


def test_a_cpu_buffer_has_no_name_and_opens_only_from_its_descriptor():
    """The judge's shared-memory buffers are nameless files: nothing in /dev/shm to find."""
    import torch

    arena = transport.SharedArena()
    before = set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
    shared, handle = transport.share(torch.arange(6, dtype=torch.float32), arena)
    try:
        assert handle.shm_alloc is not None
        if os.path.isdir("/dev/shm"):
            assert set(os.listdir("/dev/shm")) == before
        raw = Trial(label="d", inputs=[handle], outputs=[], structure="t").model_dump(mode="json")
        with pytest.raises(ValueError, match="no file descriptor"):
            transport.open_handle(handle)
        transport.receive_fds(raw, arena.fds_for(Trial.model_validate(raw)))
        view = transport.open_handle(handle)
        view[2] = 42.0  # the candidate writes through its mapping; the judge sees it
        assert shared[2].item() == 42.0
    finally:
        transport.release_opened()
        arena.close()


def test_nan_and_infinite_fingerprints_reach_the_judge_as_numbers():
    """A fingerprint of a NaN-poisoned buffer (the audited clock check's calibration reads the
    judge's poisoned outputs) or of a subclass's output is NaN. It must arrive as NaN, which
    fails the audit, not as a null that makes the whole reply malformed (the H200 refused every
    honest kernel so, the first time the audited clock check ran there)."""
    a, b = socket.socketpair()
    candidate, judge = Channel(a, accept_fds=True), Channel(b)
    try:
        prints = [[float("nan"), 1.5], [float("inf"), -2.0]]
        candidate.send(BulkDone(launches=2, fingerprints=prints))
        reply = REPLY.validate_python(judge.recv_raw(deadline=None))
        assert isinstance(reply, BulkDone)
        (nan, x), (inf, y) = reply.fingerprints
        assert nan != nan and inf == float("inf") and (x, y) == (1.5, -2.0)
    finally:
        a.close()
        b.close()
