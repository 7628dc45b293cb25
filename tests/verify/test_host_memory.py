"""Raw addresses of host memory and held pinned bytes (``verify/host_memory.py``).

The driver's answers are stood in for here; the whole checks run on a GPU in
``test_load_inline.py`` (``test_pinned_memory_from_import_handed_over_by_address_...`` and
``test_pinned_memory_a_cuda_kernel_reaches_through_a_stored_pointer_...``).
"""

from __future__ import annotations

import pytest

PINNED, DEVICE, MANAGED = 0x7F00_0000_0000, 0x7E00_0000_0000, 0x7D00_0000_0000


def fake_kind(address: int) -> str | None:
    return {PINNED: "host", DEVICE: "device", MANAGED: "managed"}.get(address)


class Buffer:
    """What Triton's launcher takes as a pointer: any object with a data_ptr()."""

    def __init__(self, address: int) -> None:
        self.address = address

    def data_ptr(self) -> int:
        return self.address


class Broken:
    def data_ptr(self) -> int:
        raise RuntimeError("no pointer")


def test_raw_addresses_of_pinned_or_managed_memory_are_counted():
    import torch

    from upskills.verify.guards import leaves
    from upskills.verify.host_memory import host_addresses

    args = (
        (PINNED, Buffer(PINNED), [{"c": MANAGED}], DEVICE, Buffer(DEVICE)),
        {"n": 1 << 20, "flag": True, "name": "x", "t": torch.empty(4), "b": Broken()},
    )
    assert host_addresses(leaves(args), fake_kind) == 3  # the int, the object, the nested one
    assert host_addresses([4096, 65535, False, 3.5], lambda a: "host") == 0  # sizes, flags
    assert host_addresses([1 << 16], lambda a: "host") == 1


def test_the_default_answer_is_the_drivers_looked_up_when_asked(monkeypatch):
    """The launch wrapper calls host_addresses without ``kind``: the module's pointer_kind at
    call time, so a stand-in replaces it."""
    from upskills.verify import host_memory

    monkeypatch.setattr(host_memory, "pointer_kind", fake_kind)
    assert host_memory.host_addresses([PINNED, DEVICE]) == 1


@pytest.mark.skipif("__import__('torch').cuda.is_available()", reason="a GPU's driver answers")
def test_without_a_driver_nothing_is_known_and_nothing_is_held():
    from upskills.verify.host_memory import held_pinned_bytes, host_addresses, pointer_kind

    assert pointer_kind(PINNED) is None
    assert host_addresses([PINNED, Buffer(PINNED)]) == 0
    assert held_pinned_bytes() == 0


def test_the_new_host_fallbacks_say_what_was_found():
    from upskills.verify.judge_rules import host_fallback

    address = host_fallback(2, "candidate.py", "address")
    pinned = host_fallback(50331648, "candidate.py", "pinned")
    assert address.guard == pinned.guard == "python_fallback"
    assert "2 raw addresses of pinned or managed host memory" in str(address)
    assert "holding 50331648 bytes of pinned host memory" in str(pinned)
