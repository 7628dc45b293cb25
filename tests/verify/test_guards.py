"""Adversarial candidates, one cheat each, run through the real verifier on CPU.

Each cheat passes the value check (or would, without the guard), so only the guard stops it.
"""

from __future__ import annotations

import pytest

from tests.verify.conftest import GOOD_ADD, GOOD_ROW_SUM
from upskills.verify.verdict import ErrorClass

pytest.importorskip("triton")

KERNEL_PRELUDE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(p, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(p + offs, mask=offs < n)
    tl.store(p + offs, v, mask=offs < n)

"""


def test_good_kernels_pass(cpu_verifier, add_task, row_sum_task):
    v = cpu_verifier.check(add_task, GOOD_ADD)
    assert v.passed, v.message
    assert v.error_class is None and v.stage == "done"
    # 2 seeds x (the task's variants + one shape drawn at random for this check)
    assert [r.variant for r in v.variants] == ["small"] * 2 + ["ragged"] * 2 + ["random"] * 2
    assert len({r.seed for r in v.variants}) == 6 and v.seed is not None
    drawn = v.variants[-1].shape
    assert drawn and drawn["N"] % 16 != 0  # ragged, non-power-of-two
    assert all(r.max_abs_err == 0.0 for r in v.variants)
    assert v.timing_status == "unavailable" and v.timing is None
    v = cpu_verifier.check(row_sum_task, GOOD_ROW_SUM)
    assert v.passed, v.message
    assert all(r.max_abs_err is not None and r.max_abs_err < 1e-3 for r in v.variants)


def test_a_no_kernel_launched(cpu_verifier, add_task):
    cheat = (
        KERNEL_PRELUDE
        + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch.add(x, y)
"""
    )
    v = cpu_verifier.check(add_task, cheat)
    assert not v.passed and v.error_class == ErrorClass.GUARD
    assert "guard (a)" in v.message and "launched no kernel" in v.message


def test_b_reference_op_behind_a_dummy_kernel(cpu_verifier, add_task):
    cheat = (
        KERNEL_PRELUDE
        + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.add(x, y)
        touch_kernel[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), BLOCK=1024)
        return out
"""
    )
    v = cpu_verifier.check(add_task, cheat)
    assert not v.passed and v.error_class == ErrorClass.GUARD
    assert "guard (b)" in v.message and "aten.add" in v.message


def test_b_reference_op_inside_the_launch_through_the_grid_callable(cpu_verifier, add_task):
    """Triton calls the grid callable inside its launch, where the launcher's own ops are not
    the candidate's: the work done there with PyTorch, before a kernel that does nothing, passed
    guard (b) until 2026-12-03. Code of the candidate's file inside a launch is the candidate's."""
    cheat = (
        KERNEL_PRELUDE
        + """
class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)

        def grid(meta):
            torch.add(x, y, out=out)
            return (1,)

        touch_kernel[grid](out, 16, BLOCK=16)
        return out
"""
    )
    v = cpu_verifier.check(add_task, cheat)
    assert not v.passed and v.guard == "torch_compute", v.message
    assert "aten.add" in v.message


def test_b_reference_op_inside_the_launch_from_a_module_the_candidate_wrote(cpu_verifier, add_task):
    """The grid callable of the test above, moved into a module the candidate writes and
    imports at load time: no frame of the candidate's file lies inside the launch, and it passed
    guard (b) until the launcher's code was told apart by its packages instead."""
    cheat = (
        "import os\nimport sys\nimport tempfile\n"
        + KERNEL_PRELUDE
        + """
_dir = tempfile.mkdtemp()
with open(os.path.join(_dir, "gridhelp.py"), "w") as f:
    f.write(
        "def make(x, y, out):\\n"
        "    def grid(meta):\\n"
        "        out.copy_(x + y)\\n"
        "        return (1,)\\n"
        "    return grid\\n"
    )
sys.path.insert(0, _dir)
from gridhelp import make  # noqa: E402


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        touch_kernel[make(x, y, out)](out, 16, BLOCK=16)
        return out
"""
    )
    v = cpu_verifier.check(add_task, cheat)
    assert not v.passed and v.guard == "torch_compute", v.message
    assert "aten.add" in v.message


# Found in the forty-third session: a grid made of C-level callables leaves no Python frame of
# the candidate's inside the launch, so the walk up the stack found only Triton's and the
# verifier's, and every op the grid ran was the launcher's. Each passed the CPU verifier with
# the static check on.
C_LEVEL_GRID = (
    KERNEL_PRELUDE.replace(
        "import torch\n", "import functools\nimport itertools\nimport operator\nimport torch\n", 1
    )
    + """
def c_level_grid(work):
    \"\"\"Each call: ``work``'s next item computed, then ``(1,)``; no Python frame of its own.\"\"\"
    return functools.partial(next, map(operator.itemgetter(0), zip(itertools.repeat((1,)), work)))


class ModelNew(nn.Module):
    def forward(self, *args):
        WORK
        touch_kernel[c_level_grid(work)](out, 16, BLOCK=16)
        return out
"""
)


def test_b_compute_op_in_a_grid_of_c_level_callables(cpu_verifier, add_task):
    cheat = C_LEVEL_GRID.replace(
        "WORK",
        "x, y = args\n        out = torch.empty_like(x)\n"
        "        work = map(out.copy_, itertools.starmap(torch.add, itertools.repeat((x, y))))",
    )
    v = cpu_verifier.check(add_task, cheat)
    assert not v.passed and v.guard == "torch_compute", v.message
    assert "aten.add" in v.message


def test_b_copy_task_done_with_a_copy_in_a_grid_of_c_level_callables(cpu_verifier, transpose_task):
    """The same grid doing a transpose task's work with a copy: a copy inside a launch may be
    the interpreter's own, but not one made inside the candidate's grid."""
    cheat = C_LEVEL_GRID.replace(
        "WORK",
        "(x,) = args\n        out = torch.empty(x.shape[1], x.shape[0], dtype=x.dtype)\n"
        "        work = map(out.copy_, map(torch.t, itertools.repeat(x)))",
    )
    v = cpu_verifier.check(transpose_task, cheat)
    assert not v.passed and "guard (b)" in v.message, v.message
    assert v.guard == "torch_compute", v.message


def _transpose_in_an_argument(setup: str, launch: str) -> str:
    """A transpose cheat: ``out`` filled by the chain ``moved`` (``setup`` hides it in an
    argument), then ``launch`` (a kernel that touches 16 elements, no grid of its own)."""
    return C_LEVEL_GRID.replace(
        "WORK",
        "(x,) = args\n        out = torch.empty(x.shape[1], x.shape[0], dtype=x.dtype)\n"
        + setup
        + "        work = iter(())",
    ).replace("touch_kernel[c_level_grid(work)](out, 16, BLOCK=16)", launch)


def test_b_copy_in_an_interpreted_launchs_own_call_of_an_arguments_method(
    cpu_verifier, transpose_task
):
    """The interpreter copies each pointer argument through its own ``untyped_storage`` inside
    the launch, where a copy is the interpreter's; a tensor whose own attribute shadows that
    method ran the transpose's copy there and passed (its first two calls, the verifier's own
    before the launch, copy nothing). Pointer arguments must be plain tensors."""
    cheat = _transpose_in_an_argument(
        "        storage = out.untyped_storage()\n"
        "        moved = itertools.chain(\n"
        "            (None, None), map(out.copy_, map(torch.t, itertools.repeat(x)))\n"
        "        )\n"
        "        shown = out.view(out.shape)\n"
        "        shown.untyped_storage = functools.partial(next, map(operator.itemgetter(1), "
        "zip(moved, itertools.repeat(storage))))\n",
        "touch_kernel[(1,)](shown, 16, BLOCK=16)",
    )
    v = cpu_verifier.check(transpose_task, cheat)
    assert not v.passed, v.message
    assert "kernel argument #0 is a tensor with 1 attribute(s) of its own" in v.message, v.message


def test_b_copy_in_an_interpreted_launchs_read_of_a_number(cpu_verifier, transpose_task):
    """The interpreter reads a constant argument through its ``__index__``/``__int__`` inside
    the launch: an ``int`` subclass whose methods were the chain ran the transpose's copy there
    and passed. Arguments must be plain numbers and tensors."""
    count = "functools.partial(next, map(operator.itemgetter(1), zip(moved, itertools.repeat(16))))"
    cheat = _transpose_in_an_argument(
        "        moved = map(out.copy_, map(torch.t, itertools.repeat(x)))\n"
        f"        size = type('Size', (int,), {{'__index__': {count}, '__int__': {count}}})(16)\n",
        "touch_kernel[(1,)](out, size, BLOCK=16)",
    )
    v = cpu_verifier.check(transpose_task, cheat)
    assert not v.passed, v.message
    assert "kernel argument #1 is a upskills_candidate.Size" in v.message, v.message


def test_b_copy_through_an_argument_the_grid_changes_after_the_check(cpu_verifier, transpose_task):
    """The grid runs inside the launch, after the arguments were checked plain, and before the
    interpreter copies them back: a grid that gave the launched tensor a shadowing
    ``untyped_storage`` ran the transpose's copy there and passed. The interpreter now reads
    a fresh view the candidate holds no reference to, so the copy never runs and the output
    stays empty."""
    cheat = _transpose_in_an_argument(
        "        storage = out.untyped_storage()\n"
        "        moved = map(out.copy_, map(torch.t, itertools.repeat(x)))\n"
        "        shown = out.view(out.shape)\n"
        "        chain = functools.partial(\n"
        "            next, map(operator.itemgetter(1), zip(moved, itertools.repeat(storage)))\n"
        "        )\n\n"
        "        def grid(meta):\n"
        "            shown.untyped_storage = chain\n"
        "            return (1,)\n\n",
        "touch_kernel[grid](shown, 16, BLOCK=16)",
    )
    v = cpu_verifier.check(transpose_task, cheat)
    assert not v.passed, v.message  # the empty output: a mismatch, NaNs, or guard (c)
    assert v.error_class in (ErrorClass.MISMATCH, ErrorClass.NAN, ErrorClass.GUARD), v.message


def test_b_copy_in_an_interpreted_launchs_call_of_a_library_objects_methods(
    cpu_verifier, transpose_task
):
    """Any object of a Triton, NumPy or torch class was taken as a launch argument as it was:
    an ``nn.Module`` given ``data_ptr``, ``untyped_storage`` and the rest was copied to the
    host as a tensor would be, and its ``untyped_storage``, the chain, ran the transpose's copy
    inside the launch and passed. Only the library's own launch arguments are taken now."""
    cheat = _transpose_in_an_argument(
        "        storage = out.untyped_storage()\n"
        "        moved = itertools.chain(\n"
        "            (None,), map(out.copy_, map(torch.t, itertools.repeat(x)))\n"
        "        )\n"
        "        shown = nn.Module()\n"
        "        shown.data_ptr, shown.storage_offset = out.data_ptr, out.storage_offset\n"
        "        shown.size, shown.stride, shown.new_empty = out.size, out.stride, out.new_empty\n"
        "        shown.untyped_storage = functools.partial(next, map(operator.itemgetter(1), "
        "zip(moved, itertools.repeat(storage))))\n",
        "touch_kernel[(1,)](shown, 16, BLOCK=16)",
    )
    v = cpu_verifier.check(transpose_task, cheat)
    assert not v.passed, v.message
    assert "kernel argument #0 is a torch.nn.modules.module.Module" in v.message, v.message


def test_b_copy_in_a_kernels_pre_run_hook(cpu_verifier, transpose_task):
    """The interpreter calls a kernel's pre-run hooks inside the launch with its arguments: the
    hook ``torch.Tensor.copy_`` given ``out`` and ``x.t()`` did the transpose there, with no
    frame of the candidate's, and passed. A copy inside an interpreted launch is the
    interpreter's only while it copies the arguments to the host and back."""
    cheat = (
        KERNEL_PRELUDE
        + """
@triton.jit
def touch_first(dst, src):
    offs = tl.arange(0, 16)
    tl.store(dst + offs, tl.load(dst + offs))


touch_first.add_pre_run_hook(torch.Tensor.copy_)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape[1], x.shape[0], dtype=x.dtype, device=x.device)
        touch_first[(1,)](out, x.t())
        return out
"""
    )
    v = cpu_verifier.check(transpose_task, cheat)
    assert not v.passed and v.guard == "torch_compute", v.message
    assert "aten.copy_" in v.message, v.message


def test_library_launch_arguments_are_rebuilt_and_others_refused():
    """``constexpr``, ``tl.dtype``, ``TensorWrapper``, NumPy scalars and torch dtypes pass as
    new objects or as they are; a library object that holds attributes does not."""
    import numpy as np
    import torch
    import triton
    import triton.language as tl

    from upskills.verify.interpreter_guards import NotPlainArgument, plain_arguments

    x = torch.arange(8.0)
    wrapped = triton.reinterpret(x, tl.int32)
    given = (x, tl.constexpr(4), tl.float16, wrapped, np.int64(3), torch.float32)
    args, named = plain_arguments(given, {"BLOCK": tl.constexpr(16), "grid": (1,)})
    assert args[0] is not x and args[0].data_ptr() == x.data_ptr()
    assert args[1] is not given[1] and args[1].value == 4
    assert args[2] is not tl.float16 and args[2] == tl.float16
    assert args[3] is not wrapped and args[3].base is not x and args[3].dtype == tl.int32
    assert args[3].data_ptr() == x.data_ptr()
    assert args[4] is given[4] and args[5] is torch.float32
    assert named["BLOCK"].value == 16 and named["grid"] == (1,)
    for refused in (torch.nn.Module(), torch.UntypedStorage(4), np.zeros(2)):
        with pytest.raises(NotPlainArgument, match="not a launch argument"):
            plain_arguments((refused,), {})


def test_a_launch_inside_a_grid_leaves_the_outer_launch_its_bounds_check(cpu_verifier, add_task):
    """An interpreted launch inside another's grid reset the bounds to none when it ended, so
    the outer kernel's loads went unchecked: its unmasked reads past the end passed."""
    cheat = (
        KERNEL_PRELUDE
        + """
@triton.jit
def add_unmasked_loads(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    total = tl.load(x_ptr + offs) + tl.load(y_ptr + offs)
    tl.store(out_ptr + offs, total, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        scratch = torch.zeros(16, device=x.device)

        def grid(meta):
            touch_kernel[(1,)](scratch, 16, BLOCK=16)
            return (triton.cdiv(n, 1024),)

        add_unmasked_loads[grid](x, y, out, n, BLOCK=1024)
        return out
"""
    )
    v = cpu_verifier.check(add_task, cheat)
    assert not v.passed and "out-of-bounds load" in v.message, v.message


def test_inside_a_launch_only_allocations_views_and_the_interpreters_copies_are_the_launchers():
    """The recorder's rule for an op inside a launch with no frame of the candidate's below it:
    a copy is the launcher's only while the interpreter copies the arguments to the host and
    back, not anywhere else inside an interpreted launch (a pre-run hook's, say)."""
    import torch

    from upskills.verify.guards import LaunchState, OpLog, make_op_recorder

    x = torch.ones(256)
    for interpreted, copying, logged in (
        (False, 0, ["copy_", "add"]),
        (True, 0, ["copy_", "add"]),
        (True, 1, ["add"]),
    ):
        log, state = OpLog(), LaunchState(depth=1, interpreter_copies=copying)
        state.ranges = [] if interpreted else None
        with make_op_recorder(log, state):
            torch.empty(256).copy_(x)  # the interpreter's copy back, or a copy of no launcher
            torch.add(x, x)  # no launcher's op
            x.view(16, 16)  # a view: anybody's
        assert [op.name for op in log.ops] == logged, (interpreted, copying, log.ops)


def test_b_compute_op_hidden_from_the_ast(cpu_verifier, row_sum_task):
    cheat = (
        KERNEL_PRELUDE
        + """
class ModelNew(nn.Module):
    def forward(self, x):
        touch_kernel[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)
        return getattr(x, "s" + "um")(dim=-1)
"""
    )
    v = cpu_verifier.check(row_sum_task, cheat)
    assert v.error_class == ErrorClass.GUARD and v.guard == "static:dynamic"
    # the same work through a plain method call the AST cannot tell from a kernel's helper
    cheat = cheat.replace('getattr(x, "s" + "um")(dim=-1)', "x.sum(dim=-1)")
    v = cpu_verifier.check(row_sum_task, cheat)
    assert v.error_class == ErrorClass.GUARD and "aten.sum" in v.message
    assert v.guard == "torch_compute" and v.stage == "guards"


def test_b_copy_task_done_with_a_copy_op(cpu_verifier, transpose_task):
    cheat = (
        KERNEL_PRELUDE
        + """
class ModelNew(nn.Module):
    def forward(self, x):
        touch_kernel[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)
        return x.t().contiguous()
"""
    )
    v = cpu_verifier.check(transpose_task, cheat)
    assert v.error_class == ErrorClass.GUARD and "guard (b)" in v.message


def test_c_cached_result_across_calls(cpu_verifier, add_task):
    cheat = (
        KERNEL_PRELUDE
        + """
_RESULTS = {}


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def forward(self, x, y):
        key = tuple(x.shape)
        if key not in _RESULTS:
            out = torch.empty_like(x)
            add_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
            _RESULTS[key] = out
        touch_kernel[(1,)](x, 1, BLOCK=16)
        return _RESULTS[key]
"""
    )
    v = cpu_verifier.check(add_task, cheat)
    assert v.error_class == ErrorClass.GUARD
    assert "guard (c)" in v.message and "previous call" in v.message


def test_d_patched_library_function(cpu_verifier, add_task):
    cheat = (
        GOOD_ADD
        + """

def _fake_sync(*args, **kwargs):
    return None


torch.cuda.__dict__["synchronize"] = _fake_sync
"""
    )
    v = cpu_verifier.check(add_task, cheat)
    assert v.error_class == ErrorClass.GUARD and v.guard == "static:namespace"
    assert "guard (d)" in v.message and "__dict__" in v.message


def test_d_thread_left_running(cpu_verifier, add_task):
    # reaches the threading module through a computed name: the static guard cannot see it
    cheat = (
        GOOD_ADD
        + """

_load = __builtins__["__im" + "port__"]
_threads = _load("thr" + "eading")
_sleep = _load("time").sleep
_threads.Thread(target=_sleep, args=(30,), daemon=True).start()
"""
    )
    v = cpu_verifier.check(add_task, cheat)
    assert v.error_class == ErrorClass.GUARD and v.guard == "static:dynamic"
    assert "__builtins__" in v.message


def test_e_reference_model_used(cpu_verifier, add_task):
    cheat = GOOD_ADD.replace("out = torch.empty_like(x)", "out = Model()(x, y)")
    v = cpu_verifier.check(add_task, cheat)
    assert v.error_class == ErrorClass.GUARD and "guard (e)" in v.message
    assert v.stage == "guards"  # rejected before running


def test_e_reference_model_found_at_run_time(cpu_verifier, add_task):
    # finds the reference's live Model through the heap, past the static guard
    cheat = (
        KERNEL_PRELUDE
        + """
_load = __builtins__["__im" + "port__"]


class ModelNew(nn.Module):
    def forward(self, x, y):
        touch_kernel[(1,)](x, 1, BLOCK=16)
        heap = _load("g" + "c").get_objects()
        ref = next(o for o in heap if type(o).__name__ == "Mo" + "del")
        return ref(x, y)
"""
    )
    v = cpu_verifier.check(add_task, cheat)
    assert v.error_class == ErrorClass.GUARD and "__builtins__" in v.message


def test_mutating_inputs_is_caught(cpu_verifier, add_task):
    zeroes_x = GOOD_ADD.replace("        return out", "        x.zero_()\n        return out")
    v = cpu_verifier.check(add_task, zeroes_x)
    assert v.error_class == ErrorClass.MUTATION and "modified its input[0]" in v.message
    kernel_writes_y = GOOD_ADD.replace(
        "tl.store(out_ptr + offs, x + y, mask=mask)",
        "tl.store(out_ptr + offs, x + y, mask=mask)\n    tl.store(y_ptr + offs, x, mask=mask)",
    )
    assert kernel_writes_y != GOOD_ADD
    v = cpu_verifier.check(add_task, kernel_writes_y)
    assert v.error_class == ErrorClass.MUTATION and "modified its input[1]" in v.message


def test_autotuned_kernel_passes_on_cpu(cpu_verifier, add_task):
    # autotuning's own torch ops are not the candidate's; on CPU each config runs once
    tuned = GOOD_ADD.replace(
        "@triton.jit",
        '@triton.autotune(configs=[triton.Config({"BLOCK": 512}), triton.Config({"BLOCK": 1024})],'
        ' key=["n"])\n@triton.jit',
    ).replace(
        "add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)",
        'add_kernel[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)',
    )
    assert tuned.count("autotune") == 1 and "meta[" in tuned
    v = cpu_verifier.check(add_task, tuned)
    assert v.passed, v.message


def test_the_verifiers_own_kernels_are_not_counted_as_the_candidates_launches():
    """The timing inputs' perturbation launches a Triton kernel in the candidate's process
    before each timed call; counted, it would give a forward that launches nothing a launch."""
    from types import SimpleNamespace

    from upskills.verify.guards import LaunchCounter
    from upskills.verify.perturb_kernel import fused_kernel

    pytest.importorskip("triton")
    counter = LaunchCounter()
    run = counter._wrap(lambda *args, **kwargs: "ran")
    assert run(fused_kernel(), grid=(1,)) == "ran" and counter.state.launches == 0
    assert run(SimpleNamespace(), grid=(1,)) == "ran" and counter.state.launches == 1


def test_elements_copied_from_a_gpu_tensor_to_the_host_are_counted():
    """``guards.to_host`` reads devices only: a meta tensor stands in for a GPU's here (no CUDA
    on this machine; the whole check of a host fallback is ``test_load_inline.py``'s GPU test).
    Copies to the host count; host-to-host copies and copies to the device do not."""
    import torch

    from upskills.verify.guards import to_host

    device, host = torch.empty(1000, device="meta"), torch.empty(1000)
    assert to_host(((device,), {"device": "cpu"}), host.clone()) == 1000  # x.cpu()
    assert to_host(((host, device), {}), host) == 1000  # host.copy_(x) returns host
    assert to_host(((host,), {}), host.clone()) == 0
    assert to_host(((host,), {"device": "cuda"}), device) == 0


def test_host_memory_handed_to_a_gpu_checks_kernels_is_counted(monkeypatch):
    """In a GPU trial, host tensors handed to a kernel or an extension's function count
    (``guards.host_reach``): a kernel fills pinned host memory and C++ adds on the host. So do
    raw addresses the driver says are pinned host memory (``LaunchState.host_addresses``: an
    integer, an object with a data_ptr(); thirty-sixth session). A CPU check's kernels take
    host tensors, and outside a trial (the timed calls) nothing is counted. A meta tensor and
    a stand-in driver answer for a GPU's; the whole checks are ``test_load_inline.py``'s GPU
    tests. A GPU trial's launch gets each pointer as the address that was read
    (``host_memory.launch_arguments``; thirty-seventh session)."""
    from types import SimpleNamespace

    import torch

    from upskills.verify import host_memory
    from upskills.verify.guards import LaunchCounter, _CountingModule

    pinned = 0x7F00_0000_0000
    monkeypatch.setattr(host_memory, "pointer_kind", lambda a: "host" if a == pinned else None)
    counter = LaunchCounter()
    state = counter.state
    launched: list[tuple[object, ...]] = []
    launch = counter._wrap(lambda *args, **kwargs: launched.append(args) or "ran")
    ext = _CountingModule(SimpleNamespace(add=lambda *args: "added"), counter)
    host, device = torch.empty(1000), torch.empty(1000, device="meta")
    buffer = SimpleNamespace(data_ptr=lambda: pinned)

    def both() -> None:
        assert launch(SimpleNamespace(), host, device, buffer, 1 << 20, grid=(1,)) == "ran"
        assert ext.add(device, [host], pinned) == "added"

    state.inputs = frozenset()
    both()
    assert (state.host_reach, state.host_addresses, state.launches) == (0, 0, 2)  # a CPU trial
    assert launched[-1][1] is host  # a CPU trial's launch gets its arguments as they are
    state.gpu = True
    both()
    assert (state.host_reach, state.host_addresses) == (2000, 2)
    assert isinstance(launched[-1][1], host_memory.Pointer)  # a GPU trial's: each read once
    assert launched[-1][1].data_ptr() == host.data_ptr() and launched[-1][4] == 1 << 20
    state.inputs = None
    both()
    assert (state.host_reach, state.host_addresses, state.launches) == (2000, 2, 6)
    assert launched[-1][1] is host  # the timed calls' launches are not slowed
