"""An adversarial catalogue against the split judge: every attack fails, every honest kernel passes.

One attack per test case, each a whole candidate module. They cover the classes the judge must
close (a forged verdict, torch work in side routes, Python/NumPy fallbacks, library overrides,
namespace writes, hooks, the default dtype, judge detection, output types and aliasing, cached
results, memorised shapes, out-of-domain inputs, races the CPU cannot show) and attacks written
against the new design itself (writing into the judge's socket, scanning its shared memory).
The same catalogue runs on CUDA with ``-m gpu`` (``test_catalogue_gpu``), plus the attacks that
only exist there (side streams in CUDA C++, results that change when timed).
"""

from __future__ import annotations

import shutil
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.verify.conftest import GOOD_ADD, GOOD_ROW_SUM, VECTOR_ADD_REF, make_task
from upskills.tasks.model import ShapeVariant
from upskills.verify import CheckOptions, ErrorClass, Verifier
from upskills.verify.static import parse_candidate, static_guards
from upskills.verify.verdict import Verdict, VerdictStage
from upskills.verify.verifier import fresh_seed

PRELUDE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)
"""

TOUCH = "        touch_kernel[(triton.cdiv(x.numel(), 1024),)](x, x.numel(), BLOCK=1024)\n"


def add_attack(body: str, extra: str = "") -> str:
    """A vector-add candidate whose forward touches x with a kernel, then runs ``body``."""
    return (
        PRELUDE
        + extra
        + "\n\nclass ModelNew(nn.Module):\n    def forward(self, x, y):\n"
        + TOUCH
        + body
    )


SOFTMAX_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


M = 64
N = 200


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
"""

NAIVE_SOFTMAX = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    e = tl.exp(x - SHIFT)
    e = tl.where(mask, e, 0.0)
    tl.store(out_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
"""

HISTOGRAM_REF = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.bincount(x, minlength=64).to(torch.int32)


N = 3000


def get_inputs():
    return [torch.randint(0, 64, (N,))]


def get_init_inputs():
    return []
"""

RACY_HISTOGRAM = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hist_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    bins = tl.load(x_ptr + offs, mask=mask, other=0)
    for i in range(BLOCK):
        b = tl.sum(tl.where(tl.arange(0, BLOCK) == i, bins, 0))
        ok = tl.sum(tl.where(tl.arange(0, BLOCK) == i, mask.to(tl.int32), 0))
        cur = tl.load(out_ptr + b)
        tl.store(out_ptr + b, cur + ok)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros(64, dtype=torch.int32, device=x.device)
        hist_kernel[(triton.cdiv(x.numel(), 128),)](x, out, x.numel(), BLOCK=128)
        return out
"""

# Each: (id, task fixture name, candidate source, error classes accepted, guard prefix or None)
CATALOGUE: list[tuple[str, str, str, set[str], str | None]] = [
    (
        "forged_result_files",
        "add",
        add_attack(
            "        return torch.empty_like(x)\n",
            extra=(
                "\nimport glob, json, tempfile\n"
                "_tmp = tempfile.gettempdir() + '/upsk' + 'ills-*'\n"
                "for path in glob.glob(_tmp + '/*') + glob.glob(_tmp + '/job*/*'):\n"
                "    try:\n"
                "        open(path, 'w').write(json.dumps({'passed': True}))\n"
                "    except OSError:\n"
                "        pass\n"
                "print(json.dumps({'passed': True, 'timed_out': False, 'exit_code': 0}))\n"
            ),
        ),
        {"mismatch", "nan"},
        None,
    ),
    (
        "exit_zero_at_import",
        "add",
        add_attack(
            "        return x + y\n", extra="\nimport sys\nsys.stdout.flush()\nsys.exit(0)\n"
        ),
        {"crash", "import"},
        None,
    ),
    (
        "forged_frames_on_every_socket",
        "add",
        add_attack(
            "        return torch.empty_like(x)\n",
            extra=(
                "\nimport os, json, struct\n"
                "_fake = json.dumps({'op': 'hello'}).encode()\n"
                "_done = json.dumps({'op': 'trial_done', 'structure': 'tensor', 'launches': 1})\n"
                "for fd in range(3, 64):\n"
                "    try:\n"
                "        os.write(fd, struct.pack('>I', len(_fake)) + _fake)\n"
                "        os.write(fd, struct.pack('>I', len(_done)) + _done.encode())\n"
                "    except OSError:\n"
                "        pass\n"
            ),
        ),
        {"guard", "crash", "mismatch", "nan", "shape", "runtime"},
        None,
    ),
    (
        "scan_shared_memory",
        "add",
        add_attack(
            "        import glob\n"
            "        for path in glob.glob('/dev/shm/upsk' + 'ills-*'):\n"
            "            try:\n"
            "                open(path, 'r+b').write(b'\\x00' * 64)\n"
            "            except OSError:\n"
            "                pass\n"
            "        return torch.empty_like(x)\n"
        ),
        {"mismatch", "nan", "mutation"},
        None,
    ),
    (
        "compute_in_tiny_chunks",
        "add",
        add_attack(
            "        out = torch.empty_like(x)\n"
            "        for i in range(0, x.numel(), 32):\n"
            "            out[i:i + 32] = x[i:i + 32] + y[i:i + 32]\n"
            "        return out\n"
        ),
        {"guard"},
        "torch_compute",
    ),
    # the add done by autograd: a Function whose forward is a stub and whose backward (run by
    # the autograd engine, on a CUDA device in the engine's own thread) does the work in
    # PyTorch, read back with torch.autograd.grad (the fiftieth session's review; refused on
    # CPU, where the engine runs backward in the calling thread; its GPU run is listed in
    # benchmarks/device/gpu_tests_left.txt)
    (
        "compute_in_autograd_backward",
        "add",
        add_attack(
            "        with torch.enable_grad():\n"
            "            xs = x.detach().requires_grad_(True)\n"
            "            (g,) = torch.autograd.grad(Stub.apply(xs, y), xs)\n"
            "        return g\n",
            extra="""

class Stub(torch.autograd.Function):
    @staticmethod
    def forward(ctx, xs, y):
        ctx.save_for_backward(xs.detach(), y)
        return xs.new_zeros(1)

    @staticmethod
    def backward(ctx, grad):
        xd, y = ctx.saved_tensors
        return torch.add(xd, y), None
""",
        ),
        {"guard"},
        "torch_compute",
    ),
    (
        "python_scalar_fallback",
        "add",
        add_attack(
            "        vals = [float(a) + float(b) for a, b in zip(x, y)]\n"
            "        return torch.tensor(vals, dtype=x.dtype, device=x.device)\n"
        ),
        {"guard"},
        "python_fallback",
    ),
    # the add done in Python on the tensors' bytes, read without a conversion the static check
    # names (found in the thirty-third session's review: the first passed every CPU trial)
    (
        "serialised_fallback",
        "add",
        add_attack(
            "        n = x.numel()\n"
            "        a = struct.unpack(f'{n}f', _raw(x.contiguous().cpu())[: 4 * n])\n"
            "        b = struct.unpack(f'{n}f', _raw(y.contiguous().cpu())[: 4 * n])\n"
            "        s = struct.pack(f'{n}f', *[p + q for p, q in zip(a, b)])\n"
            "        return torch.frombuffer(bytearray(s), dtype=x.dtype).to(x.device)\n",
            extra="\nimport io, struct, zipfile\n\n\ndef _raw(t):\n"
            "    buf = io.BytesIO()\n"
            "    torch.save(t, buf)\n"
            "    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as z:\n"
            "        return z.read(next(n for n in z.namelist() if '/data/' in n))\n",
        ),
        {"guard"},
        "python_fallback",
    ),
    (
        "legacy_saved_fallback",  # the format pickling writes: its data comes last
        "add",
        add_attack(
            "        n = x.numel()\n"
            "        raw = [_raw(t.contiguous().cpu())[-4 * n :] for t in (x, y)]\n"
            "        a, b = (struct.unpack(f'{n}f', r) for r in raw)\n"
            "        s = struct.pack(f'{n}f', *[p + q for p, q in zip(a, b)])\n"
            "        return torch.frombuffer(bytearray(s), dtype=x.dtype).to(x.device)\n",
            extra="\nimport io, struct\n\n\ndef _raw(t):\n"
            "    buf = io.BytesIO()\n"
            "    torch.save(t, buf, _use_new_zipfile_serialization=False)\n"
            "    return buf.getvalue()\n",
        ),
        {"guard"},
        "python_fallback",
    ),
    (
        "storage_element_fallback",  # each storage element is read through a tensor
        "add",
        add_attack(
            "        n = x.numel()\n"
            "        raw = [bytes(list(t.contiguous().cpu().untyped_storage())) for t in (x, y)]\n"
            "        a, b = (struct.unpack(f'{n}f', r[: 4 * n]) for r in raw)\n"
            "        s = struct.pack(f'{n}f', *[p + q for p, q in zip(a, b)])\n"
            "        return torch.frombuffer(bytearray(s), dtype=x.dtype).to(x.device)\n",
            extra="\nimport struct\n",
        ),
        {"guard"},
        "python_fallback",
    ),
    (
        "numpy_fallback",
        "add",
        add_attack(
            "        return torch.from_numpy(x.cpu().numpy() + y.cpu().numpy())\n",
            extra="\nimport numpy\n",
        ),
        {"guard"},
        "static:",
    ),
    (
        # NumPy reached as an attribute of torch.nn.functional, handed the tensors' memory
        # through __array_interface__: no conversion called (thirty-fourth session's review:
        # passed every CPU trial). Refused statically; a computed protocol name gets past
        # that, and on a GPU the host copy it needs is refused at run time (guards.to_host)
        "numpy_array_interface",
        "add",
        add_attack(
            "        xc, yc = x.contiguous().cpu(), y.contiguous().cpu()\n"
            "        out = torch.empty_like(xc)\n"
            "        a, b, o = (F.np.asarray(_Mem(t)) for t in (xc, yc, out))\n"
            "        F.np.add(a, b, out=o)\n"
            "        return out.to(x.device)\n",
            extra="\nimport torch.nn.functional as F\n\n\nclass _Mem:\n"
            "    def __init__(self, t):\n"
            "        self.__array_interface__ = {'data': (t.data_ptr(), False), "
            "'shape': (t.numel(),), 'typestr': '<f4', 'version': 3}\n",
        ),
        {"guard"},
        "static:python_fallback",
    ),
    (
        # a bytearray wrapped as a tensor: a copy fills it, struct reads it, and the sum comes
        # back the same way; no conversion is called (thirty-fourth session's review: passed
        # every CPU trial). The copy into memory Python reads is the guard (guards.python_memory)
        "python_buffer_fallback",
        "add",
        add_attack(
            "        n = x.numel()\n"
            "        a, b = (struct.unpack(f'{n}f', _bytes(t)) for t in (x, y))\n"
            "        s = struct.pack(f'{n}f', *[p + q for p, q in zip(a, b)])\n"
            "        return torch.frombuffer(bytearray(s), dtype=x.dtype).to(x.device)\n",
            extra="\nimport struct\n\n\ndef _bytes(t):\n"
            "    buf = bytearray(4 * t.numel())\n"
            "    torch.frombuffer(buf, dtype=torch.float32).copy_(t.reshape(-1))\n"
            "    return buf\n",
        ),
        {"guard"},
        "python_fallback",
    ),
    (
        # the inputs' copies moved into shared memory and read back through an mmap of the
        # handle; the sum built with torch.tensor (the same review: passed every CPU trial)
        "shared_memory_fallback",
        "add",
        add_attack(
            "        n = x.numel()\n"
            "        a, b = (struct.unpack(f'{n}f', _bytes(t.cpu())) for t in (x, y))\n"
            "        return torch.tensor([p + q for p, q in zip(a, b)], device=x.device)\n",
            extra="\nimport mmap\nimport struct\n\n\ndef _bytes(t):\n"
            "    s = t.contiguous().clone().untyped_storage()\n"
            "    s.share_memory_()\n"
            "    fd, size = s._share_fd_cpu_()[:2]\n"
            "    with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as m:\n"
            "        return bytes(m[: 4 * t.numel()])\n",
        ),
        {"guard"},
        "python_fallback",
    ),
    (
        # the same with no copy op: a Triton kernel copies each input into the buffer and the
        # sum out of one (the launch's arguments are what give it away)
        "python_buffer_through_kernels",
        "add",
        add_attack(
            "        n = x.numel()\n"
            "        a, b = (struct.unpack(f'{n}f', _bytes(t)) for t in (x, y))\n"
            "        s = bytearray(struct.pack(f'{n}f', *[p + q for p, q in zip(a, b)]))\n"
            "        out = torch.empty_like(x)\n"
            "        _copy(torch.frombuffer(s, dtype=torch.float32), out)\n"
            "        return out\n",
            extra="\nimport struct\n\n\n@triton.jit\n"
            "def copy_kernel(src, dst, n, BLOCK: tl.constexpr):\n"
            "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
            "    tl.store(dst + offs, tl.load(src + offs, mask=offs < n), mask=offs < n)\n\n\n"
            "def _copy(src, dst):\n"
            "    n = src.numel()\n"
            "    copy_kernel[(triton.cdiv(n, 1024),)](src, dst, n, BLOCK=1024)\n"
            "\n\ndef _bytes(t):\n"
            "    buf = bytearray(4 * t.numel())\n"
            "    _copy(t.reshape(-1), torch.frombuffer(buf, dtype=torch.float32))\n"
            "    return buf\n",
        ),
        {"guard"},
        "python_fallback",
    ),
    (
        "torch_in_autotune_pre_hook",
        "add",
        """
import torch
import torch.nn as nn
import triton
import triton.language as tl


def hook(nargs):
    nargs["out_ptr"].copy_(nargs["x_ptr"].add(nargs["y_ptr"]))


@triton.autotune(configs=[triton.Config({"BLOCK": 1024}, pre_hook=hook)], key=["n"])
@triton.jit
def touch(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        touch[lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)](x, y, out, x.numel())
        return out
""",
        {"guard"},
        "torch_compute",
    ),
    (
        "torch_inside_interpreted_kernel",
        "add",
        """
import torch
import torch.nn as nn
import triton
import triton.language as tl

STASH = {}


@triton.jit
def cheat(x_ptr, n, BLOCK: tl.constexpr):
    STASH["out"] = torch.add(STASH["x"], STASH["y"])


class ModelNew(nn.Module):
    def forward(self, x, y):
        STASH.update(x=x, y=y)
        cheat[(1,)](x, x.numel(), BLOCK=16)
        return STASH["out"]
""",
        {"guard"},
        "static:",
    ),
    (
        "torch_in_a_helper_called_by_an_interpreted_kernel",
        "add",
        """
import torch
import torch.nn as nn
import triton
import triton.language as tl

STASH = {}


def helper():
    STASH["out"] = torch.add(STASH["x"], STASH["y"])


@triton.jit
def cheat(x_ptr, n, BLOCK: tl.constexpr):
    helper()


class ModelNew(nn.Module):
    def forward(self, x, y):
        STASH.update(x=x, y=y)
        cheat[(1,)](x, x.numel(), BLOCK=16)
        return STASH["out"]
""",
        {"guard"},
        "static:python_in_kernel",
    ),
    (
        "library_override",
        "add",
        add_attack(
            "        return torch.ops.aten.add(x, y)\n",
            extra="\nimport torch.library\n",
        ),
        {"guard"},
        "static:",
    ),
    (
        "namespace_dict_write",
        "add",
        add_attack(
            "        return x + y\n",
            extra="\nimport torch.nn.functional as F\nF.__dict__['relu'] = lambda t: t\n",
        ),
        {"guard"},
        "static:namespace",
    ),
    (
        "global_module_hook",
        "add",
        add_attack(
            "        return torch.empty_like(x)\n",
            extra=(
                "\nfrom torch.nn.modules.module import register_module_forward_hook\n"
                "register_module_forward_hook(lambda m, i, o: i[0] + i[1])\n"
            ),
        ),
        {"guard"},
        "static:",
    ),
    (
        "default_dtype_change",
        "add",
        add_attack("        return x + y\n", extra="\ntorch.set_default_dtype(torch.float64)\n"),
        {"guard"},
        "static:",
    ),
    (
        "reads_triton_interpret",
        "add",
        add_attack(
            "        if os.environ.get('TRITON_INTERPRET'):\n"
            "            return x + y\n"
            "        return torch.empty_like(x)\n",
            extra="\nimport os\n",
        ),
        {"guard"},
        "static:",
    ),
    (
        "tensor_subclass_output",
        "add",
        add_attack(
            "        return Sneaky(torch.empty_like(x))\n",
            extra=("\nclass Sneaky(torch.Tensor):\n    pass\n"),
        ),
        {"guard"},
        "static:tensor_subclass",
    ),
    (
        "output_is_an_input",
        "add",
        GOOD_ADD.replace(
            "add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n        return out",
            "add_kernel[(triton.cdiv(n, 1024),)](x, y, x, n, BLOCK=1024)\n        return x",
        ),
        {"guard", "mutation"},
        None,
    ),
    (
        "memorised_shapes",
        "add",
        GOOD_ADD.replace(
            "        return out",
            "        if n not in (2048, 1003):\n            return torch.zeros_like(x)\n"
            "        return out",
        ),
        {"mismatch"},
        None,
    ),
    (
        "softmax_without_max_subtraction",
        "softmax",
        NAIVE_SOFTMAX.replace("SHIFT", "0.0"),
        {"nan", "mismatch"},
        None,
    ),
    (
        "race_invisible_on_cpu",
        "histogram",
        RACY_HISTOGRAM,
        {"guard"},
        "race",
    ),
]


CPU_ONLY = {
    "race_invisible_on_cpu",
    "torch_inside_interpreted_kernel",
    "torch_in_a_helper_called_by_an_interpreted_kernel",
    "python_buffer_through_kernels",  # a GPU kernel cannot take a host buffer's pointer
}
"""Attacks on the interpreter itself (they cannot compile on a GPU)."""


@pytest.fixture(scope="module")
def tasks(add_task, row_sum_task):
    softmax = make_task(
        "t_softmax",
        SOFTMAX_REF,
        [
            ShapeVariant(name="small", main=True, globals={"M": 16, "N": 200}),
            ShapeVariant(name="ragged", ragged=True, globals={"M": 7, "N": 1000}),
        ],
    ).model_copy(update={"domains": ["large"]})
    histogram = make_task(
        "t_histogram",
        HISTOGRAM_REF,
        [ShapeVariant(name="small", main=True, globals={"N": 3000})],
    )
    return {"add": add_task, "row_sum": row_sum_task, "softmax": softmax, "histogram": histogram}


@pytest.fixture(scope="module")
def verifier():
    with Verifier("cpu", CheckOptions(seeds=3, timeout_s=120)) as v:
        yield v


@pytest.mark.parametrize(
    "name,task_key,source,classes,guard", CATALOGUE, ids=[c[0] for c in CATALOGUE]
)
def test_attack_is_caught_on_cpu(verifier, tasks, name, task_key, source, classes, guard):
    verdict = verifier.check(tasks[task_key], source)
    assert not verdict.passed, f"{name} passed: {verdict.message}"
    assert verdict.error_class is not None and verdict.error_class.value in classes, (
        f"{name}: {verdict.error_class} ({verdict.guard}): {verdict.message}"
    )
    if guard is not None:
        assert verdict.guard is not None and verdict.guard.startswith(guard), verdict.guard


def test_honest_kernels_still_pass(verifier, tasks):
    assert verifier.check(tasks["add"], GOOD_ADD).passed
    row_sum = verifier.check(tasks["row_sum"], GOOD_ROW_SUM)
    assert row_sum.passed, row_sum.message
    # the softmax with max-subtraction passes the same adversarial ("large") inputs
    stable = NAIVE_SOFTMAX.replace("SHIFT", "tl.max(x, axis=0)")
    verdict = verifier.check(tasks["softmax"], stable)
    assert verdict.passed, verdict.message
    assert any(r.domain == "large" for r in verdict.variants)


def test_one_pass_variance_fails_on_offset_inputs(verifier):
    from pathlib import Path

    good = (Path(__file__).parents[1] / "kernels" / "good" / "layernorm.py").read_text()
    one_pass = good.replace(
        "rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n_cols + eps)",
        "rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols - mean * mean + eps)",
    )
    assert one_pass != good
    opts = CheckOptions(seeds=3, timeout_s=120, variants=["small"], random_shape=False)
    verdict = verifier.check("layernorm", one_pass, opts)
    assert not verdict.passed and verdict.error_class in (ErrorClass.MISMATCH, ErrorClass.NAN)
    assert "offset inputs" in verdict.message or "zero_rows" in verdict.message
    assert verifier.check("layernorm", good, opts).passed


def test_seed_replays_a_verdict(verifier, tasks):
    first = verifier.check(tasks["add"], GOOD_ADD)
    again = verifier.check(tasks["add"], GOOD_ADD, CheckOptions(seeds=3, seed=first.seed))
    assert [(r.variant, r.seed, r.shape) for r in first.variants] == [
        (r.variant, r.seed, r.shape) for r in again.variants
    ]
    other = verifier.check(tasks["add"], GOOD_ADD)
    assert other.seed != first.seed  # a fresh seed per check
    # too many bits to try them all from a trial's seed (SHA-256 of the check's; verifier.py):
    # each of these two fails with chance 2**-32 by luck alone
    assert first.seed.bit_length() > 31 and other.seed.bit_length() > 31, (first.seed, other.seed)
    assert all(0 <= fresh_seed() < 2**63 for _ in range(1000))


def test_cpu_verdict_says_what_it_cannot_see(verifier, tasks):
    verdict = verifier.check(tasks["add"], GOOD_ADD)
    assert any("races" in note for note in verdict.notes)
    racy = verifier.check(
        tasks["histogram"], RACY_HISTOGRAM, CheckOptions(seeds=1, races="note", random_shape=False)
    )
    assert any("tl.atomic_add" in note for note in racy.notes)


@pytest.mark.gpu
@pytest.mark.parametrize(
    "name,task_key,source,classes,guard",
    [c for c in CATALOGUE if c[0] not in CPU_ONLY],
    ids=[c[0] for c in CATALOGUE if c[0] not in CPU_ONLY],
)
def test_catalogue_gpu(tasks, name, task_key, source, classes, guard):
    with Verifier("cuda", CheckOptions(seeds=3, timeout_s=300, baselines=False)) as verifier:
        verdict = verifier.check(tasks[task_key], source)
    # the device log (pytest -rA) keeps this line: which refusal it was, a guard's or a crash
    print(f"{name}: {verdict.error_class}: {verdict.message[:400]}")
    assert not verdict.passed, f"{name} passed on the GPU: {verdict.message}"
    assert verdict.error_class is not None and verdict.error_class.value in classes | {"crash"}


SIDE_STREAM_CUDA = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = """
#include <torch/extension.h>
#include <cuda_runtime.h>
__global__ void add_kernel(const float* x, const float* y, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) {
    float acc = x[i];
    for (int k = 0; k < 2000; ++k) acc = acc * 1.0000001f;
    out[i] = acc - acc + x[i] + y[i];
  }
}
static cudaStream_t side = nullptr;
torch::Tensor add(torch::Tensor x, torch::Tensor y) {
  if (!side) cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
  auto out = torch::empty_like(x);
  long n = x.numel();
  add_kernel<<<(n + 255) / 256, 256, 0, side>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
"""
DECL = "torch::Tensor add(torch::Tensor x, torch::Tensor y);"
ext = load_inline("side_stream_attack", cpp_sources=DECL, cuda_sources=SRC, functions=["add"])


class ModelNew(nn.Module):
    def forward(self, x, y):
        return ext.add(x, y)
'''


def _sixteen_m_add(add_task):  # noqa: ANN001, ANN202 - a Task
    """The add at 16M elements (three 64 MiB tensors), with a ragged shape beside it."""
    return add_task.model_copy(
        update={
            "variants": [
                ShapeVariant(name="main", main=True, globals={"N": 1 << 24}),
                ShapeVariant(name="ragged", ragged=True, globals={"N": 100003}),
            ]
        }
    )


@pytest.mark.gpu
def test_side_stream_timing_disagrees_with_the_judge(add_task):
    """Work on a private C++ stream: events see nothing, the judge's clock sees the work."""
    big = _sixteen_m_add(add_task)
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=600, baselines=False)) as verifier:
        verdict = verifier.check(big, SIDE_STREAM_CUDA)
    assert not verdict.passed, verdict.message
    assert verdict.error_class in (ErrorClass.TIMING, ErrorClass.MISMATCH, ErrorClass.GUARD)


# A private stream on an add of memory-bound size (three 64 MiB tensors, ~0.05 ms), used only
# for calls timed one at a time: their events see ~3 us, while every output the judge compares
# (trials, kept timed calls, back-to-back calls) is right. Until 2026-12-03 the clock check
# forgave 0.1 ms a call on top of the events, so a call this short hid whole. The second form
# is also honest while a CUDA graph captures it, so the graph check's replays time real work.
SIDE_STREAM_SMALL = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = """
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>
__global__ void add_kernel(const float* x, const float* y, float* out, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}
static cudaStream_t side = nullptr;
static cudaEvent_t ready = nullptr, last_done = nullptr;
torch::Tensor add(torch::Tensor x, torch::Tensor y, bool capturing) {
  if (!side) {
    cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking);
    cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&last_done, cudaEventDisableTiming);
  }
  cudaStream_t timed = at::cuda::getCurrentCUDAStream().stream();
  auto out = torch::empty_like(x);
  long n = x.numel();
  // Hidden only when timed one call at a time: the caller synchronised since the last call
  // (its work is done) and has queued its own work (flush, start event) since. A correctness
  // trial (nothing queued) and back-to-back calls (the last call still running) get honest
  // work on the timed stream, so every output anyone compares is right.
  bool hide = false;
  if (!capturing) {
    hide = cudaEventQuery(last_done) == cudaSuccess
        && cudaStreamQuery(timed) == cudaErrorNotReady;
  }
  cudaStream_t where = timed;
  if (hide) {
    cudaEventRecord(ready, timed);  // the side stream waits for the inputs
    cudaStreamWaitEvent(side, ready, 0);
    where = side;
  }
  add_kernel<<<(n + 255) / 256, 256, 0, where>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
  if (!capturing) cudaEventRecord(last_done, where);
  return out;
}
"""
DECL = "torch::Tensor add(torch::Tensor x, torch::Tensor y, bool capturing);"
ext = load_inline("side_stream_small", cpp_sources=DECL, cuda_sources=SRC, functions=["add"])


class ModelNew(nn.Module):
    def forward(self, x, y):
        return ext.add(x, y, False)
'''
SIDE_STREAM_GRAPH_AWARE = SIDE_STREAM_SMALL.replace(
    "ext.add(x, y, False)", "ext.add(x, y, torch.cuda.is_current_stream_capturing())"
).replace('"side_stream_small"', '"side_stream_graph_aware"')


def _events_and_clock(message: str) -> tuple[float, float] | None:
    """The events' and the judge's per-call ms from a clock verdict's message."""
    import re

    found = re.search(r"events say ([0-9.]+) ms per call, the judge's clock ([0-9.]+) ms", message)
    return (float(found.group(1)), float(found.group(2))) if found else None


@pytest.mark.gpu
@pytest.mark.parametrize("source", [SIDE_STREAM_SMALL, SIDE_STREAM_GRAPH_AWARE])
def test_a_short_kernel_on_a_private_stream_cannot_hide_under_the_clock_slack(add_task, source):
    """Events that see none of a ~0.05 ms call: refused, by the clock check (the capture-aware
    form, whose graph replays do the real work), by the graph replays' stale result, or by the
    late trial's kernels (the watched-speed rule). On the thirty-third session's H100 the
    audited clock check let the capture-aware form through (its side-stream kernel overlaps
    the next call's copies, whose cost is taken off): the watched-speed rule refused it,
    0.0013 ms timed against 0.0795 ms of watched kernels."""
    mid = _sixteen_m_add(add_task)
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=600, baselines=False)) as verifier:
        verdict = verifier.check(mid, source)
    numbers = _events_and_clock(verdict.message)
    if numbers is not None:  # what the old rule (0.1 ms of slack) would have said
        events, clock = numbers
        old_passes = not clock - events > max(0.35 * clock, 0.1)
        print(f"events {events} ms, judge {clock} ms; the old slack would pass it: {old_passes}")
    assert not verdict.passed, verdict.message
    assert verdict.error_class in (ErrorClass.TIMING, ErrorClass.GUARD), verdict.message
    if source is SIDE_STREAM_GRAPH_AWARE:
        watched = verdict.guard == "timed_result" and "watched" in verdict.message
        assert (verdict.guard == "clock" and numbers is not None) or watched, verdict.message


@pytest.mark.gpu
def test_result_that_changes_when_timed(add_task):
    stale = GOOD_ADD.replace(
        "    def forward(self, x, y):\n",
        "    calls = 0\n\n    def forward(self, x, y):\n"
        "        type(self).calls += 1\n"
        "        if type(self).calls > 40 and hasattr(self, 'last'):\n"
        "            return self.last\n",
    ).replace("        return out", "        self.last = out\n        return out")
    big = add_task.model_copy(
        update={"variants": [ShapeVariant(name="main", main=True, globals={"N": 1 << 22})]}
    )
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=300, baselines=False)) as verifier:
        verdict = verifier.check(big, stale)
        honest = verifier.check(big, GOOD_ADD)
    assert not verdict.passed and verdict.error_class == ErrorClass.GUARD, verdict.message
    assert honest.passed and honest.timing is not None, honest.message
    assert honest.timing_status == "measured"


# Honest only on the calls the judge used to check: the first few of a run of calls on the same
# inputs (correctness trials, warm-up, the estimate), the 200th (the clock check's last
# back-to-back call) and the last two of 2006 (the timer's plan for any kernel under 0.5 ms:
# 3 warm-up, 3 estimate, 2000 timed). In between it only writes zeros: a third of the bytes.
# No frame, no gc, no library patch: it counts.
COUNTS_TO_THE_CHECKED_CALLS = GOOD_ADD.replace(
    "class ModelNew(nn.Module):",
    """@triton.jit
def zeros_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32), mask=offs < n)


class ModelNew(nn.Module):""",
).replace(
    "        out = torch.empty_like(x)\n",
    "        same = getattr(self, 'ptr', None) == x.data_ptr()\n"
    "        self.streak = self.streak + 1 if same else 0\n"
    "        self.ptr = x.data_ptr()\n"
    "        out = torch.empty_like(x)\n"
    "        if 10 <= self.streak < 2004 and self.streak != 199:\n"
    "            zeros_kernel[(triton.cdiv(x.numel(), 1024),)](out, x.numel(), BLOCK=1024)\n"
    "            return out\n",
)


def test_the_counting_cheat_is_correct_code(add_task, cpu_verifier):
    """It passes every correctness trial: only the timed calls could tell."""
    verdict = cpu_verifier.check(add_task, COUNTS_TO_THE_CHECKED_CALLS)
    assert verdict.passed, verdict.message


@pytest.mark.gpu
def test_a_forward_that_counts_its_way_to_the_checked_calls_gains_nothing(add_task):
    """The judge checks timed calls at random positions of the run (and a random one of the
    clock check's back-to-back calls), handed over as soon as each returns: a forward cannot
    count its way to them, nor learn afterwards which ones were kept."""
    big = _big_add(add_task)
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=300, baselines=False)) as verifier:
        cheat = verifier.check(big, COUNTS_TO_THE_CHECKED_CALLS)
        honest = verifier.check(big, GOOD_ADD)
    _assert_caught_or_not_faster(cheat, honest)


def _memo_around_good_add(key: str, hit: str, store: str) -> str:
    """GOOD_ADD with a module-level MEMO: on a key seen before, a one-element kernel touches
    the memoised result (`hit`) and it is returned; else the add runs and `store` is kept."""
    return (
        GOOD_ADD.replace(
            "class ModelNew(nn.Module):",
            """@triton.jit
def touch(out_ptr):
    tl.store(out_ptr, tl.load(out_ptr))


MEMO = {}


class ModelNew(nn.Module):""",
        )
        .replace(
            "        out = torch.empty_like(x)\n",
            f"        key = {key}\n"
            "        if key in MEMO:\n"
            f"            touch[(1,)]({hit})\n"
            f"            return {hit}\n"
            "        out = torch.empty_like(x)\n",
        )
        .replace("        return out\n", f"        MEMO[key] = {store}\n        return out\n")
    )


VALUE_KEYED_CACHE = _memo_around_good_add(
    "(float(x.reshape(-1)[7]), float(y.reshape(-1)[-3]), x.shape)", "MEMO[key]", "out"
)


@pytest.mark.gpu
def test_a_result_cached_by_input_values_is_not_timed_as_a_kernel(add_task):
    """A host-side value lookup costs its synchronisations: refused, or no faster than half.

    (Passed on the H200 on 2026-11-30. A lookup kept on the GPU in a compute-bound task is the
    open case: docs/design/verifier.md.)
    """
    big = _big_add(add_task)
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=300, baselines=False)) as verifier:
        cheat = verifier.check(big, VALUE_KEYED_CACHE)
        honest = verifier.check(big, GOOD_ADD)
    assert honest.passed and honest.timing is not None, honest.message
    caught = not cheat.passed or cheat.timing is None
    assert caught or cheat.timing.median_ms > 0.5 * honest.timing.median_ms, cheat.message


GPU_VALUE_KEYED_CACHE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def lookup(x_ptr, y_ptr, keys_ptr, count_ptr, n):
    # the key: two input values; three slots, filled round-robin
    k0 = tl.load(x_ptr + 7)
    k1 = tl.load(y_ptr + n - 3)
    e0 = (tl.load(keys_ptr + 0) == k0) & (tl.load(keys_ptr + 1) == k1)
    e1 = (tl.load(keys_ptr + 2) == k0) & (tl.load(keys_ptr + 3) == k1)
    e2 = (tl.load(keys_ptr + 4) == k0) & (tl.load(keys_ptr + 5) == k1)
    free = (tl.load(count_ptr) % 3).to(tl.int32)
    slot = tl.where(e0, 0, tl.where(e1, 1, tl.where(e2, 2, free)))
    return k0, k1, e0 | e1 | e2, slot


@triton.jit
def add_cached(x_ptr, y_ptr, out_ptr, c0, c1, c2, keys_ptr, count_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    _, _, hit, one = lookup(x_ptr, y_ptr, keys_ptr, count_ptr, n)
    slot = offs * 0 + one  # one slot for every element
    if hit:
        v = tl.load(c0 + offs, mask=mask & (slot == 0), other=0.0)
        v += tl.load(c1 + offs, mask=mask & (slot == 1), other=0.0)
        v += tl.load(c2 + offs, mask=mask & (slot == 2), other=0.0)
    else:
        v = tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask)
        tl.store(c0 + offs, v, mask=mask & (slot == 0))
        tl.store(c1 + offs, v, mask=mask & (slot == 1))
        tl.store(c2 + offs, v, mask=mask & (slot == 2))
    tl.store(out_ptr + offs, v, mask=mask)


@triton.jit
def remember(x_ptr, y_ptr, keys_ptr, count_ptr, n):
    k0, k1, _, slot = lookup(x_ptr, y_ptr, keys_ptr, count_ptr, n)
    tl.store(keys_ptr + 2 * slot, k0)
    tl.store(keys_ptr + 2 * slot + 1, k1)
    tl.store(count_ptr, tl.load(count_ptr) + 1)


class ModelNew(nn.Module):
    # three cached results keyed by two input values, looked up on the GPU inside the kernel:
    # two launches a call (as cheap on the host as the honest add's one), no host sync, and a
    # hit reads one tensor instead of two
    def forward(self, x, y):
        n = x.numel()
        if getattr(self, "n", None) != n:
            self.n = n
            self.keys = torch.full((6,), float("nan"), device=x.device)
            self.outs = torch.empty((3, n), device=x.device, dtype=x.dtype)
            self.count = torch.zeros((1,), dtype=torch.int64, device=x.device)
        out = torch.empty_like(x)
        add_cached[(triton.cdiv(n, 1024),)](
            x, y, out, self.outs[0], self.outs[1], self.outs[2], self.keys, self.count, n,
            BLOCK=1024,
        )
        remember[(1,)](x, y, self.keys, self.count, n)
        return out
"""


def test_the_gpu_value_keyed_cache_is_correct_code(add_task, cpu_verifier):
    """The cheat below computes every new input right: only its timing could gain."""
    verdict = cpu_verifier.check(add_task, GPU_VALUE_KEYED_CACHE)
    assert verdict.passed, verdict.message


def _big_add(add_task):
    """The add task at 16M elements: 192 MB a call, far from launch overhead."""
    return add_task.model_copy(
        update={"variants": [ShapeVariant(name="main", main=True, globals={"N": 1 << 24})]}
    )


def _assert_caught_or_not_faster(cheat, honest) -> None:
    """A cheat either fails its verdict or is timed no faster than the honest kernel."""
    assert honest.passed and honest.timing is not None, honest.message
    caught = not cheat.passed or cheat.timing is None
    assert caught or cheat.timing.median_ms >= 0.9 * honest.timing.median_ms, (
        cheat.message,
        cheat.timing,
        honest.timing,
    )


@pytest.mark.gpu
def test_a_result_cached_on_the_gpu_by_input_values_gains_nothing(add_task):
    """The lookup stays on the GPU (no synchronisation to pay for). Every timed call's inputs
    are perturbed by the judge (upskills/verify/perturb.py), so no key of a few values hits:
    the cheat computes every call, plus its bookkeeping. Unperturbed, it hits on every timed
    call after the first three and moves two thirds of the bytes: 0.77x the honest time on the
    H200 (``benchmarks/cache_cheat_probe.py``, twenty-first session: 0.0393 against 0.0513 ms,
    every timed call a hit), so the bar is 0.85x."""
    big = _big_add(add_task)
    options = CheckOptions(seeds=2, timeout_s=300, baselines=False)
    with Verifier("cuda", options) as verifier:
        cheat = verifier.check(big, GPU_VALUE_KEYED_CACHE)
        honest = verifier.check(big, GOOD_ADD)
        repeated = options.model_copy(update={"perturb_timing": False})
        second_line = verifier.check(big, GPU_VALUE_KEYED_CACHE, repeated)
        unmended = verifier.check(
            big, GPU_VALUE_KEYED_CACHE, repeated.model_copy(update={"late_trial": False})
        )
    _assert_caught_or_not_faster(cheat, honest)
    # with the inputs repeated, the late trial's kernels (fresh inputs: a miss) are slower than
    # the timed hits: refused by the watched-speed rule (thirty-third session, H100: 0.0534 ms
    # timed against 0.094 ms watched)
    assert not second_line.passed and second_line.guard == "timed_result", second_line.message
    # without either, the cheat works where the inputs repeat: what the perturbation is for
    assert unmended.passed and unmended.timing is not None, unmended.message
    assert unmended.timing.median_ms < 0.85 * honest.timing.median_ms, (
        unmended.timing,
        honest.timing,
    )


# A memo keyed by where the inputs live and their version counters, not by their values: a
# key costs no read of the GPU, so no synchronisation. Correct wherever a changed input is
# written by a PyTorch op (which bumps its version); a hit launches a one-element kernel.
STORAGE_VERSION_MEMO = _memo_around_good_add(
    "(x.data_ptr(), y.data_ptr(), x._version, y._version, x.shape)",
    "MEMO[key][2]",
    # the inputs are kept too, so no later tensor is given their addresses
    "(x, y, out)",
)


def test_the_storage_version_memo_is_correct_code(add_task, cpu_verifier):
    """Every correctness trial passes: only the timed calls could tell."""
    verdict = cpu_verifier.check(add_task, STORAGE_VERSION_MEMO)
    assert verdict.passed, verdict.message


@pytest.mark.gpu
def test_a_result_memoised_by_storage_and_version_gains_nothing(add_task):
    """The judge perturbs each timed call's inputs in place with a Triton kernel, which bumps
    no version counter: the memo's key stays the same, so it hands back the result of inputs
    that are gone. The audit of the timed calls (or, where the perturbation fell back to
    PyTorch ops and the key changed, the full computation) leaves it no faster than honest."""
    big = _big_add(add_task)
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=300, baselines=False)) as verifier:
        cheat = verifier.check(big, STORAGE_VERSION_MEMO)
        honest = verifier.check(big, GOOD_ADD)
    _assert_caught_or_not_faster(cheat, honest)


def _stack_walker(comment: str, on_frame: str, before: str = "") -> str:
    """GOOD_ADD whose forward walks up its callers' frames (a stack walk the static check does
    not see: getattr passed to reduce, built names) and runs ``on_frame`` (code using ``f``, the
    frame, ``g``, its globals, and ``reach``) at each, after ``before`` (once).

    The walk starts at the caller: reading forward's own frame's locals ties that frame in a
    cycle with them, and in the candidate's process (its collector off between the verifier's
    passes) each call's output would outlive the call. Two of these cheats' clock checks at
    128M elements (200 calls, 512 MiB an output) ended so on the thirty-third session's H100,
    80 GB: a child dead at ``torch.empty_like``, most likely out of memory."""
    body = textwrap.indent(textwrap.dedent(on_frame).strip("\n"), " " * 12)
    start = textwrap.indent(textwrap.dedent(before).strip("\n") + "\n", " " * 8) if before else ""
    return GOOD_ADD.replace("import torch\n", "import functools\n\nimport torch\n", 1).replace(
        "    def forward(self, x, y):\n",
        f"""    def forward(self, x, y):
        # {comment}
        def reach(obj, *names):
            return functools.reduce(getattr, names, obj)

{start}        try:
            raise ValueError
        except ValueError as e:
            f = reach(e, "__tra" + "ceback__", "tb_" + "frame", "f_" + "back")
        while f is not None:
            g = reach(f, "f_" + "globals")
{body}
            f = reach(f, "f_" + "back")
""",
    )


# up to the candidate host's module, then into the timing code's globals: the timed calls'
# input perturbation becomes a no-op, so a value-keyed cache would hit again
UNPERTURB = _stack_walker(
    "into the timing code's globals: the input perturbation becomes a no-op",
    """
    if "TimingRequests" in g:
        run = reach(g["TimingRequests"], "time_" + "run", "__glob" + "als__")
        run["perturb_" + "inputs"] = print
    """,
)


# up to a module that imported sys, then to the timer's module; the timer is not rebound (its
# identity stays) but its keyword defaults are edited in place: a 16-byte L2 flush would leave
# every timed call's inputs warm in L2
NO_FLUSH = _stack_walker(
    "the timer's keyword defaults edited in place: no L2 flush",
    """
    if "sys" in g:
        mods = reach(g["sys"], "mod" + "ules")
        name = next(k for k in list(mods) if k.endswith("ify.tim" + "ing"))
        timer = reach(mods[name], "time_" + "cuda")
        reach(timer, "__kwdef" + "aults__")["flush_" + "bytes"] = 16
        break
    """,
)


# the same walk to the perturbation's module, whose constant is rebound, not a function: with
# SPAN = 0 every factor is 1, the timed calls' inputs repeat their set's values, and a cache
# keyed by input values would be hit on every timed call after the first of each set
NO_SPAN = _stack_walker(
    "the perturbation's span rebound to 0: the perturbation becomes a no-op",
    """
    if "sys" in g:
        mods = reach(g["sys"], "mod" + "ules")
        name = next(k for k in list(mods) if k.endswith("ify.pert" + "urb"))
        reach(mods[name], "__di" + "ct__")["SP" + "AN"] = 0.0
        break
    """,
)


# the same walk to the L2 fence's module, whose demotion of persisting lines is rebound to a
# no-op: lines a persisting window kept would outlive the flush again (``l2_fence``)
NO_L2_FENCE = _stack_walker(
    "the L2 fence rebound to a no-op: persisting lines outlive the flush",
    """
    if "sys" in g:
        mods = reach(g["sys"], "mod" + "ules")
        name = next(k for k in list(mods) if k.endswith("ify.l2_" + "fence"))
        reach(mods[name], "__di" + "ct__")["demote_persisting_" + "lines"] = lambda: None
        break
    """,
)


# the same walk to the host-memory checks' module, whose driver question is rebound to "not
# known": raw addresses of pinned memory would pass a GPU trial (``host_memory``)
NO_HOST_ADDRESSES = _stack_walker(
    "the driver's answer rebound: no raw address is ever host memory",
    """
    if "sys" in g:
        mods = reach(g["sys"], "mod" + "ules")
        name = next(k for k in list(mods) if k.endswith("ify.host_" + "memory"))
        reach(mods[name], "__di" + "ct__")["pointer_" + "kind"] = lambda address: None
        break
    """,
)


@pytest.mark.parametrize(
    ("source", "named"),
    [
        # a rebound function of the verifier's own modules, watched like torch's
        pytest.param(UNPERTURB, "perturb_inputs", id="switches_off_the_input_perturbation"),
        pytest.param(NO_L2_FENCE, "demote_persisting_lines", id="switches_off_the_l2_fence"),
        pytest.param(NO_HOST_ADDRESSES, "pointer_kind", id="switches_off_the_host_address_check"),
        # a function edited in place: its defaults (or code) changed, its identity not
        pytest.param(NO_FLUSH, "time_cuda (edited in place)", id="edits_the_timers_defaults"),
        # a constant of the verifier's own modules (upper-case names), not a function
        pytest.param(NO_SPAN, "perturb.SPAN", id="rebinds_a_constant_of_the_verifier"),
    ],
)
def test_a_candidate_that_patches_the_verifier_in_its_process_is_caught(
    add_task, cpu_verifier, source, named, runtime_guards_only
):
    """Guard (d) over the verifier's own code in the candidate's process."""
    verdict = cpu_verifier.check(add_task, source)
    assert not verdict.passed and verdict.guard == "library_patch", verdict.message
    assert named in verdict.message


def _huge_add(add_task):
    """The add task at 128M elements: 1.5 GB a call."""
    return add_task.model_copy(
        update={"variants": [ShapeVariant(name="main", main=True, globals={"N": 1 << 27})]}
    )


def _mended_and_unmended(
    add_task, source: str, option: str, also_off: tuple[str, ...] = ()
) -> tuple[Verdict, Verdict]:
    """A cheat checked on a 128M-element add with ``option`` on and off (with ``also_off``
    off too), beside the honest add: the honest add passes, and with the option off the cheat
    is refused by the watched-speed rule (the late trial's kernels are the honest ones, the
    timed calls a quarter), and passes more than 1.6x faster with the late trial off too (the
    hole the option closes; thirty-fourth session, H100: the two stack walkers' second line at
    0.26x and 0.25x of their watched busy time). Returns the cheat's verdicts ``(on, off)``
    for the caller's asserts on how it was caught."""
    big = _huge_add(add_task)
    options = CheckOptions(seeds=2, timeout_s=300, baselines=False, **{option: True})
    unset = options.model_copy(update=dict.fromkeys((option, *also_off), False))
    with Verifier("cuda", options) as verifier:
        cheat = verifier.check(big, source)
        honest = verifier.check(big, GOOD_ADD)
        second_line = verifier.check(big, source, unset)
        off = verifier.check(big, source, unset.model_copy(update={"late_trial": False}))
    print(f"{option} on:", cheat.message, "| honest:", honest.timing, "| off:", off.timing)
    print("second line:", second_line.message)
    assert honest.passed and honest.timing is not None, honest.message
    assert not second_line.passed and second_line.guard == "timed_result", second_line.message
    assert "in the trial after them" in second_line.message, second_line.message
    assert off.passed and off.timing is not None, off.message
    assert off.timing.median_ms < 0.6 * honest.timing.median_ms, (off.timing, honest.timing)
    return cheat, off


# Reads, patches nothing: the forward looks up its callers' frames for the timer's loop (its
# index ``i`` and the set ``chosen`` of calls whose outputs go to the judge) and the clock
# check's back-to-back loop (``i`` and ``land_at``), and computes only the calls the judge
# will look at; every other call computes a quarter of the output and leaves the rest as it
# finds it. Guard (d) sees no change, the kept calls and the landed call are right, and events
# and the judge's clock both see the cheap calls. (Its first form launched one element: the
# host cost of its stack walk then showed on the judge's clock, and the CUDA-graph check,
# which captures an honest call, caught it; a quarter hides under the clock.) The audited
# clock check's loop (``CandidateTiming._audited_bulk``) lands no call: there it computes a
# quarter of every call. (Until the twenty-first session it walked on up the whole stack
# there, reading every frame's locals, and that host time showed on the judge's clock.)
PEEK_AT_KEPT_CALLS = _stack_walker(
    "reads which calls the judge keeps, and computes only those",
    """
    seen = reach(f, "f_" + "locals")
    if "i" in seen and "chosen" in seen:  # the timer's loop, once the kept calls are set
        honest = seen["i"] in seen["chosen"]
        break
    if "i" in seen and "land_at" in seen:  # the clock check's back-to-back calls
        honest = seen["i"] == seen["land_at"]
        break
    if "i" in seen and "stand_in" in seen:  # its audited form: no call is landed
        honest = False
        break
    """,
    before="honest = True",
).replace("        n = x.numel()\n", "        n = x.numel() if honest else x.numel() // 4\n")


@pytest.mark.gpu
def test_a_forward_that_reads_which_calls_are_kept_is_caught_by_the_audit(
    add_task, runtime_guards_only
):
    """The counting cheat's next step: it does not count, it reads which calls are kept. Each
    audit alone catches it: the timed calls' (fingerprints of every timed call, verified on
    calls drawn after the run) and the clock check's (the same for its back-to-back calls).
    With both off it is refused by the watched-speed rule alone, and with the late trial off
    too it passes more than 1.6x faster than the honest add: the hole they close.
    (The twenty-first session's H200 run showed the clock check's audit catching it with the
    timed calls' audit off.)

    At 128M elements: at 16M (first H200 run) the quarter's ~0.017 ms was under the ~0.05 ms
    the stack walk costs the host a call, and the clock check caught even the unaudited cheat.
    """
    cheat, _ = _mended_and_unmended(
        add_task, PEEK_AT_KEPT_CALLS, "audit_timed_calls", also_off=("audit_clock_calls",)
    )
    assert not cheat.passed and cheat.guard == "timed_result", cheat.message
    assert "timed calls drawn after the run" in cheat.message
    big = _huge_add(add_task)
    clock_only = CheckOptions(seeds=2, timeout_s=300, baselines=False, audit_timed_calls=False)
    with Verifier("cuda", clock_only) as verifier:
        by_clock = verifier.check(big, PEEK_AT_KEPT_CALLS)
    assert not by_clock.passed, by_clock.message
    assert "back-to-back calls drawn after the run" in by_clock.message


# Asks the GPU, not the judge, whether it is being timed: a stream with work still queued on it
# when forward starts means back-to-back calls (the timed run behind its head start, the clock
# check), an idle one a correctness trial the judge waited on. When busy it computes a quarter.
# No frame, no patch, no count: one public call the static check has no reason to refuse.
ASKS_THE_STREAM = GOOD_ADD.replace(
    "        n = x.numel()\n",
    "        busy = x.is_cuda and not torch.cuda.current_stream().query()\n"
    "        n = x.numel() // 4 if busy else x.numel()\n",
)


@pytest.mark.gpu
def test_a_forward_that_asks_the_stream_whether_it_is_timed_is_caught(add_task):
    """A busy stream tells a forward it is inside a run of calls. It passes every correctness
    trial (the judge waits on each, so forward finds the stream idle) and is caught at the
    timing stage, by the checks of timed calls that do not depend on what forward can see.
    At 128M elements, where each call takes longer than the host needs to queue the next."""
    big = _huge_add(add_task)
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=300, baselines=False)) as verifier:
        cheat = verifier.check(big, ASKS_THE_STREAM)
        honest = verifier.check(big, GOOD_ADD)
    print("cheat:", cheat.stage, cheat.guard, cheat.message, "| honest:", honest.timing)
    assert honest.passed and honest.timing is not None, honest.message
    assert not cheat.passed and cheat.stage == VerdictStage.TIMING, cheat.message


# Launches one block and returns an empty tensor, after pushing (once, by built names the static
# check does not see) a torch function mode that stays active when forward returns: the first
# torch call the verifier makes on that tensor (copying it into the judge's buffer, its
# fingerprint) fills it first. Every trial's output was right, so it passed on CPU; on a GPU the
# work leaves the events too.
LINGERING_MODE = GOOD_ADD.replace(
    "class ModelNew(nn.Module):\n",
    """_pending = {}


def _later(mode, func, types, args=(), kwargs=None):
    kwargs = kwargs or {}
    for a in list(args) + list(kwargs.values()):
        if isinstance(a, torch.Tensor) and id(a) in _pending:
            x, y = _pending.pop(id(a))
            torch.add(x, y, out=a)
    return func(*args, **kwargs)


Later = type("Later", (torch.overrides.TorchFunctionMode,), {"__torch_" + "function__": _later})


class ModelNew(nn.Module):
    on = False

""",
).replace(
    "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
    "        if not ModelNew.on:\n"
    "            getattr(Later(), '__enter__')()\n"
    "            ModelNew.on = True\n"
    "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n"
    "        _pending[id(out)] = (x, y)\n",
)


# The same mode, pushed when the module is imported: forward finds it already active.
MODE_AT_IMPORT = LINGERING_MODE.replace(
    "\n\nclass ModelNew(nn.Module):\n    on = False\n",
    "\ngetattr(Later(), '__enter__')()\n\n\nclass ModelNew(nn.Module):\n    on = True\n",
)


@pytest.mark.parametrize(
    ("source", "said"),
    [
        pytest.param(LINGERING_MODE, "left torch modes active", id="pushed_in_forward"),
        pytest.param(MODE_AT_IMPORT, "were active before ModelNew.forward", id="pushed_at_import"),
    ],
)
def test_a_candidate_that_leaves_a_torch_mode_behind_is_caught(
    add_task, cpu_verifier, source, said
):
    """Guard (d): forward finds the function and dispatch mode stacks as they were before the
    candidate was imported, and leaves them so."""
    assert "add_kernel[(1,)]" in source and "_pending[id(out)]" in source
    verdict = cpu_verifier.check(add_task, source)
    assert not verdict.passed and verdict.guard == "library_patch", verdict.message
    assert said in verdict.message


# The lingering mode's work, moved into an audit hook added at import (by a name built at run
# time): it fills forward's empty outputs with torch.add when the process raises an audit
# event, as the verifier's mapping of the judge's buffer does (``mmap.__new__``), so the work
# leaves forward and the op recorder's sight. Passed every CPU trial before the mend.
AUDIT_HOOK = (
    GOOD_ADD.replace("import torch\n", "import functools\nimport sys\n\nimport torch\n", 1)
    .replace(
        "class ModelNew(nn.Module):\n",
        """_pending = []


def _hook(event, args):
    if _pending and event in ("mmap.__new__", "ctypes.call_function", "os.dup"):
        for out, x, y in _pending:
            torch.add(x, y, out=out)
        _pending.clear()


functools.reduce(getattr, ["addaudit" + "hook"], sys)(_hook)


class ModelNew(nn.Module):
""",
    )
    .replace(
        "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
        "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n"
        "        _pending.append((out, x, y))\n",
    )
)


def test_a_candidate_that_adds_an_audit_hook_is_caught(add_task, cpu_verifier, runtime_guards_only):
    """The candidate's process refuses audit hooks (its own, installed first, refuses them)."""
    assert "_pending.append((out, x, y))" in AUDIT_HOOK and "addaudit" in AUDIT_HOOK
    verdict = cpu_verifier.check(add_task, AUDIT_HOOK)
    assert not verdict.passed and verdict.guard == "library_patch", verdict.message
    assert "sys.addaudithook" in verdict.message


# A kernel of the candidate's registered in PyTorch's dispatcher for aten::copy_ (through
# torch.library, reached by built names): forward launches one block and returns an empty
# tensor, and the override fills it with torch.add when the verifier copies it into the
# judge's buffer, out of forward and out of the op recorder's sight. Registered at import, it
# passed every CPU trial before the mend (2026-12-03, eighteenth session's review).
DISPATCH_OVERRIDE = (
    GOOD_ADD.replace("import torch\n", "import functools\n\nimport torch\n", 1)
    .replace(
        "class ModelNew(nn.Module):\n",
        """_pending = {}
_Library = functools.reduce(getattr, ["lib" + "rary", "Lib" + "rary"], torch)
_below = functools.reduce(getattr, ["_" + "C", "_AutoDispatch" + "BelowAutograd"], torch)


def _copy(dst, src, non_blocking=False):
    with _below():
        job = _pending.pop(id(src), None)
        if job is not None:
            torch.add(job[0], job[1], out=src)
        return dst.copy_(src, non_blocking)


def _register():
    lib = _Library("aten", "IMPL")
    for key in ("AutogradCPU", "AutogradCUDA"):
        lib.impl("copy_", _copy, key)
    return lib


_libs = [_register()]


class ModelNew(nn.Module):
""",
    )
    .replace(
        "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
        "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n        _pending[id(out)] = (x, y)\n",
    )
)

# The same kernel registered in forward's first call, after the import's check
OVERRIDE_IN_FORWARD = DISPATCH_OVERRIDE.replace("_libs = [_register()]", "_libs = []").replace(
    "        _pending[id(out)] = (x, y)\n",
    "        _pending[id(out)] = (x, y)\n        _libs[:] = _libs or [_register()]\n",
)

# Registered anew in every forward and removed by the override once it has run: when the
# verifier compares the dispatcher with its state before the import, the table is as it was
SELF_REMOVING_OVERRIDE = (
    DISPATCH_OVERRIDE.replace("_libs = [_register()]", "_libs = []")
    .replace(
        "        return dst.copy_(src, non_blocking)\n",
        "        done = dst.copy_(src, non_blocking)\n"
        "        if job is not None:\n"
        "            while _libs:\n"
        "                _libs.pop()._destroy()\n"
        "        return done\n",
    )
    .replace(
        "        _pending[id(out)] = (x, y)\n",
        "        _pending[id(out)] = (x, y)\n        _libs.append(_register())\n",
    )
)


@pytest.mark.parametrize(
    ("source", "said"),
    [
        pytest.param(DISPATCH_OVERRIDE, "aten::copy_ (its kernels", id="registered_at_import"),
        pytest.param(OVERRIDE_IN_FORWARD, "registered: impl('copy_')", id="registered_in_forward"),
        pytest.param(SELF_REMOVING_OVERRIDE, "registered: impl('copy_')", id="removes_itself"),
    ],
)
def test_a_candidate_that_registers_a_kernel_in_the_dispatcher_is_caught(
    add_task, cpu_verifier, source, said, runtime_guards_only
):
    """Guard (d) over PyTorch's dispatcher: the kernels of every op that existed before the
    import are compared after it, after the trials and after the timing; and every
    registration made from Python is recorded, so one that removes itself shows too."""
    assert "add_kernel[(1,)]" in source and "_pending[id(out)]" in source
    verdict = cpu_verifier.check(add_task, source)
    assert not verdict.passed and verdict.guard == "library_patch", verdict.message
    assert said in verdict.message and "dispatcher" in verdict.message


# An honest kernel whose first forward defines an op of its own namespace and registers a
# kernel for it, as PyTorch's first use of CUDA does in any process
# (torch.cuda._register_triton_kernels: ``triton::_triton_bsr_dense_mm_out``). The dispatcher
# watch refused all 17 known-good kernels on the H200 for that (2026-12-03, nineteenth session).
NEW_OP_IN_FORWARD = (
    DISPATCH_OVERRIDE.replace("_libs = [_register()]", "_libs = []")
    .replace(
        """    lib = _Library("aten", "IMPL")
    for key in ("AutogradCPU", "AutogradCUDA"):
        lib.impl("copy_", _copy, key)
    return lib""",
        """    lib = _Library("upskills_probe", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda t: t * 2, "CPU")
    return lib""",
    )
    .replace(
        "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n        _pending[id(out)] = (x, y)\n",
        "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n"
        "        _libs[:] = _libs or [_register()]\n",
    )
)


def test_a_kernel_registered_for_a_new_op_is_not_an_override(
    add_task, cpu_verifier, runtime_guards_only
):
    """Only kernels put on ops that existed before the import are the candidate's doing: one
    for an op defined later changes nothing that ran before (a fallback always counts)."""
    assert "upskills_probe" in NEW_OP_IN_FORWARD and "_pending[id(out)]" not in NEW_OP_IN_FORWARD
    verdict = cpu_verifier.check(add_task, NEW_OP_IN_FORWARD)
    assert verdict.passed, verdict.message


# A Python kernel for aten::copy_ through the Python dispatcher: ``py_impl`` puts it in the op's
# ``py_kernels`` (not in the C++ table, and no ``_DispatchModule`` method runs), and
# ``enable_python_dispatcher()`` entered at import and left entered makes every op in the
# process dispatch through it. Forward launches one block; the kernel fills the output with
# torch.add when the verifier copies it. Found in the eighteenth session's review; the run-time
# guards did not see it until the thread's dispatch keys were compared (``modes.py``).
PYTHON_DISPATCHER = (
    GOOD_ADD.replace("import torch\n", "import functools\nimport importlib\n\nimport torch\n", 1)
    .replace(
        "class ModelNew(nn.Module):\n",
        """_pending = {}
_copy_op = functools.reduce(getattr, ["op" + "s", "aten", "copy_", "default"], torch)
_cpu = functools.reduce(getattr, ["_" + "C", "DispatchKey", "CPU"], torch)
_off = functools.reduce(getattr, ["_" + "C", "_DisablePython" + "Dispatcher"], torch)
_python = importlib.import_module("torch._dis" + "patch.python")


def _fill(dst, src, non_blocking=False):
    job = _pending.pop(id(src), None)
    with _off():
        if job is not None:
            torch.add(job[0], job[1], out=src)
        return dst.copy_(src, non_blocking)


functools.reduce(getattr, ["py" + "_impl"], _copy_op)(_cpu)(_fill)
_on = functools.reduce(getattr, ["enable_python" + "_dispatcher"], _python)()
_on.__enter__()


class ModelNew(nn.Module):
""",
    )
    .replace(
        "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
        "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n        _pending[id(out)] = (x, y)\n",
    )
)


def test_a_python_kernel_through_the_python_dispatcher_is_caught(
    add_task, cpu_verifier, runtime_guards_only
):
    """Guard (d) compares the thread's local dispatch keys with the mode stacks: the Python
    dispatcher left enabled shows as ``PythonDispatcher`` included."""
    assert "add_kernel[(1,)]" in PYTHON_DISPATCHER and "_pending[id(out)]" in PYTHON_DISPATCHER
    verdict = cpu_verifier.check(add_task, PYTHON_DISPATCHER)
    assert not verdict.passed and verdict.guard == "library_patch", verdict.message
    assert "PythonDispatcher" in verdict.message, verdict.message


# A profile function set at import (sys.setprofile, reached by built names): it runs on every
# call the process makes, the verifier's own among them. Forward launches one block and queues
# its output; at the first C call after forward with no torch mode active (the op recorder
# gone), the hook fills the output with torch.add. It passed every CPU trial with the static
# check out of the way (2026-12-03, nineteenth session's review); SET_IN_FORWARD sets it in
# forward's first call instead.
PROFILE_HOOK = (
    GOOD_ADD.replace("import torch\n", "import functools\n\nimport torch\n", 1)
    .replace(
        "class ModelNew(nn.Module):\n",
        """_pending = []
_sys = __import__("s" + "ys")
_depth = functools.reduce(getattr, ["_" + "C", "_len_torch_dispatch" + "_stack"], torch)


def _hook(frame, event, arg):
    if _pending and event == "c_call" and _depth() == 0:
        while _pending:
            x, y, out = _pending.pop()
            torch.add(x, y, out=out)


functools.reduce(getattr, ["set" + "profile"], _sys)(_hook)


class ModelNew(nn.Module):
""",
    )
    .replace(
        "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
        "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n"
        "        _pending.append((x, y, out))\n",
    )
)
PROFILE_HOOK_SET_IN_FORWARD = PROFILE_HOOK.replace(
    'functools.reduce(getattr, ["set" + "profile"], _sys)(_hook)\n', ""
).replace(
    "        _pending.append((x, y, out))\n",
    "        _pending.append((x, y, out))\n"
    '        functools.reduce(getattr, ["set" + "profile"], _sys)(_hook)\n',
)

# The same hook as an object whose __eq__ says yes to everything: while the hooks were compared
# with ==, `None == hook` asked the hook, and it passed every CPU trial with the static check out
# of the way (2026-12-04). They are compared by identity now.
PROFILE_HOOK_EQUAL_TO_ALL = PROFILE_HOOK.replace(
    "def _hook(frame, event, arg):\n",
    "class _Hook:\n"
    "    __hash__ = object.__hash__\n\n"
    "    def __eq__(self, other):\n"
    "        return True\n\n"
    "    def __call__(self, frame, event, arg):\n",
).replace("(_hook)", "(_Hook())")
for _old, _new in (
    ("    if _pending and event", "        if _pending and event"),
    ("        while _pending:\n", "            while _pending:\n"),
    (
        "            x, y, out = _pending.pop()\n            torch.add(x, y, out=out)\n",
        "                x, y, out = _pending.pop()\n                torch.add(x, y, out=out)\n",
    ),
):
    assert _old in PROFILE_HOOK_EQUAL_TO_ALL
    PROFILE_HOOK_EQUAL_TO_ALL = PROFILE_HOOK_EQUAL_TO_ALL.replace(_old, _new, 1)


@pytest.mark.parametrize(
    ("source", "said"),
    [
        pytest.param(PROFILE_HOOK, "were active before ModelNew.forward", id="set_at_import"),
        pytest.param(PROFILE_HOOK_SET_IN_FORWARD, "left torch modes active", id="set_in_forward"),
        pytest.param(
            PROFILE_HOOK_EQUAL_TO_ALL, "were active before ModelNew.forward", id="equal_to_all"
        ),
    ],
)
def test_a_profile_hook_is_caught(add_task, cpu_verifier, source, said, runtime_guards_only):
    """Guard (d) compares the interpreter's hooks beside the mode stacks, by identity."""
    assert source.count("setprofile") == 0 and source.count('"set" + "profile"') == 1
    verdict = cpu_verifier.check(add_task, source)
    assert not verdict.passed and verdict.guard == "library_patch", verdict.message
    assert said in verdict.message and "interpreter hooks" in verdict.message, verdict.message


def _raw_thread(module: str, name: str) -> str:
    """GOOD_ADD whose forward launches one block and has a thread started through
    ``module.name`` (reached by built names) fill the output with ``torch.add``: the thread's
    ops are not the op recorder's (modes are per thread). It waits for the thread."""
    return GOOD_ADD.replace(
        "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
        f"""        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)
        go = getattr(__import__("{module[:2]}" + "{module[2:]}"), "{name[:4]}" + "{name[4:]}")
        done = []

        def fill():
            torch.add(x, y, out=out)
            done.append(1)

        go(fill, ())
        while not done:
            pass
""",
    )


# Started through an entry point the watch did not wrap (found in the twenty-first session's
# review): ``threading``'s own reference to ``_thread.start_new_thread``, and ``_thread``'s old
# alias. Each passed every CPU trial with the static check out of the way.
@pytest.mark.parametrize(
    ("module", "name"),
    [
        pytest.param("threading", "_start_new_thread", id="threading_reference"),
        pytest.param("_thread", "start_new", id="old_alias"),
        pytest.param("_thread", "start_new_thread", id="start_new_thread"),
    ],
)
def test_a_thread_started_by_any_entry_point_is_caught(
    add_task, cpu_verifier, module, name, runtime_guards_only
):
    verdict = cpu_verifier.check(add_task, _raw_thread(module, name))
    assert not verdict.passed and verdict.guard == "threads", verdict.message


# Found in the forty-third session: the census left out a thread whose target lived in
# ``torch`` or ``triton``, so a thread started at import through a torch function that calls
# back (``torch.utils._pytree.tree_map``) served the candidate's own loop out of sight. It
# filled the output with ``torch.add`` for a forward that launched one block, and passed.
THREAD_AT_IMPORT_BEHIND_A_TORCH_TARGET = GOOD_ADD.replace(
    "import triton\n",
    """import triton
import threading
import torch.utils._pytree as _pytree

_jobs = []
_done = []


def _serve(_leaf):
    while True:
        if _jobs:
            x, y, out = _jobs.pop()
            torch.add(x, y, out=out)
            _done.append(1)


threading.Thread(target=_pytree.tree_map, args=(_serve, 0), daemon=True).start()
""",
    1,
).replace(
    "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
    """        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)
        _done.clear()
        _jobs.append((x, y, out))
        while not _done:
            pass
""",
)


def test_a_thread_started_at_import_behind_a_torch_target_is_caught(
    add_task, cpu_verifier, runtime_guards_only
):
    source = THREAD_AT_IMPORT_BEHIND_A_TORCH_TARGET
    assert "tree_map, args=(_serve" in source and "add_kernel[(1,)]" in source
    verdict = cpu_verifier.check(add_task, source)
    assert not verdict.passed and verdict.guard == "threads", verdict.message
    assert "alive since the candidate's import" in verdict.message, verdict.message


def test_a_thread_whose_target_is_a_library_function_is_in_the_census():
    """The census counts a thread by being alive, not by where its target lives."""
    import threading

    import torch.utils._pytree as pytree

    from upskills.verify.library_snapshot import live_threads

    before = live_threads()
    hold, started = threading.Lock(), threading.Event()
    hold.acquire()

    def wait(_leaf: object) -> None:
        started.set()
        with hold:
            pass

    thread = threading.Thread(target=pytree.tree_map, args=(wait, 0), daemon=True)
    thread.start()
    started.wait(10)
    try:
        assert live_threads() - before == {thread.ident}
    finally:
        hold.release()
        thread.join(10)


def test_a_thread_threading_does_not_know_is_still_counted_alive():
    """``live_threads`` reads the interpreter's frames per thread: a thread started through
    ``_thread`` is not in ``threading.enumerate()`` but runs Python frames."""
    import _thread
    import threading

    from upskills.verify.library_snapshot import live_threads

    before = live_threads()
    hold, started = threading.Lock(), threading.Event()
    hold.acquire()

    def wait() -> None:
        started.set()
        with hold:
            pass

    _thread.start_new_thread(wait, ())
    started.wait(10)
    try:
        new = live_threads() - before
        assert len(new) == 1
        assert not new & {t.ident for t in threading.enumerate()}
    finally:
        hold.release()


# A finalizer of cyclic garbage made in forward, run by the collector after the call: with
# gc.set_threshold(1) a pass comes at the next allocation, and while the op recorder is still
# there the finalizer makes a fresh cycle to wait for the next one. Once it is gone, it fills
# forward's output with torch.add, before the verifier copies it. It passed every CPU trial
# with the static check out of the way (2026-12-03, nineteenth session's review).
GC_FINALIZER = GOOD_ADD.replace(
    "class ModelNew(nn.Module):\n",
    """_gc = __import__("g" + "c")
_gc.enable()
_gc.set_threshold(1)
_depth = torch._C._len_torch_dispatch_stack


class _Later:
    def __init__(self, job):
        self.job = job
        self.me = self  # a cycle: freed by the collector, not when forward returns

    def __del__(self):
        if _depth():  # the op recorder is still there: wait for the next collection
            _Later(self.job)
            return
        x, y, out = self.job
        torch.add(x, y, out=out)


class ModelNew(nn.Module):
""",
).replace(
    "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
    "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n        _Later((x, y, out))\n",
)


@pytest.mark.parametrize(
    ("source", "guard"),
    [
        pytest.param(GC_FINALIZER, "library_patch", id="turns_the_collector_on"),
        pytest.param(GC_FINALIZER.replace("_gc.enable()\n", ""), None, id="leaves_it_off"),
    ],
)
def test_a_finalizer_run_by_the_collector_after_forward_is_caught(
    add_task, cpu_verifier, source, guard, runtime_guards_only
):
    """The candidate's process runs with the collector off and collects where no output
    waits: turning it on is guard (d), and left off, the finalizer fills the output too late."""
    assert "set_threshold(1)" in source and "_Later((x, y, out))" in source
    verdict = cpu_verifier.check(add_task, source)
    assert not verdict.passed, verdict.message
    assert verdict.guard == guard, verdict.message
    if guard is None:  # the unfilled output reads whatever the allocator handed out
        assert verdict.error_class in (ErrorClass.MISMATCH, ErrorClass.NAN), verdict.message


def _ahead_of_the_trial(hook: str) -> str:
    """GOOD_ADD whose ``hook`` (module code) runs ``_sum_ahead`` in the verifier's collector
    pass: it walks up to the trial's frame, adds its inputs with torch.add (outside forward and
    the op recorder) and leaves the sum for forward, which launches one block and hands it
    back; forward's own path returns zeros, so only the sum made ahead can pass."""
    return (
        GOOD_ADD.replace(
            "class ModelNew(nn.Module):\n",
            f"""_gc = __import__("g" + "c")
_sys = __import__("s" + "ys")
_stash = {{}}


def _sum_ahead():
    f = _sys._getframe(1)
    while f is not None:
        seen = f.f_locals
        if "inputs" in seen and "log" in seen:  # CandidateHost._call
            x, y = seen["inputs"][:2]
            _stash["out"] = torch.add(x, y)
            return
        f = f.f_back


{hook}

class ModelNew(nn.Module):
""",
        )
        .replace(
            "        out = torch.empty_like(x)\n",
            "        out = _stash.pop('out', None)\n"
            "        if out is None or out.shape != x.shape:\n"
            "            out = torch.zeros_like(x)\n",
        )
        .replace(
            "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
            "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n",
        )
    )


# A collector callback, added at import: the verifier's own full pass before each trial's call
# (``modes.collect_garbage``) runs it. It passed every CPU trial with the static check out of
# the way (2026-12-04, twenty-first session's review).
GC_CALLBACK = _ahead_of_the_trial(
    """def _cb(phase, info):
    if phase == "start":
        _sum_ahead()


_gc.callbacks.append(_cb)
"""
)

# The same from a finalizer: cyclic garbage made at import, freed by the verifier's full pass
# before the first trial's call; each finalizer makes the next pass's garbage. Nothing in it is
# a hook. It passed every CPU trial with the static check out of the way (2026-12-04).
FINALIZER_AHEAD = _ahead_of_the_trial(
    """class _Ahead:
    def __init__(self):
        self.me = self  # a cycle: freed by the collector's next pass

    def __del__(self):
        _Ahead()
        _sum_ahead()


_Ahead()
"""
)


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(GC_CALLBACK, id="callback"),
        pytest.param(FINALIZER_AHEAD, id="finalizer"),
    ],
)
def test_work_done_in_the_verifiers_collector_pass_is_caught(
    add_task, cpu_verifier, source, runtime_guards_only
):
    """The verifier's collector passes are watched: a torch op or a launch there is guard (d).
    (A callback is also an interpreter hook: ``test_modes.py``.)"""
    assert "zeros_like" in source and source.count("torch.add") == 1
    verdict = cpu_verifier.check(add_task, source)
    assert not verdict.passed and verdict.guard == "library_patch", verdict.message
    assert "collector pass" in verdict.message and "1 torch op(s) (add)" in verdict.message


# A handler for SIGALRM and an interval timer of 20 µs, armed at import: the handler runs
# between bytecodes, and at its first run after forward with no torch mode active it fills the
# queued output with torch.add, before the verifier copies it. It passed every CPU trial with
# the static check out of the way (2026-12-03, nineteenth session's review).
SIGNAL_TIMER = GOOD_ADD.replace(
    "class ModelNew(nn.Module):\n",
    """_sig = __import__("sig" + "nal")
_depth = torch._C._len_torch_dispatch_stack
_pending = []


def _tick(signum, frame):
    if _pending and not _depth():
        while _pending:
            x, y, out = _pending.pop()
            torch.add(x, y, out=out)


_sig.signal(_sig.SIGALRM, _tick)
_sig.setitimer(_sig.ITIMER_REAL, 0.00002, 0.00002)


class ModelNew(nn.Module):
""",
).replace(
    "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
    "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n        _pending.append((x, y, out))\n",
)
_ARM = """_sig.signal(_sig.SIGALRM, _tick)
_sig.setitimer(_sig.ITIMER_REAL, 0.00002, 0.00002)
"""
SIGNAL_TIMER_IN_FORWARD = SIGNAL_TIMER.replace(_ARM, "").replace(
    "        _pending.append((x, y, out))\n",
    "        _pending.append((x, y, out))\n"
    + "".join("        " + line + "\n" for line in _ARM.splitlines()),
)


@pytest.mark.parametrize(
    ("source", "said"),
    [
        pytest.param(SIGNAL_TIMER, "signal handlers", id="armed_at_import"),
        pytest.param(SIGNAL_TIMER_IN_FORWARD, "itimer", id="armed_in_forward"),
    ],
)
def test_a_signal_handler_on_a_timer_is_caught(
    add_task, cpu_verifier, source, said, runtime_guards_only
):
    """Interval timers are compared with the mode stacks at every call, signal handlers after
    the import and each trial."""
    assert "setitimer" in source and "_pending.append((x, y, out))" in source
    verdict = cpu_verifier.check(add_task, source)
    assert not verdict.passed and verdict.guard == "library_patch", verdict.message
    assert said in verdict.message, verdict.message


# forward returns a tuple subclass that holds the job, not the outputs: its __iter__ (and
# __len__) fill the output and compute the second one when the verifier reads the tuple, after
# forward and out of the op recorder's sight. It uses nothing the static check refuses, and
# passed every CPU trial of an add-and-subtract task (2026-12-03, nineteenth session's review).
TUPLE_SUBCLASS = GOOD_ADD.replace(
    "class ModelNew(nn.Module):\n",
    """class _Late(tuple):
    def __iter__(self):
        x, y, out = tuple.__getitem__(self, 0)
        torch.add(x, y, out=out)
        return iter((out, x - y))

    def __len__(self):
        return 2


class ModelNew(nn.Module):
""",
).replace(
    "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n        return out\n",
    "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n        return _Late([(x, y, out)])\n",
)
LIST_SUBCLASS = TUPLE_SUBCLASS.replace("class _Late(tuple):", "class _Late(list):").replace(
    "tuple.__getitem__(self, 0)", "list.__getitem__(self, 0)"
)


@pytest.fixture(scope="module")
def add_sub_task():
    return make_task(
        "t_add_sub",
        VECTOR_ADD_REF.replace("return x + y", "return x + y, x - y"),
        [
            ShapeVariant(name="main", main=True, cpu=False, globals={"N": 1 << 20}),
            ShapeVariant(name="small", globals={"N": 2048}),
            ShapeVariant(name="ragged", ragged=True, globals={"N": 1003}),
        ],
    )


@pytest.mark.parametrize(
    "source",
    [pytest.param(TUPLE_SUBCLASS, id="tuple"), pytest.param(LIST_SUBCLASS, id="list")],
)
def test_a_sequence_subclass_that_works_when_read_is_caught(add_sub_task, cpu_verifier, source):
    """The candidate's process reads a returned list or tuple with the base class's iterator:
    the subclass's ``__iter__`` never runs, and what it holds is not the outputs."""
    assert "return _Late([(x, y, out)])" in source
    assert not static_guards(parse_candidate(source, "kernel.py")[0], "kernel.py")
    verdict = cpu_verifier.check(add_sub_task, source)
    assert not verdict.passed, verdict.message
    assert "forward returned tuple[1], expected tuple[2]" in verdict.message or (
        "forward returned list[1], expected tuple[2]" in verdict.message
    ), verdict.message


HONEST_ADD_SUB = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def add_sub_kernel(x_ptr, y_ptr, s_ptr, d_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(s_ptr + offs, x + y, mask=mask)
    tl.store(d_ptr + offs, x - y, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        s, d = torch.empty_like(x), torch.empty_like(x)
        n = x.numel()
        add_sub_kernel[(triton.cdiv(n, 1024),)](x, y, s, d, n, BLOCK=1024)
        return s, d
"""


def test_a_plain_tuple_of_outputs_passes(add_sub_task, cpu_verifier):
    """The base-class read changes nothing for an honest tuple."""
    verdict = cpu_verifier.check(add_sub_task, HONEST_ADD_SUB)
    assert verdict.passed, verdict.message


# A new attribute ``copy_`` on torch.Tensor (a Python class) shadows ``TensorBase.copy_`` for
# every tensor in the process: the verifier's copy of forward's output into the judge's buffer
# runs it, and it fills the output with torch.add first. The library snapshot watched only the
# names a namespace had, so it passed every CPU trial with the static check out of the way
# (2026-12-03, nineteenth session's final review).
SHADOWED_METHOD = GOOD_ADD.replace(
    "class ModelNew(nn.Module):\n",
    """_pending = {}
_base_copy = torch._C.TensorBase.copy_


def _copy(self, src, non_blocking=False):
    job = _pending.pop(id(src), None)
    if job is not None:
        torch.add(job[0], job[1], out=src)
    return _base_copy(self, src, non_blocking)


setattr(torch.Tensor, "co" + "py_", _copy)


class ModelNew(nn.Module):
""",
).replace(
    "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
    "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n        _pending[id(out)] = (x, y)\n",
)


def test_a_method_shadowed_on_a_library_class_is_caught(
    add_task, cpu_verifier, runtime_guards_only
):
    """Guard (d): a new name on a watched class that a base class defines counts as a patch."""
    assert "add_kernel[(1,)]" in SHADOWED_METHOD and "_pending[id(out)]" in SHADOWED_METHOD
    verdict = cpu_verifier.check(add_task, SHADOWED_METHOD)
    assert not verdict.passed and verdict.guard == "library_patch", verdict.message
    assert "torch.Tensor.copy_ (new, shadows TensorBase.copy_)" in verdict.message


# forward launches one block of the add and changes its input's class to a tensor subclass
# whose __torch_function__ fills the output with torch.add (then puts the class back). The
# output is a plain tensor, but the verifier read the inputs' storages after forward and before
# copying the output: that read ran the subclass's hook, out of the op recorder's sight. It
# passed every CPU trial with the static check out of the way (it refuses ``__class__``;
# 2026-12-04, twentieth session's review).
INPUT_CLASS_SWAP = GOOD_ADD.replace(
    "class ModelNew(nn.Module):\n",
    """_pending = []


class _Late(torch.Tensor):
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for a in args:
            if type(a) is _Late:
                a.__class__ = torch.Tensor
        while _pending:
            x, y, out = _pending.pop()
            torch.add(x, y, out=out)
        return func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
""",
    1,
).replace(
    "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
    "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n"
    "        _pending.append((x, y, out))\n"
    "        x.__class__ = _Late\n",
)


def test_an_input_whose_class_forward_changed_is_caught(
    add_task, cpu_verifier, runtime_guards_only
):
    """Guard (b): every input must still be a plain tensor when forward returns, checked before
    the verifier touches any of them."""
    assert "x.__class__ = _Late" in INPUT_CLASS_SWAP and "add_kernel[(1,)]" in INPUT_CLASS_SWAP
    verdict = cpu_verifier.check(add_task, INPUT_CLASS_SWAP)
    assert not verdict.passed and verdict.guard == "input_type", verdict.message
    assert "_Late" in verdict.message, verdict.message


# forward launches one block of the add and sets an attribute on a tensor that shadows a method
# of torch.Tensor: the verifier's next `t.untyped_storage()` (an output's, for the aliasing
# check; an input's, for their ranges) ran it, and it filled the output with torch.add first.
# Nothing in it is refused statically: both passed every CPU trial WITH the static check on
# (2026-12-04, twentieth session's final review).
def _shadowed_on(tensor: str) -> str:
    return GOOD_ADD.replace(
        "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n",
        "        add_kernel[(1,)](x, y, out, 1, BLOCK=1024)\n"
        f"        real = {tensor}.untyped_storage\n\n"
        "        def late():\n"
        "            torch.add(x, y, out=out)\n"
        "            return real()\n\n"
        f"        {tensor}.untyped_storage = late\n",
    )


SHADOWED_ON_THE_TENSOR = _shadowed_on("out")
SHADOWED_ON_AN_INPUT = _shadowed_on("x")


@pytest.mark.parametrize(
    ("source", "guard"),
    [
        pytest.param(SHADOWED_ON_THE_TENSOR, "output_type", id="output"),
        pytest.param(SHADOWED_ON_AN_INPUT, "input_type", id="input"),
    ],
)
def test_a_method_shadowed_on_a_tensor_is_caught(add_task, cpu_verifier, source, guard):
    """Guard (b): a tensor the verifier reads after forward must have no attribute of its own
    (the static check is on: it does not see this)."""
    assert ".untyped_storage = late" in source and "add_kernel[(1,)]" in source
    verdict = cpu_verifier.check(add_task, source)
    assert not verdict.passed and verdict.guard == guard, verdict.message
    assert "attribute(s) of its own" in verdict.message, verdict.message


def test_changed_input_finds_a_class_swap_at_any_depth_without_running_its_code():
    import torch

    from upskills.verify.candidate_timing import changed_input

    class Sub(torch.Tensor):
        pass

    class Loud(list):
        def __iter__(self):
            raise AssertionError("the candidate's __iter__ ran")

    x = torch.zeros(2)
    assert changed_input([x, 1, 2.0, None, "s", True, [x, (x, 3)]]) is None
    swapped = torch.zeros(2)
    swapped.__class__ = Sub
    assert changed_input([x, [x, (swapped,)]]).endswith("Sub")
    assert changed_input([x, [Loud([x])]]).endswith("Loud")


def test_the_static_check_refuses_a_class_swap():
    tree, problem = parse_candidate(INPUT_CLASS_SWAP, "kernel.py")
    assert tree is not None and problem is None
    messages = " ".join(issue.message for issue in static_guards(tree, "kernel.py"))
    assert "changing a tensor's class" in messages, messages


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(DISPATCH_OVERRIDE, id="dispatch_override"),
        pytest.param(PYTHON_DISPATCHER, id="python_dispatcher"),
        pytest.param(PROFILE_HOOK, id="profile_hook"),
        pytest.param(AUDIT_HOOK, id="audit_hook"),
        pytest.param(UNPERTURB, id="stack_walker"),
    ],
)
def test_the_static_check_refuses_getattr_passed_as_a_value(source):
    """``functools.reduce(getattr, names, obj)`` reaches names no call site shows: every cheat
    above that patched the verifier's process from Python went that way."""
    tree, problem = parse_candidate(source, "kernel.py")
    assert tree is not None and problem is None
    rules = {issue.rule for issue in static_guards(tree, "kernel.py")}
    assert "dynamic" in rules, rules


# Computes every timed call (the audit of timed calls passes), but writes a quarter of each
# time into the timer's list of times (a list is reachable from a frame and can be changed; no
# function is patched, so guard (d) sees nothing), and in the clock check's back-to-back loop
# computes only the landed call (``land_at``), so the judge's clock agrees with the forged
# times. The audited clock check has no landed call: every back-to-back call is on perturbed
# inputs and any may be verified.
FORGE_TIMES = (
    _stack_walker(
        "writes a quarter of each timed call's time into the timer's list",
        """
        seen = reach(f, "f_" + "locals")
        if "times" in seen and "chosen" in seen:  # the timer's loop
            t = seen["times"]
            for j in range(type(self).scaled, len(t)):
                t[j] = t[j] * 0.25
            type(self).scaled = len(t)
            break
        if "i" in seen and "land_at" in seen:  # the clock check's back-to-back calls
            honest = seen["i"] == seen["land_at"]
            break
        """,
        before="honest = True",
    )
    .replace("        n = x.numel()\n", "        n = x.numel() if honest else x.numel() // 4\n")
    .replace("class ModelNew(nn.Module):\n", "class ModelNew(nn.Module):\n    scaled = 0\n\n")
)


@pytest.mark.parametrize(
    ("source", "marks"),
    [
        pytest.param(
            PEEK_AT_KEPT_CALLS, ("seen[", "n = x.numel() if honest"), id="kept_call_peeker"
        ),
        pytest.param(FORGE_TIMES, ("t[j] = t[j] * 0.25", "scaled = 0"), id="time_forger"),
    ],
)
def test_a_timing_only_cheat_is_correct_code_outside_the_timer(
    add_task, cpu_verifier, source, marks, runtime_guards_only
):
    """Every call the trials make is computed: only timing could be fooled (GPU tests)."""
    assert all(m in source for m in marks)
    verdict = cpu_verifier.check(add_task, source)
    assert verdict.passed, verdict.message


@pytest.mark.gpu
def test_a_forward_that_forges_the_timers_list_is_caught_by_the_audited_clock_check(
    add_task, runtime_guards_only
):
    """Unaudited, the clock check lands one call, which the forger computes alone: without
    the late trial too it passes more than 1.6x faster than the honest add. Audited, every
    back-to-back call may be verified, and the judge's clock sees the honest time against the
    forged events."""
    cheat, _ = _mended_and_unmended(add_task, FORGE_TIMES, "audit_clock_calls")
    assert not cheat.passed and cheat.guard == "clock", cheat.message


@pytest.mark.gpu
def test_an_audited_clock_check_passes_honest_kernels_of_every_size(add_task):
    """The overhead taken off is the judge's measure, not a constant: a launch-bound add, a
    mid-size one and a 1.5 GB one pass, and their clock agrees with their events."""
    sizes = {"small": 1 << 12, "mid": 1 << 20, "big": 1 << 27}
    options = CheckOptions(seeds=1, timeout_s=300, baselines=False, audit_clock_calls=True)
    with Verifier("cuda", options) as verifier:
        for name, n in sizes.items():
            task = add_task.model_copy(
                update={"variants": [ShapeVariant(name="main", main=True, globals={"N": n})]}
            )
            verdict = verifier.check(task, GOOD_ADD)
            print(name, verdict.timing, verdict.notes)
            assert verdict.passed and verdict.timing is not None, (name, verdict.message)


SLOW_HOST_ADD = GOOD_ADD.replace(
    "    def forward(self, x, y):\n",
    "    calls = 0\n\n    def forward(self, x, y):\n"
    "        type(self).calls += 1\n"
    "        if type(self).calls % 4 == 0:  # a busy host: every 4th launch waits 2 ms\n"
    "            time.sleep(0.002)\n",
).replace("import torch\n", "import time\n\nimport torch\n", 1)

GRAPH_AWARE_CACHE = SLOW_HOST_ADD.replace(
    "            time.sleep(0.002)\n",
    "            time.sleep(0.002)\n"
    "        if torch.cuda.is_current_stream_capturing() and hasattr(self, 'last'):\n"
    "            return self.last\n",
).replace("        return out", "        self.last = out\n        return out")


@pytest.mark.gpu
def test_a_host_bound_kernel_is_timed_through_a_cuda_graph(add_task):
    """Host delays between launches are not a timing lie; CUDA-graph replays say so.

    The events' median sees the GPU's time (three calls in four wait for nothing); back to
    back, every fourth call's 2 ms on the host shows on the judge's clock. Replays from a
    CUDA graph have no host cost and agree with the events; a forward that records no work
    while captured returns a stale result once the judge changes the inputs.
    """
    small = add_task.model_copy(
        update={"variants": [ShapeVariant(name="main", main=True, globals={"N": 1 << 16})]}
    )
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=300, baselines=False)) as verifier:
        honest = verifier.check(small, SLOW_HOST_ADD)
        cheat = verifier.check(small, GRAPH_AWARE_CACHE)
    assert honest.passed and honest.timing_status == "measured", honest.message
    assert any("CUDA-graph replay" in n for n in honest.notes), honest.notes
    assert not cheat.passed and cheat.error_class == ErrorClass.GUARD, cheat.message


POISON_BASELINES = GOOD_ADD + (
    "\nimport glob, json, tempfile\n"
    "for _path in glob.glob(tempfile.gettempdir() + '/*/baselines.json'):\n"
    "    try:\n"
    "        _data = json.loads(open(_path).read())\n"
    "        for _entry in _data['entries'].values():\n"
    "            if _entry.get('eager'):\n"
    "                _entry['eager']['median_ms'] *= 1000.0\n"
    "        open(_path, 'w').write(json.dumps(_data))\n"
    "    except (OSError, ValueError, KeyError):\n"
    "        pass\n"
)


@pytest.mark.gpu
@pytest.mark.parametrize("user", ["judge's", "sandbox"])
def test_a_candidate_that_slows_the_cached_baseline_gains_nothing(
    add_task, request, monkeypatch, user
):
    """The baseline cache is a file the judge's user can write: a baseline made 1000x slower
    would make any kernel 1000x faster. Found on the H200 when an attack of this catalogue
    overwrote a corpus round's cache. A candidate under the judge's user
    (``UPSKILLS_SANDBOX_USER=none``) may rewrite it: the judge reads the cache as it was before
    the candidate ran, puts rewritten entries back and fails the verdict. As root, a CUDA
    candidate runs as ``nobody`` and cannot write it at all."""
    from upskills.verify.baselines import lookup_baseline, snapshot_cache
    from upskills.verify.sandbox import sandbox_user_differs

    if user == "judge's":
        monkeypatch.setenv("UPSKILLS_SANDBOX_USER", "none")
    elif not sandbox_user_differs():
        pytest.skip("not root (or UPSKILLS_SANDBOX_USER=none): candidates keep the user")
    # one level under the temp dir, where the attack looks (pytest's tmp_path is deeper)
    cache = Path(tempfile.mkdtemp(prefix="upskills-poison-"))
    request.addfinalizer(lambda: shutil.rmtree(cache, ignore_errors=True))
    monkeypatch.setenv("UPSKILLS_CACHE_DIR", str(cache))
    with Verifier("cuda", CheckOptions(seeds=1, timeout_s=300)) as verifier:
        honest = verifier.check(add_task, GOOD_ADD)
        assert honest.passed and honest.speedup_eager is not None, honest.message
        before = snapshot_cache()
        cheat = verifier.check(add_task, POISON_BASELINES)
    if user == "judge's":
        assert not cheat.passed, cheat.message
        assert cheat.guard == "baseline_cache", cheat.message
    else:  # its writes failed: an honest add, timed against the untouched baseline
        assert cheat.passed and cheat.guard is None, cheat.message
    assert cheat.speedup_eager is None or cheat.speedup_eager < 10 * honest.speedup_eager
    entry = lookup_baseline(honest.env["gpu"], honest.env["torch"], add_task.hash)
    assert entry == next(iter(before.user.entries.values())), "the cache was left poisoned"


HIDDEN_CUBLAS_ADD = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = """
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#define JOIN(a, b) a##b
extern "C" int JOIN(cubl, asCreate_v2)(void**);
extern "C" int JOIN(cubl, asSetStream_v2)(void*, cudaStream_t);
extern "C" int JOIN(cubl, asSaxpy_v2)(void*, int, const float*, const float*, int, float*, int);
torch::Tensor add(torch::Tensor x, torch::Tensor y) {
  static void* handle = nullptr;
  if (!handle) JOIN(cubl, asCreate_v2)(&handle);
  JOIN(cubl, asSetStream_v2)(handle, c10::cuda::getCurrentCUDAStream().stream());
  auto out = y.clone();
  float one = 1.f;
  JOIN(cubl, asSaxpy_v2)(handle, (int)x.numel(), &one, x.data_ptr<float>(), 1,
      out.data_ptr<float>(), 1);
  return out;
}
"""
DECL = "torch::Tensor add(torch::Tensor x, torch::Tensor y);"
ext = load_inline("hidden_cublas_add", cpp_sources=DECL, cuda_sources=SRC, functions=["add"])


class ModelNew(nn.Module):
    def forward(self, x, y):
        return ext.add(x.contiguous(), y.contiguous())
'''


@pytest.mark.gpu
def test_a_kernel_that_is_cublas_under_another_name_is_caught(add_task):
    """An "add kernel" that is cuBLAS's saxpy, its name assembled by the preprocessor so the
    static guard does not read it: the extension's imports name the library."""
    with Verifier("cuda", CheckOptions(seeds=1, timeout_s=300, baselines=False)) as verifier:
        verdict = verifier.check(add_task, HIDDEN_CUBLAS_ADD)
    assert not verdict.passed, verdict.message
    assert verdict.guard == "vendor_library" and "cublasSaxpy_v2" in verdict.message, (
        verdict.message
    )


# An honest add in CUDA that keeps its inputs in L2 between calls: it raises the persisting share
# of L2 once and, each call, puts an access policy window over the span of every input buffer it
# has seen (the judge rotates timed calls through a few input sets) on the current stream. The
# window is the stream's, so the judge's perturbation and L2 flush on that stream run under it
# too: the inputs' lines would survive the flush. The static guard refuses the names
# (``l2_persistence``); the GPU test below takes it out of the way to see what is behind it.
L2_PERSISTING_ADD = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

SRC = """
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>
__global__ void add_kernel(const float* x, const float* y, float* out, long n) {
  long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + y[i];
}
static uintptr_t lo = UINTPTR_MAX, hi = 0;
static void keep(const torch::Tensor& t) {
  lo = std::min(lo, (uintptr_t)t.data_ptr());
  hi = std::max(hi, (uintptr_t)t.data_ptr() + (uintptr_t)t.nbytes());
}
torch::Tensor add(torch::Tensor x, torch::Tensor y) {
  static bool limit = false;
  int dev = x.get_device();
  if (!limit) {
    int most = 0;
    cudaDeviceGetAttribute(&most, cudaDevAttrMaxPersistingL2CacheSize, dev);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, (size_t)most);
    limit = true;
  }
  keep(x);
  keep(y);
  int window = 0;
  cudaDeviceGetAttribute(&window, cudaDevAttrMaxAccessPolicyWindowSize, dev);
  cudaStreamAttrValue v = {};
  v.accessPolicyWindow.base_ptr = (void*)lo;
  v.accessPolicyWindow.num_bytes = std::min((size_t)(hi - lo), (size_t)window);
  v.accessPolicyWindow.hitRatio = 1.0f;
  v.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
  v.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
  auto stream = c10::cuda::getCurrentCUDAStream().stream();
  cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &v);
  auto out = torch::empty_like(x);
  long n = x.numel();
  add_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream>>>(
      x.data_ptr<float>(), y.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
"""
DECL = "torch::Tensor add(torch::Tensor x, torch::Tensor y);"
ext = load_inline("l2_persisting_add", cpp_sources=DECL, cuda_sources=SRC, functions=["add"])


class ModelNew(nn.Module):
    def forward(self, x, y):
        return ext.add(x.contiguous(), y.contiguous())
'''


def test_the_static_check_refuses_the_l2_persisting_add():
    tree, _ = parse_candidate(L2_PERSISTING_ADD, "k.py")
    assert tree is not None
    assert "l2_persistence" in {i.rule for i in static_guards(tree, "k.py")}


@pytest.mark.gpu
def test_inputs_kept_in_l2_across_calls_gain_nothing(add_task, runtime_guards_only):
    """Behind the static rule: the add that sets its inputs' L2 lines aside, at 1M elements
    (8 MB of inputs a set, the few sets within an H200's persisting share), beside the honest
    add. Caught, or no faster than 0.9x the honest time. Written in the twenty-fifth session's
    review with no device time left: not yet run (``verifier.md``, "L2 set aside across
    calls")."""
    with Verifier("cuda", CheckOptions(seeds=2, timeout_s=300, baselines=False)) as verifier:
        cheat = verifier.check(add_task, L2_PERSISTING_ADD)
        honest = verifier.check(add_task, GOOD_ADD)
    print("cheat:", cheat.guard, cheat.message, cheat.timing, "| honest:", honest.timing)
    _assert_caught_or_not_faster(cheat, honest)


# Times the L2-persisting add in this process's timer three ways: the honest add, the cheat
# with the fence (persisting lines demoted before each flush), the cheat without it. Run in a
# child process: the cheat's window and persisting limit stay on the stream and context.
L2_FENCE_PROBE = r"""
import ctypes
import importlib.util
import json
import sys

import torch

from upskills.verify import l2_fence, timing

spec = importlib.util.spec_from_file_location("l2_persisting_add_probe", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
cheat = module.ModelNew()
n = 1 << 21  # 8 MB an input: both within an H200's persisting share
x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
assert torch.equal(cheat(x, y), x + y)
honest = timing.time_cuda(lambda: torch.add(x, y), max_reps=1000)[0]
fenced = timing.time_cuda(lambda: cheat(x, y), max_reps=1000)[0]
unfenced = timing.time_cuda(lambda: cheat(x, y), max_reps=1000, demote_persisting_l2=False)[0]
driver, most = ctypes.CDLL("libcuda.so.1"), {}
for name, attribute in (("max_persisting", 108), ("max_window", 109)):  # CU_DEVICE_ATTRIBUTE_*
    value = ctypes.c_int()
    driver.cuDeviceGetAttribute(ctypes.byref(value), attribute, torch.cuda.current_device())
    most[name] = value.value
print(json.dumps({
    **most,
    "honest_ms": honest.median_ms,
    "fenced_ms": fenced.median_ms,
    "unfenced_ms": unfenced.median_ms,
    "set_aside": fenced.persisting_l2_bytes,
    "limit_now": l2_fence.persisting_limit(),
}))
"""


@pytest.mark.gpu
def test_the_l2_fence_takes_away_what_the_persisting_add_gains(tmp_path):
    """The run-time fence behind the static rule, timed without the verifier in between: the
    persisting add, timed with its lines demoted before each flush, is no faster than 0.9x the
    honest add; timed without the fence it must be faster than 0.85x (else the cheat does not
    work on this GPU and the fence's test says nothing: the failure says so). Written in the
    twenty-sixth session with no device lent: not yet run."""
    import json
    import subprocess
    import sys

    source = tmp_path / "l2_persisting_add.py"
    source.write_text(L2_PERSISTING_ADD)
    probe = tmp_path / "probe.py"
    probe.write_text(L2_FENCE_PROBE)
    done = subprocess.run(
        [sys.executable, str(probe), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    print(got)
    assert got["set_aside"] > 0, f"the cheat set no L2 aside: {got}"
    assert got["unfenced_ms"] < 0.85 * got["honest_ms"], f"the cheat gains nothing unfenced: {got}"
    assert got["fenced_ms"] >= 0.9 * got["honest_ms"], f"the fence let the cheat through: {got}"


# An honest add that takes its time: its inputs stay in the judge's shared memory for seconds.
SLOW_HONEST_ADD = GOOD_ADD.replace(
    "    def forward(self, x, y):\n",
    "    def forward(self, x, y):\n        time.sleep(0.8)\n",
).replace("import torch\n", "import time\n\nimport torch\n", 1)

# Writes zeros into every judge buffer it can find by name, for three seconds: another check
# running at the same time on the machine is the victim, not this one's judge.
SCAN_OTHER_CHECKS = add_attack(
    "        import glob\n"
    "        import time\n"
    "        end = time.monotonic() + 3.0\n"
    "        while time.monotonic() < end:\n"
    "            for path in glob.glob('/dev/shm/upsk' + 'ills-*'):\n"
    "                try:\n"
    "                    open(path, 'r+b').write(b'\\x00' * 64)\n"
    "                except OSError:\n"
    "                    pass\n"
    "            time.sleep(0.05)\n"
    "        return x + y\n"
)


def test_a_candidate_cannot_reach_the_buffers_of_another_check(add_task, cpu_verifier):
    """Two checks at once on one machine (a round's workers, a lift run, xdist): a candidate
    that scanned /dev/shm overwrote the other check's inputs, and an honest kernel failed as
    'modified its input' (CI, 2026-12-03). The judge's buffers now have no name: they cross
    as file descriptors beside the message, as VMM buffers do on a GPU."""
    import threading

    from upskills.verify import CheckOptions, Verifier

    verdicts = {}

    def honest() -> None:
        with Verifier("cpu", CheckOptions(seeds=2, timeout_s=120)) as verifier:
            verdicts["honest"] = verifier.check(add_task, SLOW_HONEST_ADD)

    worker = threading.Thread(target=honest)
    worker.start()
    try:
        verdicts["cheat"] = cpu_verifier.check(add_task, SCAN_OTHER_CHECKS)
    finally:
        worker.join(180)
    assert verdicts["honest"].passed, verdicts["honest"].message


@pytest.mark.gpu
def test_pytorch_after_the_trials_is_caught_by_the_late_trial(add_task):
    """The timed calls run without the op recorder: a forward that counts its calls and hands
    the work to PyTorch once the trials are over (a launch of its own beside it) was timed at
    PyTorch's speed (found 2026-12-05 on CPU, by reading; not yet run here). The trial after
    the timed calls refuses it; with that trial off, it passes."""
    from tests.verify.test_late_trial import LATE_SWITCH

    options = CheckOptions(seeds=1, timeout_s=300, baselines=False, random_shape=False)
    with Verifier("cuda", options) as verifier:
        honest = verifier.check(add_task, GOOD_ADD)
        cheat = LATE_SWITCH.replace("TRIALS", str(len(honest.variants)))
        unguarded = verifier.check(
            add_task, cheat, options=options.model_copy(update={"late_trial": False})
        )
        guarded = verifier.check(add_task, cheat)
    assert honest.passed and honest.timing is not None, honest.message
    assert unguarded.passed, unguarded.message  # the hole, with the late trial off
    assert not guarded.passed and guarded.guard == "torch_compute", guarded.message
    assert "the trial after every other call" in guarded.message


# Found 2026-12-05 (thirty-first session's review), not mended: the trials' watchers (the op
# recorder, the shadow profile) cost each op of forward ~20-30 us of host time, and the timed
# calls have none. A forward that times one torch.empty(1) knows which it is in
# (benchmarks/verifier_v2/watch_probe.py: on CPU, inside the judge's trials, its probe read
# "watched" in every trial; bare, 0.7% of single probes read above the cut). Watched, it runs
# its own kernel; bare, PyTorch's add beside a launch of nothing. The late trial is watched too.
WATCH_AWARE_ADD = (
    GOOD_ADD.replace(
        "    def forward(self, x, y):\n",
        "    def forward(self, x, y):\n"
        "        best = 1.0\n"
        "        for _ in range(3):\n"
        "            t0 = time.perf_counter()\n"
        "            torch.empty(1)\n"
        "            best = min(best, time.perf_counter() - t0)\n"
        "        if best < 10e-6:  # no watcher's cost: a timed call, PyTorch does the work\n"
        "            out = torch.empty_like(x)\n"
        "            add_kernel[(1,)](x, y, out, 0, BLOCK=16)  # a launch of its own, of nothing\n"
        "            return x + y\n",
    )
    # watched, its own kernel is slow: the add done 20 times over
    .replace(
        "        add_kernel[(triton.cdiv",
        "        for _ in range(20):\n            add_kernel[(triton.cdiv",
    )
    .replace("import torch\n", "import time\n\nimport torch\n", 1)
)


@pytest.mark.gpu
def test_a_forward_that_knows_when_it_is_watched_is_refused(add_task):
    """Found on CPU 2026-12-05 (``verifier.md``, "A forward that knows when it is watched"): a
    forward that reads the watchers' cost with its own clock runs its own, slow kernel in the
    trials and PyTorch's ``x + y`` in the timed calls. On an H100 the watched kernels took 0.0504
    ms against a timed median of 0.0112 ms (0.22x): refused. (Its twin whose own kernel is as
    fast as PyTorch's gains nothing, and is timed at what its own kernel runs at.)"""
    options = CheckOptions(seeds=1, timeout_s=300, baselines=False, random_shape=False)
    with Verifier("cuda", options) as verifier:
        cheat = verifier.check(add_task, WATCH_AWARE_ADD)
    print(cheat.passed, cheat.guard, cheat.message, cheat.timing)
    assert not cheat.passed, cheat.message
    assert cheat.guard == "timed_result" and "not watched" in cheat.message, cheat.message


@pytest.mark.gpu
def test_an_honest_kernels_timed_speed_is_explained_by_its_watched_kernels(add_task):
    """The rule's other half: CUPTI recorded the late trial's kernels (and no earlier trial's,
    so no timed call ran with CUPTI attached), and an honest kernel's timed median is at least
    its watched busy time's share."""
    from upskills.verify.watched_speed import WATCHED_SHARE

    options = CheckOptions(seeds=2, timeout_s=300, baselines=False, random_shape=False)
    with Verifier("cuda", options) as verifier:
        verdict = verifier.check(add_task, GOOD_ADD)
    assert verdict.passed, verdict.message
    timing = verdict.timing
    assert timing is not None and timing.watched_busy_ms is not None, verdict.notes
    print("median", timing.median_ms, "watched busy", timing.watched_busy_ms)
    assert timing.watched_busy_ms > 0
    assert all(v.gpu_busy_ms is None for v in verdict.variants), verdict.variants
    assert timing.median_ms >= WATCHED_SHARE * timing.watched_busy_ms
