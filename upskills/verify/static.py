"""Static checks of a candidate's source: parsing and the guards an AST can see.

These run in the parent before any candidate code executes. They catch the cheap, obvious
forms of reward hacking (calling ``torch.matmul`` or ``F.softmax``, side streams, threads,
patched timers, caching decorators on ``forward``, using the reference ``Model``). They are a
first line only: the run-time guards in :mod:`upskills.verify.guards` catch what a rename or an
``getattr`` hides from the AST. This is not a security sandbox.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from upskills.verify.static_cpp import cpp_issues
from upskills.verify.static_host import OTHER_GPU_APIS, word_rule
from upskills.verify.static_interpreter import REACH_DUNDERS, interpreter_issues
from upskills.verify.verdict import ErrorClass

PROFILERS = (
    "torch.profiler",
    "torch.autograd.profiler",
    "torch.autograd.profiler_legacy",
    "torch.autograd.profiler_util",
)
"""PyTorch's profilers: a forward that switched the verifier's shadow profile off and its own
on would hide the ops between (``verify/shadow_ops.py``, 2026-12-05). Refused as modules and
as attributes."""

PROFILERS_WHY = "(b) a profiler in the candidate can switch the op recorders off"

FORBIDDEN_MODULES = {
    "threading": "(d) threads are a timing trick",
    "_thread": "(d) threads are a timing trick",
    "multiprocessing": "(d) other processes are a timing trick",
    "concurrent": "(d) thread/process pools are a timing trick",
    "asyncio": "(d) concurrent work outside the timed call is a timing trick",
    "subprocess": "(d) other processes are a timing trick",
    "torch.multiprocessing": "(d) other processes are a timing trick",
    "gc": "(e) walking the heap can reach the reference's output",
    "upskills": "(e) the candidate must not use the verifier or the task's reference",
    "__main__": "(e) the candidate must not reach into the running program",
    "importlib": "(e) dynamic imports hide what the candidate uses",
    "torch._dynamo": "(b) torch.compile generates the kernel instead of the candidate",
    "torch._inductor": "(b) torch.compile generates the kernel instead of the candidate",
    "torch.utils._python_dispatch": "(b) the candidate must not touch the dispatch machinery",
    "torch.library": "(b) registering op overrides replaces PyTorch's kernels, not yours",
    "torch.jit": "(d) forked or scripted work runs outside the recorder and the timed stream",
    "torch.futures": "(d) asynchronous work escapes the recorder and the timed stream",
    "torch.hub": "(e) dynamic imports hide what the candidate uses",
    "torch.overrides": "(b) the candidate must not touch the dispatch machinery",
    "torch._C": "(b) PyTorch's private C bindings can switch off the op recorder",
    "numpy": "(b) NumPy computes on the CPU outside your kernel",
    "ctypes": "(e) raw memory access reaches outside the candidate's own tensors",
    "cffi": "(e) raw memory access reaches outside the candidate's own tensors",
    "signal": "(d) signals are not a kernel's business",
    "pickle": "(e) unpickling runs arbitrary code",
    "marshal": "(e) code objects hide what the candidate runs",
    "builtins": "(e) the candidate must not reach into the interpreter's builtins",
    "triton.runtime.interpreter": "(e) detecting or changing the judge's interpreter",
    "triton.knobs": "(e) detecting or changing the judge's configuration",
    **dict.fromkeys(PROFILERS, PROFILERS_WHY),
    **OTHER_GPU_APIS,
}
"""Module (or package prefix) -> why importing it is rejected."""

COMPUTE_FUNCTIONS = frozenset(
    """softmax log_softmax matmul mm bmm addmm addbmm baddbmm einsum linear bilinear conv1d
    conv2d conv3d conv_transpose1d conv_transpose2d conv_transpose3d layer_norm rms_norm
    group_norm batch_norm instance_norm normalize gelu silu relu relu_ leaky_relu sigmoid
    scaled_dot_product_attention cumsum cumprod bincount histc embedding cross_entropy
    nll_loss index_add scatter_add scatter_reduce sum mean amax amin argmax argmin max min prod
    norm var std logsumexp dot mv outer tensordot kron erf""".split()
)
"""torch / torch.nn.functional / torch.special / torch.linalg functions doing a task's work."""

TORCH_COMPUTE_ROOTS = {"torch", "torch.nn.functional", "torch.special", "torch.linalg"}
"""Modules whose ``COMPUTE_FUNCTIONS`` a candidate may not call."""

TIMING_ATTRIBUTES = {
    "torch.cuda.Stream": "(d) side streams escape the timed stream",
    "torch.cuda.ExternalStream": "(d) side streams escape the timed stream",
    "torch.cuda.stream": "(d) side streams escape the timed stream",
    "torch.cuda.set_stream": "(d) side streams escape the timed stream",
    "torch.cuda.StreamContext": "(d) side streams escape the timed stream",
    "torch.Stream": "(d) side streams escape the timed stream",
    "torch.cuda.Event": "(d) the candidate must not use timing events",
    "torch.cuda.graph": "(d) CUDA graph replay of stale work is a timing trick",
    "torch.cuda.CUDAGraph": "(d) CUDA graph replay of stale work is a timing trick",
    "torch.compile": "(b) torch.compile generates the kernel instead of the candidate",
    "torch.cuda.set_sync_debug_mode": "(d) the candidate must not change synchronisation",
    "os.fork": "(d) other processes are a timing trick",
    "os.system": "(d) other processes are a timing trick",
    "os.popen": "(d) other processes are a timing trick",
    "os.kill": "(d) signalling processes is not a kernel's business",
    "sys.modules": "(e) the candidate must not reach into loaded modules",
    "sys._getframe": "(e) walking stack frames can reach the reference's output",
    "inspect.stack": "(e) walking stack frames can reach the reference's output",
    "inspect.currentframe": "(e) walking stack frames can reach the reference's output",
    "traceback.walk_stack": "(e) walking stack frames can reach the reference's output",
    "traceback.walk_tb": "(e) walking stack frames can reach the reference's output",
    "inspect.getattr_static": "(e) getattr by another name hides what it reaches",
    "torch._C._get_dispatch_mode": "(b) the candidate must not detect the op recorder",
    **dict.fromkeys(PROFILERS, PROFILERS_WHY),
    "torch.set_default_dtype": "(b) the default dtype belongs to the judge",
    "torch.set_default_tensor_type": "(b) the default dtype belongs to the judge",
    "torch.set_default_device": "(b) the default device belongs to the judge",
    "torch.ops": "(b) aten ops called directly still do the work in PyTorch",
    "torch.nn.modules.module.register_module_forward_hook": "(b) global module hooks",
    "torch.nn.modules.module.register_module_forward_pre_hook": "(b) global module hooks",
    "torch.nn.modules.module.register_module_full_backward_hook": "(b) global module hooks",
    "os.environ": "(e) reading the environment detects the judge (TRITON_INTERPRET)",
    "os.environb": "(e) reading the environment detects the judge",
    "os.getenv": "(e) reading the environment detects the judge (TRITON_INTERPRET)",
    "os.putenv": "(e) changing the environment changes the judge's configuration",
    "os.getpid": "(e) process ids detect the judge",
    "os.getppid": "(e) process ids detect the judge",
    "sys.argv": "(e) the command line detects the judge",
    "sys.settrace": "(e) tracing hooks reach into other code",
    "sys.setprofile": "(e) profiling hooks reach into other code",
    "sys.monitoring": "(e) monitoring callbacks reach into other code",
    "sys.addaudithook": "(e) audit hooks run code inside the verifier's own steps",
    "sys.meta_path": "(e) import hooks run code inside the verifier's own imports",
    "sys.path_hooks": "(e) import hooks run code inside the verifier's own imports",
    "sys.path_importer_cache": "(e) import hooks run code inside the verifier's own imports",
}
"""Dotted attribute (after alias resolution) -> why using it is rejected."""

ATTRIBUTE_BUILTINS = {"getattr", "setattr", "delattr", "hasattr"}
"""Builtins a candidate may only call by name, with the attribute named at the call."""

DYNAMIC_BUILTINS = frozenset(
    "__import__ __builtins__ globals vars eval exec compile locals breakpoint".split()
)
"""Builtins that hide what the candidate reaches (refused by name, called or not)."""

FRAME_ATTRIBUTES = {"f_back", "f_locals", "f_globals", "tb_frame", "gi_frame", "cr_frame"}
"""Frame attributes: reading them walks the stack toward the reference's output."""

DUNDER_ATTRIBUTES = {
    "__dict__": "(d) writing into namespaces patches library functions out of sight",
    "__globals__": "(e) function globals reach other modules",
    "__builtins__": "(e) the candidate must not reach into the interpreter's builtins",
    "__code__": "(e) code objects hide what the candidate runs",
    "__closure__": "(e) closures of other code are off limits",
    "__subclasses__": "(e) walking the class tree reaches the judge's machinery",
    "__class__": "(b) changing a tensor's class makes it do work where outputs are judged",
    "__torch_function__": "(b) tensor subclasses do work where outputs are judged",
    "__torch_dispatch__": "(b) tensor subclasses do work where outputs are judged",
    "__setattr__": "(d) bypassing assignment checks patches library functions",
    **REACH_DUNDERS,
}
"""Dunder attributes a candidate may not touch, with why."""

CONVERSION_METHODS = {"tolist", "numpy", "__array__"}
"""Tensor methods that move the work to Python or NumPy."""

HOOK_METHODS = {"_pop_mode", "_push_mode", "_set_dispatch_mode", "_disable_current_modes"}
"""Dispatch-mode internals (popping the op recorder)."""

JUDGE_WORDS = ("INTERPRET", "/proc/", "upskills.verify", "upskills-", "upskills_reference")
"""String literals that can only serve to detect or reach the judge."""

PROTECTED_ROOTS = {"torch", "triton", "time", "numpy", "builtins", "os", "sys", "functools"}
"""Modules whose attributes a candidate must not assign (patched timers, synchronize, ...)."""


@dataclass(frozen=True)
class StaticIssue:
    """One reason the candidate's source is rejected before it runs."""

    error_class: ErrorClass
    """SYNTAX or GUARD."""
    line: int
    """1-based line in the candidate."""
    message: str
    """What is wrong, with ``file:line`` in front."""
    rule: str = "syntax"
    """Which static rule fired (``forbidden_import``, ``torch_compute``, ...)."""


def parse_candidate(source: str, filename: str) -> tuple[ast.Module | None, StaticIssue | None]:
    """Parse the candidate; on a syntax error return the issue naming ``file:line:col``."""
    try:
        return ast.parse(source, filename=filename), None
    except SyntaxError as exc:
        line = exc.lineno or 0
        col = f":{exc.offset}" if exc.offset else ""
        text = (exc.text or "").strip()
        detail = f"\n    {text}" if text else ""
        return None, StaticIssue(
            ErrorClass.SYNTAX, line, f"{filename}:{line}{col}: syntax error: {exc.msg}{detail}"
        )
    except ValueError as exc:  # e.g. null bytes in the source
        return None, StaticIssue(ErrorClass.SYNTAX, 0, f"{filename}: cannot parse: {exc}")


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _is_kernel_def(node: ast.AST) -> bool:
    """True for a ``@triton.jit`` (or autotune/heuristics-wrapped) function."""
    if not isinstance(node, ast.FunctionDef):
        return False
    for dec in node.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = dotted_name(target) or ""
        if name.split(".")[-1] in {"jit", "autotune", "heuristics"}:
            return True
    return False


class _GuardVisitor(ast.NodeVisitor):
    """Walks the module collecting guard issues (aliases resolved as imports are seen)."""

    def __init__(self, filename: str, defines_model: bool) -> None:
        self.filename = filename
        self.defines_model = defines_model
        self.aliases: dict[str, str] = {}
        self.issues: list[StaticIssue] = []
        self.in_kernel = 0
        self.kernel_locals: set[str] = set()
        self.module_names: set[str] = set()
        """Module-level names that are not @triton.jit functions (data, helpers, imports)."""
        self.callees: set[int] = set()
        """``id`` of each node called directly (``getattr(...)``, not ``reduce(getattr, ...)``)."""

    def _flag(self, node: ast.AST, why: str, rule: str = "") -> None:
        line = getattr(node, "lineno", 0)
        self.issues.append(
            StaticIssue(
                ErrorClass.GUARD, line, f"{self.filename}:{line}: guard {why}", rule or _rule(why)
            )
        )

    def visit(self, node: ast.AST) -> None:
        for field in ("id", "attr", "name", "arg", "value"):  # names, and strings that build them
            word = getattr(node, field, None)
            if isinstance(word, str) and (found := word_rule(word)):  # static_host.py
                self._flag(node, *found)
                break
        super().visit(node)

    def _resolve(self, node: ast.AST) -> str | None:
        name = dotted_name(node)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        base = self.aliases.get(head, head)
        return f"{base}.{rest}" if rest else base

    def _check_module(self, node: ast.AST, module: str) -> None:
        for banned, why in FORBIDDEN_MODULES.items():
            if module == banned or module.startswith(banned + "."):
                self._flag(node, f"{why}: imports {module}")
                return

    def _import_in_kernel(self, node: ast.AST) -> None:
        if self.in_kernel:
            self._flag(
                node,
                "(b) an import inside a @triton.jit kernel runs only under the interpreter "
                "(the Triton compiler rejects it)",
                "python_in_kernel",
            )

    def visit_Import(self, node: ast.Import) -> None:
        self._import_in_kernel(node)
        for alias in node.names:
            self._check_module(node, alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                self.aliases.setdefault(head, head)
        self.generic_visit(node)  # the names themselves (static_host.word_rule)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        self._import_in_kernel(node)
        module = node.module or ""
        if node.level:
            self._flag(node, "(e) relative imports can reach the reference module")
            return
        self._check_module(node, module)
        for alias in node.names:
            full = f"{module}.{alias.name}"
            self._check_module(node, full)
            self._check_name(node, full)
            self.aliases[alias.asname or alias.name] = full
        self.generic_visit(node)

    def _check_name(self, node: ast.AST, full: str) -> None:
        module, _, attr = full.rpartition(".")
        if module in TORCH_COMPUTE_ROOTS and attr in COMPUTE_FUNCTIONS and not self.in_kernel:
            self._flag(
                node,
                f"(b) uses {full}: the main computation must run in the candidate's own kernel",
            )
        elif full in TIMING_ATTRIBUTES:
            self._flag(node, f"{TIMING_ATTRIBUTES[full]}: uses {full}")

    def _attrgetter(self, node: ast.Call, name: str) -> None:
        parts = _attrgetter_names(node, name)
        if parts is None:
            self._flag(node, f"(e) {name} with a computed name hides what it reaches", "dynamic")
        elif any(p in FRAME_ATTRIBUTES for p in parts):
            self._flag(node, f"(e) walking stack frames can reach the reference: {name}")
        elif any(p.startswith("_") or p == "np" for p in parts):
            self._flag(node, f"(e) {name} of a private name hides it", "dynamic")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in FRAME_ATTRIBUTES:
            self._flag(node, f"(e) walking stack frames can reach the reference: .{node.attr}")
        elif node.attr in DUNDER_ATTRIBUTES:
            self._flag(node, f"{DUNDER_ATTRIBUTES[node.attr]}: uses .{node.attr}", "namespace")
        elif node.attr in CONVERSION_METHODS:
            self._flag(
                node,
                f"(b) .{node.attr}() moves the work to Python/NumPy instead of your kernel",
                "python_fallback",
            )
        elif node.attr in HOOK_METHODS:
            self._flag(node, f"(b) .{node.attr} pops or pushes the op recorder", "dispatch")
        full = self._resolve(node)
        if full is not None:
            if isinstance(node.ctx, ast.Load):
                self._check_name(node, full)
            head = full.split(".")
            if head[0] in {"torch", "triton"} and any(
                part.startswith("_") and not part.startswith("__") for part in head[1:]
            ):
                self._flag(node, f"(b) uses the library's private {full}", "private_api")
            if self.in_kernel and head[0] in {"torch", "numpy", "np"} and len(head) > 1:
                self._flag(
                    node,
                    f"(b) {full} inside a @triton.jit kernel runs only under the interpreter",
                    "torch_in_kernel",
                )
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and any(w in node.value for w in JUDGE_WORDS):
            self._flag(node, f"(e) the string {node.value!r} detects or reaches the judge", "judge")
        if isinstance(node.value, str):
            for message, rule in cpp_issues(node.value):
                self._flag(node, message, rule)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            if self._resolve(base) in {"torch.Tensor", "torch._tensor.Tensor"}:
                self._flag(
                    node,
                    "(b) a torch.Tensor subclass can do work where outputs are judged",
                    "tensor_subclass",
                )
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            if node.id == "Model" and not self.defines_model:
                self._flag(node, "(e) uses the reference's Model: ModelNew must compute itself")
            elif node.id in DYNAMIC_BUILTINS:
                self._flag(node, f"(e) {node.id}() hides what the candidate reaches", "dynamic")
            elif node.id in ATTRIBUTE_BUILTINS and id(node) not in self.callees:
                # passed on (``functools.reduce(getattr, names, obj)``, ``g = getattr``), it
                # reaches names its call site cannot show: the stack walks and the registrations
                # of kernels into PyTorch's dispatcher that passed the static check so
                self._flag(
                    node, f"(e) {node.id} passed as a value hides what it reaches", "dynamic"
                )
            elif node.id in self.aliases and node.id != self.aliases[node.id]:
                self._check_name(node, self.aliases[node.id])

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        kernel = _is_kernel_def(node)
        saved = self.kernel_locals
        if kernel:
            self.kernel_locals = param_names(node) | {
                n.id
                for n in ast.walk(node)
                if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            }
        self.in_kernel += kernel
        self.generic_visit(node)
        self.in_kernel -= kernel
        self.kernel_locals = saved

    def _outside_kernel_call(self, node: ast.Call) -> str | None:
        """In a kernel: the Python (not Triton) code a call reaches, or None.

        A ``@triton.jit`` body compiles only calls of ``tl``/``triton`` functions and other
        jit functions; any other call runs only under the interpreter, outside the launch's
        recorded work (a helper doing the task with torch while the launch counts as a kernel).
        """
        func = node.func
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        if not isinstance(root, ast.Name) or root.id in self.kernel_locals:
            return None
        if isinstance(func, ast.Name):
            return func.id if func.id in self.module_names else None
        full = self._resolve(func) or root.id
        if full.split(".")[0] == "triton":
            return None
        return full if root.id in self.module_names or root.id in self.aliases else None

    def visit_Subscript(self, node: ast.Subscript) -> None:
        value = node.value
        if self.in_kernel and isinstance(value, ast.Name):
            if value.id in self.module_names and value.id not in self.kernel_locals:
                self._flag(
                    node,
                    f"(b) {value.id}[...] inside a @triton.jit kernel is Python state, reachable "
                    "only under the interpreter",
                    "python_in_kernel",
                )
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and not self.in_kernel:
            self._flag(node, "(b) uses the @ operator: the matmul must be the candidate's kernel")
        self.generic_visit(node)

    def _check_store(self, target: ast.AST) -> None:
        if isinstance(target, ast.Attribute):
            full = self._resolve(target)
            if full is not None and full.split(".")[0] in PROTECTED_ROOTS:
                self._flag(
                    target, f"(d) patches {full}: timers and library functions are off limits"
                )

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_store(target)
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_store(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_store(target)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if self.in_kernel:
            reached = self._outside_kernel_call(node)
            if reached is not None:
                self._flag(
                    node,
                    f"(b) {reached}() inside a @triton.jit kernel is Python, not Triton: it runs "
                    "only under the interpreter, outside the kernel's work",
                    "python_in_kernel",
                )
        self.callees.add(id(node.func))
        name = self._resolve(node.func)
        if name in {"setattr", "delattr"} and node.args:
            root = self._resolve(node.args[0])
            if root != "self":
                self._flag(
                    node,
                    f"(d) {name}() on {root or 'an object'}: only ModelNew's own attributes",
                    "library_patch",
                )
        if name in {"getattr", "hasattr"} and len(node.args) >= 2:
            key = node.args[1]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                root = self._resolve(node.args[0])
                if key.value in FRAME_ATTRIBUTES:  # getattr(frame, "f_back") on any object
                    self._flag(
                        node, f"(e) walking stack frames can reach the reference: {key.value!r}"
                    )
                elif key.value in {*DUNDER_ATTRIBUTES, *CONVERSION_METHODS, "np"}:  # any object
                    self._flag(node, f"(e) getattr of {key.value!r} hides it", "dynamic")
                elif root is not None:
                    self._check_name(node, f"{root}.{key.value}")
                    if key.value.startswith("_"):
                        self._flag(node, f"(e) getattr of {key.value!r} hides it", "dynamic")
            else:
                self._flag(
                    node, "(e) getattr with a computed name hides what it reaches", "dynamic"
                )
        if name in {"operator.attrgetter", "operator.methodcaller"}:
            self._attrgetter(node, name)
        if isinstance(node.func, ast.Attribute) and node.func.attr in {
            "register_forward_hook",
            "register_forward_pre_hook",
        }:
            self._flag(node, "(b) forward hooks run code around forward", "module_hooks")
        self.generic_visit(node)


def _attrgetter_names(node: ast.Call, name: str) -> list[str] | None:
    """The attribute names an ``operator.attrgetter``/``methodcaller`` call reaches.

    None when one is computed: a built string hides it as ``getattr`` with a computed name does.
    """
    args = node.args if name == "operator.attrgetter" else node.args[:1]
    parts: list[str] = []
    for arg in args:
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            return None
        parts += arg.value.split(".")
    return parts


def _module_level_names(tree: ast.Module) -> set[str]:
    """Names bound at module level other than ``@triton.jit`` functions and Triton imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if not _is_kernel_def(node):
                names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names |= {n.id for n in ast.walk(target) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            module = getattr(node, "module", None) or ""
            for alias in node.names:
                full = f"{module}.{alias.name}" if module else alias.name
                if full.split(".")[0] != "triton":
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


def param_names(fn: ast.FunctionDef) -> set[str]:
    """A function's parameter names, ``self`` left out."""
    args = fn.args
    every = args.posonlyargs + args.args + args.kwonlyargs
    return {a.arg for a in every if a.arg != "self"}


def static_guards(tree: ast.Module, filename: str) -> list[StaticIssue]:
    """All static guard issues of a parsed candidate, in source order.

    Args:
        tree: The parsed candidate.
        filename: Name used in messages (``file:line``).

    Returns:
        The issues; empty when the source passes every static guard.
    """
    defines_model = any(
        isinstance(node, ast.ClassDef) and node.name == "Model" for node in tree.body
    )
    visitor = _GuardVisitor(filename, defines_model)
    visitor.module_names = _module_level_names(tree)
    visitor.visit(tree)
    for node, why, rule in interpreter_issues(tree):  # static_interpreter.py
        visitor._flag(node, why, rule)  # pyright: ignore[reportPrivateUsage]
    issues = list(visitor.issues)
    from upskills.verify.static_cache import cache_issues

    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            issues.extend(cache_issues(node, filename))
    return sorted(issues, key=lambda issue: issue.line)


def _rule(why: str) -> str:
    """A rule name for a guard message without an explicit one."""
    text = why.lower()
    for key, rule in (
        ("imports", "forbidden_import"),
        ("timing", "timing"),
        ("stream", "timing"),
        ("graph", "timing"),
        ("stack frames", "frame_walk"),
        ("reference's model", "reference_model"),
        ("patches", "library_patch"),
        ("@ operator", "torch_compute"),
        ("main computation", "torch_compute"),
        ("default", "default_dtype"),
        ("environment", "judge"),
        ("process ids", "judge"),
        ("command line", "judge"),
        ("hooks", "module_hooks"),
        ("op recorders off", "hidden_ops"),
        ("exit status", "exit"),
        ("relative imports", "forbidden_import"),
    ):
        if key in text:
            return rule
    return "static"
