"""What the Triton interpreter leaves within a candidate's reach cannot change what runs.

Each cheat here compiles a subtraction for sm_90 (wrong on every trial) and, through the
interpreter's own machinery, makes its CPU launches add: each passed the vector add ("correct
on 6 trials") before ``module_watch``, ``check_injected``, the rewrite's scope and the static
rules of ``static_interpreter`` (checked when written, 2026-12-06). The run-time cases run
with the static check out of the way; the static rules are tested on their own.
"""

from __future__ import annotations

import ast
import sys
import types

import pytest

from tests.verify.conftest import GOOD_ADD
from tests.verify.test_interpreter_integrity import NUMPY_ADD
from upskills.verify.module_watch import WatchedModules
from upskills.verify.static import static_guards
from upskills.verify.verdict import ErrorClass

pytest.importorskip("triton")

SUBTRACTS = GOOD_ADD.replace(
    "    tl.store(out_ptr + offs, x + y, mask=mask)",
    "    z = x - y\n    tl.store(out_ptr + offs, z, mask=mask)",
)
assert SUBTRACTS != GOOD_ADD


def _before_model(code: str) -> str:
    return SUBTRACTS.replace("\n\nclass ModelNew", "\n\n" + code + "\n\nclass ModelNew")


def _after_a_launch(patch: str) -> str:
    """A forward that launches once (so the rewriter has run), patches, then launches again."""
    first = "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n"
    changed = SUBTRACTS.replace(first, first + f"        {patch}\n" + first)
    assert changed != SUBTRACTS
    return changed


SWAP_SUB = """import ast


def _swap(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
            node.op = ast.Add()
    return tree
"""
SHADOWED_SEMANTIC = """class _Seen:  # every assignment of the kernel runs through its to_tensor
    def __init__(self):
        self.seen = []

    def to_tensor(self, value, check):
        self.seen.append(value)
        if len(self.seen) % 6 == 0:  # pid, offs, mask, x, y, then z: the sum instead
            return self.seen[-3] + self.seen[-2]
        return value


interpreter_semantic = _Seen()
"""
NUMPY_BY_A_LIST = "import torch.nn.functional as F\nN = [F][0].np\nN.subtract = N.add\n"

RUNTIME_CHEATS = {
    "numpy_through_a_list": _before_model(NUMPY_BY_A_LIST),
    "numpy_through_a_parameter": _before_model(
        "import torch.nn.functional as F\n\n\ndef reach(m):\n    return m.np\n\n\n"
        "N = reach(F)\nN.subtract = N.add\n"
    ),
    "rewriter_ast_function": _before_model(
        SWAP_SUB + "\n\n_inc = ast.increment_lineno\n\n\ndef _evil(tree, n=1):\n"
        "    return _inc(_swap(tree), n)\n\n\nast.increment_lineno = _evil\n"
    ),
    "rewriter_ast_class": _before_model(
        SWAP_SUB + "\n\n_visit = ast.NodeTransformer.visit\n\n\ndef _evil(self, node):\n"
        "    return _visit(self, _swap(node))\n\n\nast.NodeTransformer.visit = _evil\n"
    ),
    "module_global_semantic": _before_model(SHADOWED_SEMANTIC),
    "semantic_instance": _after_a_launch("interpreter_semantic.sub = interpreter_semantic.add"),
    "builder_instance": _after_a_launch(
        "b = interpreter_semantic.builder\n        b.create_fsub = b.create_fadd"
    ),
}
WHY = {
    "numpy_through_a_list": "numpy.subtract was replaced",
    "numpy_through_a_parameter": "numpy.subtract was replaced",
    "rewriter_ast_function": "ast.increment_lineno was replaced",
    "rewriter_ast_class": "ast.NodeTransformer.visit is new and shadows",
    "module_global_semantic": "the kernel's module holds its own interpreter_semantic",
    "semantic_instance": "interpreter_semantic was changed (sub)",
    "builder_instance": "interpreter_builder was changed (create_fsub)",
}


@pytest.mark.parametrize("cheat", RUNTIME_CHEATS, ids=RUNTIME_CHEATS.keys())
def test_the_interpreters_reach_fails_as_a_guard_at_run_time(
    cpu_verifier, add_task, runtime_guards_only, cheat
):
    v = cpu_verifier.check(add_task, RUNTIME_CHEATS[cheat])
    assert not v.passed and v.error_class == ErrorClass.GUARD, v.message
    assert "InterpreterChanged" in v.message and WHY[cheat] in v.message, v.message


LIBRARY_TEXT_SWAPPED = """import linecache

import triton.language.standard as S

_path = S.__file__
_lines = list(linecache.getlines(_path))
_at = [i for i, line in enumerate(_lines) if "return zeros(input.shape, input.dtype)" in line][0]
_lines[_at] = _lines[_at].replace("zeros(input.shape, input.dtype)", "input + input")
linecache.cache[_path] = (1, None, _lines, _path)  # no time stamp: checkcache keeps it
"""


def test_the_interpreter_rewrites_the_librarys_text(cpu_verifier, add_task):
    """``tl.zeros_like`` given new lines in ``linecache``: the interpreter rewrote it as
    ``input + input`` (so ``(x - y) + tl.zeros_like(y)`` added) while the compile used the
    library's own; it passed the static check too (checked)."""
    source = GOOD_ADD.replace(
        "    tl.store(out_ptr + offs, x + y, mask=mask)",
        "    z = (x - y) + tl.zeros_like(y)\n    tl.store(out_ptr + offs, z, mask=mask)",
    ).replace("\n\nclass ModelNew", "\n\n" + LIBRARY_TEXT_SWAPPED + "\n\nclass ModelNew")
    assert "linecache.cache" in source and "zeros_like(y)" in source
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and v.error_class == ErrorClass.GUARD, v.message
    assert "would rewrite zeros_like from a text not its file's" in v.message, v.message


HELPER_GIVEN_ANOTHERS_REWRITER = """@triton.jit
def helper(x, y):
    return x - y


@triton.jit
def numpy_helper(x, y):
    x.handle.data[:] = x.handle.data + y.handle.data
    return x


helper.rewriter = numpy_helper.rewriter
"""


def test_a_helper_runs_its_own_rewrite(cpu_verifier, add_task, runtime_guards_only):
    """A helper given a NumPy helper's rewriter, its kept rewrite dropped after each launch
    (so no later check found it): the compile carried the subtraction it shows (it passed
    before ``InterpretedFunction.rewrite`` checked every function it rewrites, checked)."""
    source = GOOD_ADD.replace(
        "    tl.store(out_ptr + offs, x + y, mask=mask)",
        "    z = helper(x, y)\n    tl.store(out_ptr + offs, z, mask=mask)",
    ).replace("\n\nclass ModelNew", "\n\n" + HELPER_GIVEN_ANOTHERS_REWRITER + "\n\nclass ModelNew")
    source = source.replace(
        "        return out",
        "        type(add_kernel).rewritten_fn.pop(helper.fn, None)\n        return out",
    )
    assert "rewritten_fn.pop" in source and "z = helper(x, y)" in source
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and v.error_class == ErrorClass.GUARD, v.message
    assert "the rewriter of helper rewrites another function" in v.message, v.message


def test_a_kernel_of_the_candidates_is_never_the_verifiers_own(
    cpu_verifier, add_task, runtime_guards_only
):
    """A NumPy kernel marked with the attribute the verifier once marked its own kernels by
    (``_upskills_internal``) was launched uncounted and never compiled, beside an honest
    launch that counted: it passed (checked on ``048d4a5``). Own kernels are now known by
    identity (``own_kernels.py``), and the mark is an attribute not Triton's."""
    numpy_kernel = NUMPY_ADD
    launch = "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n"
    marked = numpy_kernel + "\nnumpy_kernel._upskills_internal = True\n\n"
    source = SUBTRACTS.replace("\n\nclass ModelNew", "\n\n" + marked + "\nclass ModelNew")
    source = source.replace(launch, launch + launch.replace("add_kernel", "numpy_kernel"))
    assert "numpy_kernel[(" in source and "_upskills_internal = True" in source
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and v.error_class == ErrorClass.GUARD, v.message
    assert "attributes not its own" in v.message and "_upskills_internal" in v.message, v.message


KEPT_REWRITE_EDITED = (
    NUMPY_ADD
    + """
def grid(meta):  # inside the launch, after the kernel's rewrite and before its grid check
    made = type(add_kernel).rewritten_fn[add_kernel.fn]
    made.__code__ = numpy_kernel.rewrite().__code__
    return (triton.cdiv(int(meta["n"]), 1024),)
"""
)


def test_a_kept_rewrite_edited_in_place_fails(cpu_verifier, add_task, runtime_guards_only):
    """The grid set the kernel's kept rewrite's ``__code__`` to a NumPy kernel's: the object
    was the one the wrapper made, so it passed (checked on ``d489e6e``) until the kept
    rewrites' prints held their code and defaults too."""
    source = _before_model(KEPT_REWRITE_EDITED).replace(
        "add_kernel[(triton.cdiv(n, 1024),)]", "add_kernel[grid]"
    )
    assert "add_kernel[grid]" in source
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and v.error_class == ErrorClass.GUARD, v.message
    assert "keeps a rewrite of add_kernel it did not make" in v.message, v.message


def test_the_rewriters_copies_are_taken_back(cpu_verifier, add_task, runtime_guards_only):
    """``np`` is no longer in the kernel's module after a launch: the patch fails by name, and
    the subtraction runs as compiled (it passed as an addition before the rewrite's scope)."""
    source = _after_a_launch("np.subtract = np.add")
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and "NameError: name 'np' is not defined" in v.message, v.message


def test_the_verifiers_wrappers_keep_no_way_past_them(cpu_verifier, add_task, runtime_guards_only):
    """``type(kernel).run.__wrapped__`` launched an uncompiled NumPy kernel past every launch
    guard, beside an honest launch that counted (it passed before the wrappers dropped it)."""
    numpy_kernel = NUMPY_ADD
    launch = "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n"
    past = (
        "        type(numpy_kernel).run.__wrapped__(numpy_kernel, x, y, out, n, BLOCK=1024,"
        " grid=(triton.cdiv(n, 1024),), warmup=False)\n"
    )
    source = SUBTRACTS.replace("\n\nclass ModelNew", "\n\n" + numpy_kernel + "\nclass ModelNew")
    source = source.replace(launch, launch + past)
    assert past in source and "def numpy_kernel" in source
    v = cpu_verifier.check(add_task, source)
    assert not v.passed and "has no attribute '__wrapped__'" in v.message, v.message


def test_an_honest_add_launched_twice_in_a_forward_passes(cpu_verifier, add_task):
    """The second launch finds the interpreter as the first left it (its language patches
    undone, the rewriter's copies taken back): nothing of it reads as a change."""
    launch = "        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)\n"
    v = cpu_verifier.check(add_task, GOOD_ADD.replace(launch, launch + launch))
    assert v.passed, v.message


STATIC_ROUTES = {
    "numpy_through_a_list": (
        NUMPY_BY_A_LIST,
        "NumPy reached another way reads tensor memory outside your kernel: .np",
    ),
    "numpy_by_its_free_name": ("x = np.add\n", "np, the interpreter's name for it"),
    "numpy_by_getattr": (
        "import torch.nn.functional as F\n\n\ndef f(m):\n    return getattr(m, 'np')\n",
        "getattr of 'np'",
    ),
    "the_interpreters_semantic": (SHADOWED_SEMANTIC, "interpreter_semantic"),
    "the_interpreters_builder": ("b = interpreter_builder\n", "interpreter_builder"),
    "a_wrappers_original": ("f = ModelNew.forward.__wrapped__\n", "uses .__wrapped__"),
    "a_wrappers_original_by_getattr": (
        "def f(g):\n    return getattr(g, '__wrapped__')\n",
        "getattr of '__wrapped__'",
    ),
    "a_builtins_module": ("B = print.__self__\n", "uses .__self__"),
    "a_functions_defaults": ("def f(g):\n    g.__kwdefaults__ = {}\n", "uses .__kwdefaults__"),
}


@pytest.mark.parametrize("route", STATIC_ROUTES, ids=STATIC_ROUTES.keys())
def test_the_static_check_names_the_way_in(route):
    code, why = STATIC_ROUTES[route]
    issues = static_guards(ast.parse(_before_model(code)), "candidate.py")
    assert any(why in issue.message for issue in issues), [i.message for i in issues]


def test_a_name_np_of_the_candidates_own_is_not_numpy():
    assert not static_guards(ast.parse(_before_model("np = 4\nK = np + 1\n")), "candidate.py")


@pytest.fixture
def watched_module(monkeypatch):
    """A module under a root of its own, with a function, a class and two values."""
    module = types.ModuleType("upskills_watch_probe")
    module.LIMIT, module.hook, module.f = 3, None, lambda: 1
    base = type("Base", (), {"__module__": module.__name__, "m": lambda self: 1})
    module.Base, module.C = base, type("C", (base,), {"__module__": module.__name__})
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return module


def test_the_watch_names_what_changed_and_passes_what_may(watched_module):
    m = watched_module
    watch = WatchedModules(roots=frozenset({m.__name__}))
    assert watch.changed() is None
    m.LIMIT = 4  # a value may change
    m.extra = "new"  # a module may grow a name
    assert watch.changed() is None
    for change, why in (
        (lambda: setattr(m, "f", lambda: 2), "upskills_watch_probe.f was replaced"),
        (lambda: delattr(m, "f"), "upskills_watch_probe.f was removed"),
        (lambda: setattr(m, "hook", print), "upskills_watch_probe.hook became a function"),
        (lambda: setattr(m, "len", lambda x: 0), "len is new and shadows the builtin"),
        (lambda: setattr(m.C, "m", lambda self: 2), "C.m is new and shadows a base class's"),
    ):
        saved = dict(vars(m)), dict(vars(m.C))
        change()
        found = watch.changed()
        assert found is not None and why in found, found
        for name in set(vars(m)) - set(saved[0]):
            delattr(m, name)
        vars(m).update(saved[0])
        for name in set(vars(m.C)) - set(saved[1]):
            delattr(m.C, name)
        assert watch.changed() is None


ROUNDS_THROUGH_FP16 = GOOD_ADD.replace(
    "    tl.store(out_ptr + offs, x + y, mask=mask)",
    "    z = ((x + y) * 100000.0).to(tl.float16).to(tl.float32) / 100000.0\n"
    "    tl.store(out_ptr + offs, z, mask=mask)",
)
"""A vector add whose scaled sums overflow fp16 (inf for any |x + y| over 0.66: wrong, as a
GPU computes it and as the interpreter does when nothing changed it)."""
WIDENED = ROUNDS_THROUGH_FP16.replace(
    "\n\nclass ModelNew",
    "\n\ndef widen(d, w):  # the library reached through parameters\n"
    "    d.name = w.name\n    d.primitive_bitwidth = w.primitive_bitwidth\n\n\nclass ModelNew",
).replace(
    "        out = torch.empty_like(x)\n",
    "        widen(tl.float16, tl.float32)\n" + "        out = torch.empty_like(x)\n",
)


def test_a_dtypes_attributes_changed_fail_as_a_guard(cpu_verifier, add_task):
    """``tl.float16`` given float32's name and width made the interpreter round in fp32: the
    fp16 add passed every CPU trial (2026-12-07); the static check does not see it."""
    assert WIDENED.count("widen(") == 2 and ROUNDS_THROUGH_FP16 != GOOD_ADD
    honest = cpu_verifier.check(add_task, ROUNDS_THROUGH_FP16)
    assert not honest.passed and honest.error_class == ErrorClass.NAN, honest.message
    v = cpu_verifier.check(add_task, WIDENED)
    assert not v.passed and v.error_class == ErrorClass.GUARD, v.message
    assert "triton.language.core.float16's attributes changed (name, primitive_bitwidth)" in (
        v.message
    )


class _Liar(str):
    """A name that says it equals any other."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def test_the_watch_holds_the_languages_objects_and_containers_by_identity():
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder

    watch = WatchedModules()
    assert watch.changed() is None
    ops = InterpreterBuilder.ir_rmw_op_to_interpreter_rmw_op
    first = next(iter(ops))
    saved_name, saved_op = tl.float16.name, ops[first]
    for change, why in (
        (lambda: setattr(tl.float16, "name", _Liar("fp16x")), "float16's attributes changed"),
        (lambda: tl.dtype.FP_TYPES.append("fp99"), "dtype.FP_TYPES's contents changed"),
        (
            lambda: ops.__setitem__(first, ops[next(k for k in ops if k is not first)]),
            "InterpreterBuilder.ir_rmw_op_to_interpreter_rmw_op's contents changed",
        ),
    ):
        try:
            change()
            found = watch.changed()
            assert found is not None and why in found, found
        finally:
            tl.float16.name, ops[first] = saved_name, saved_op
            if tl.dtype.FP_TYPES[-1] == "fp99":
                tl.dtype.FP_TYPES.pop()
        assert watch.changed() is None
