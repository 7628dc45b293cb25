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


def test_a_gpu_trials_launch_gets_each_pointer_read_once():
    """``launch_arguments``: Triton's launcher calls ``data_ptr()`` after the address check
    did, so each pointer argument is read once, by the tensor's own storage where it is a
    tensor, and the launcher gets that address (thirty-seventh session). An object that
    answers the check a device address and the launcher a host one, a tensor whose
    ``data_ptr`` is patched or overridden, a mode that answers ``data_ptr``, an int whose
    comparisons lie and a tuple whose ``__iter__`` hides its items: none of them reaches the
    launcher as it was."""
    import collections

    import torch
    from torch.overrides import TorchFunctionMode

    from upskills.verify.guards import leaves
    from upskills.verify.host_memory import Pointer, host_addresses, launch_arguments

    class Flip:
        dtype = torch.float16

        def __init__(self) -> None:
            self.asked = 0

        def data_ptr(self) -> int:
            self.asked += 1
            return DEVICE if self.asked == 1 else PINNED

    class Lying(torch.Tensor):
        def data_ptr(self) -> int:  # type: ignore[override]
            return PINNED

    class Big(int):
        def __ge__(self, other: object) -> bool:
            return False

    class Hidden(tuple):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[override]
            return iter(())

    class Answers(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            if getattr(func, "__name__", "") == "data_ptr":
                return PINNED
            return func(*args, **(kwargs or {}))

    pair = collections.namedtuple("pair", "a b")
    x = torch.arange(4.0)
    patched = torch.zeros(2, dtype=torch.int32)
    patched.data_ptr = lambda: PINNED  # type: ignore[method-assign]
    seen: list[dict[str, object]] = []
    flip, kernel, grid = Flip(), object(), (lambda meta: seen.append(meta) or (1,))
    where = {id(t): t.untyped_storage().data_ptr() for t in (x, patched)}
    given = (kernel, x, flip, x.as_subclass(Lying), Big(PINNED), Hidden((patched,)), 7, None)
    args, kwargs = launch_arguments(given, {"p": pair(x, 3), "grid": grid, "warmup": False})

    assert args[0] is kernel and kwargs["warmup"] is False
    assert kwargs["grid"]({"x": args[1], "p": kwargs["p"], "n": 7}) == (1,)
    assert seen[0]["x"] is x and seen[0]["p"] is kwargs["p"]  # a grid callable meets originals
    assert [type(a).__name__ for a in args[1:4]] == ["Pointer"] * 3
    assert (args[1].data_ptr(), args[1].dtype) == (where[id(x)], torch.float32)
    first, second = args[2].data_ptr(), args[2].data_ptr()
    assert (first, second, args[2].dtype) == (DEVICE, DEVICE, torch.float16)
    assert flip.asked == 1  # the launcher never asks the object itself
    assert args[3].data_ptr() == where[id(x)]  # the storage's address, not the override's
    assert args[4] == PINNED and type(args[4]) is int
    assert type(args[5]) is tuple and args[5][0].data_ptr() == where[id(patched)]
    assert args[5][0].dtype == torch.int32 and args[6:] == (7, None)
    assert type(kwargs["p"]) is pair and kwargs["p"].b == 3
    assert isinstance(kwargs["p"].a, Pointer) and kwargs["p"].a.data_ptr() == where[id(x)]
    assert host_addresses(leaves((args, kwargs)), fake_kind) == 1  # the int, whatever it says
    plain = launch_arguments((kernel, 3), {"grid": [2.0, Big(3)]})[1]["grid"]
    assert plain({}) == (2, 3) and [type(n) for n in plain({})] == [int, int]  # plain ints
    with Answers():
        (_, moded), _ = launch_arguments((kernel, x), {})
    assert moded.data_ptr() == where[id(x)]
    assert leaves(Hidden((1, [2], {"k": 3}))) == [3, 2, 1]  # leaves read the base class too


def test_a_stand_in_moved_inside_its_launch_counts():
    """Candidate code runs inside a launch, after the address check (a kernel's
    ``pre_run_hooks`` get the stand-ins, a grid callable can reach them through its caller's
    frame): a stand-in whose address changed there counts as a host address
    (``host_memory.moved``, in the launch wrapper of a GPU trial). Here the launch function
    itself plays the hook; an honest launch counts nothing."""
    from types import SimpleNamespace

    import torch

    from upskills.verify.guards import LaunchCounter
    from upskills.verify.host_memory import Pointer

    def moving(*args: object, **kwargs: object) -> str:
        Pointer._address.__set__(args[1], PINNED)  # type: ignore[attr-defined]
        return "ran"

    counter = LaunchCounter()
    state = counter.state
    state.inputs, state.gpu = frozenset(), True
    x = torch.empty(4)
    assert counter._wrap(lambda *a, **k: "ran")(SimpleNamespace(), x, grid=(1,)) == "ran"
    assert state.host_addresses == 0
    assert counter._wrap(moving)(SimpleNamespace(), x, grid=(1,)) == "ran"
    assert state.host_addresses == 1


def test_a_launch_with_hooks_that_run_inside_it_counts():
    """A Triton launch-exit hook runs inside the launch after the kernel is queued: it could
    move a stand-in to a host address for the kernel and back before ``moved`` looks. A GPU
    trial's launch with any hook set that runs candidate code after the address check (a
    kernel's ``pre_run_hooks``, Triton's launch and JIT hooks) counts (``launch_hooks``, read
    before the launch, after the grid is read and after the launch; thirty-eighth session).
    Here the launch function plays Triton's ``JITFunction.run``: it reads the grid, then runs
    the exit hooks the way the launcher would."""
    import importlib
    from types import SimpleNamespace

    import torch
    from triton import knobs

    from upskills.verify.guards import LaunchCounter
    from upskills.verify.host_memory import Pointer, launch_hooks

    chain = knobs.runtime.launch_exit_hook

    def back(*_: object) -> None:  # the move back, by a hook that then leaves
        chain.remove(back)

    def triton_like(*args: object, grid: object, **kwargs: object) -> tuple[int, ...]:
        sizes = grid({"x": args[1]}) if callable(grid) else grid  # type: ignore[operator]
        chain(SimpleNamespace())
        return sizes  # type: ignore[return-value]

    def sneaky_grid(meta: dict[str, object]) -> tuple[int, ...]:
        Pointer._address.__set__(meta["x"], PINNED) if isinstance(meta["x"], Pointer) else None  # type: ignore[attr-defined]
        chain.add(back)
        return (1,)

    class Sizes(list):  # type: ignore[type-arg]
        def __iter__(self):  # type: ignore[override]
            chain.add(back)
            return super().__iter__()

    class Sneaky(knobs.HookChain):  # type: ignore[type-arg]
        def __call__(self, *args: object, **kwargs: object) -> None:
            back()

    jit = importlib.import_module("triton.runtime.jit")
    counter = LaunchCounter()
    state = counter.state
    state.inputs, state.gpu = frozenset(), True
    x, kernel = torch.empty(4), SimpleNamespace(pre_run_hooks=[])
    launch = counter._wrap(triton_like)
    try:
        assert launch_hooks(kernel) == 0  # Triton's own chains, empty
        assert launch(kernel, x, grid=(4,)) == (4,) and state.host_addresses == 0  # honest
        assert launch(kernel, x, grid=lambda meta: (meta["x"].shape[0],)) == (4,)
        assert state.host_addresses == 0
        assert launch(kernel, x, grid=sneaky_grid) == (1,) and back not in chain.calls
        assert state.host_addresses == 1  # seen after the grid, though gone after the launch
        assert launch(kernel, x, grid=Sizes([2])) == (2,) and state.host_addresses == 2
        hooked = SimpleNamespace(pre_run_hooks=[lambda *a, **k: None])
        assert launch(hooked, x, grid=(1,)) == (1,) and state.host_addresses == 5
        assert launch_hooks(SimpleNamespace(pre_run_hooks=Sizes())) == 1  # not a plain list
        knobs.runtime.jit_cache_hook = lambda *a, **k: None
        assert launch_hooks(kernel) == 1
        knobs.runtime.jit_cache_hook = None
        # a chain of the candidate's own: empty ``calls``, its own ``__call__`` (found in the
        # thirty-eighth session's review: it counted 0 before the chains were pinned)
        knobs.runtime.launch_exit_hook = Sneaky(reversed=True)
        assert launch_hooks(kernel) == 1
        knobs.runtime.launch_exit_hook = chain
        jit.knobs = SimpleNamespace(runtime=SimpleNamespace())  # another runtime, where run reads
        assert launch_hooks(kernel) == 1
        jit.knobs = knobs
        assert launch_hooks(kernel) == 0
    finally:
        knobs.runtime.jit_cache_hook = None
        knobs.runtime.launch_exit_hook = chain
        jit.knobs = knobs
        chain.remove(back)
    state.inputs = None  # the timed calls: their launches are not slowed by the check
    assert launch(hooked, x, grid=(1,)) == (1,)


def test_the_classes_that_answer_for_triton_s_hooks_are_watched():
    """A patched ``HookChain.__call__`` (or a ``__getattribute__`` set on the knobs' classes)
    would run code inside a launch whose chains look empty: the library snapshot (guard d)
    watches those classes (thirty-eighth session's review)."""
    from triton import knobs

    from upskills.verify.library_snapshot import LibrarySnapshot

    snapshot = LibrarySnapshot()
    call = knobs.HookChain.__call__
    try:
        knobs.HookChain.__call__ = lambda self, *a, **k: None  # type: ignore[method-assign]
        type(knobs.runtime).__getattribute__ = object.__getattribute__  # type: ignore[method-assign]
        changed = snapshot.changed()
    finally:
        knobs.HookChain.__call__ = call  # type: ignore[method-assign]
        del type(knobs.runtime).__getattribute__
    assert "triton.HookChain.__call__" in changed, changed
    assert any(
        c.startswith(f"triton.{type(knobs.runtime).__qualname__}.__getattribute__") for c in changed
    ), changed
