"""Scoring continuations on an OpenAI-compatible server (``/v1/completions`` with ``echo``).

The real ``openai`` SDK talks through a mocked HTTP transport to a fake server that answers as
vLLM documents its echo responses: the prompt's tokens (a decoded BOS first, its log-prob
null), their log-probabilities and text offsets, then one generated token. The fake server's
tokenizer is a regex and its log-probabilities a table, so every expected score below is a
sum written out by hand.
"""

from __future__ import annotations

import json
import re

import pytest

from upskills.llm import get_provider
from upskills.llm.base import Message, ProviderError
from upskills.llm.openai_api import render_prompt

openai = pytest.importorskip("openai", reason="the openai extra is not installed")
try:  # the SDK's HTTP library: httpx, or httpx2 in newer SDKs
    import httpx2 as httpx
except ImportError:
    httpx = pytest.importorskip("httpx")

KEY = "sk-test-SECRET-0123456789"
URL = "http://vllm.test/v1"
CHATML = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}"
    "{% endif %}"
)
CONVERSATION = [
    Message(role="system", content="You write kernels."),
    Message(role="user", content="Fix the line."),
]
RENDERED = (
    "<|im_start|>system\nYou write kernels.<|im_end|>\n"
    "<|im_start|>user\nFix the line.<|im_end|>\n"
    "<|im_start|>assistant\n"
)
TOKEN = re.compile(r"\n| ?\w+| ?[^\w\s]|[^\S\n]+")
LOGP = {
    "    ": -0.5,
    "return": -1.0,
    " x": -0.25,
    " +": -2.0,
    " *": -0.75,
    " 1": -1.5,
    " 2": -0.125,
    " foobar": -3.0,
    " fooqux": -0.5,
    " baz": -1.25,
}
"""Log-probability of each token the fake server knows; any other token: -4.0."""


def tokenize(text: str) -> list[str]:
    tokens = TOKEN.findall(text)
    assert "".join(tokens) == text, "the fake tokenizer must cover the text"
    return tokens


class FakeServer:
    """Answers ``/v1/completions`` like vLLM (``style``: what the server gets wrong)."""

    def __init__(self, style: str = "vllm") -> None:
        self.style = style
        self.bodies: list[dict] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.bodies.append(body)
        assert request.url.path == "/v1/completions"
        tokens = ["<s>", *tokenize(body["prompt"])]  # a decoded BOS, as vLLM echoes it
        values = [None] + [LOGP.get(t, -4.0) for t in tokens[1:]]
        n = len(tokens)
        tokens.append("\n")  # the one generated token
        values.append(-0.01)
        offsets, at = [], 0
        for t in tokens:  # vLLM counts offsets over the decoded strings, BOS included
            offsets.append(at)
            at += len(t)
        if self.style == "sglang":
            offsets = [-1] * len(tokens)
        elif self.style == "no-echo":  # logprobs of the generated token only
            tokens, values, offsets = tokens[-1:], values[-1:], [0]
        elif self.style == "null-logprobs":  # echoes the prompt, but without log-probs
            values = [None] * n + values[n:]
        elif self.style == "token-ids":  # vLLM --return-tokens-as-token-ids
            tokens = [f"token_id:{i}" for i in range(len(tokens))]
        elif self.style == "no-usage":
            pass
        payload = {
            "id": "cmpl-1",
            "object": "text_completion",
            "created": 1760000000,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "text": body["prompt"] + "\n",
                    "logprobs": {
                        "text_offset": offsets,
                        "token_logprobs": values,
                        "tokens": tokens,
                        "top_logprobs": [None]
                        + [{t: v} for t, v in zip(tokens[1:], values[1:], strict=True)],
                    },
                    "finish_reason": "length",
                }
            ],
        }
        if self.style != "no-usage":
            payload["usage"] = {"prompt_tokens": n, "completion_tokens": 1, "total_tokens": n + 1}
        return httpx.Response(200, json=payload)


def provider(handler, retry=None, **options):
    client = httpx.Client(transport=httpx.MockTransport(handler))
    options = {"prompt_logprobs": True, "chat_template": CHATML} | options
    return get_provider(
        "openai/Qwen/Qwen2.5-Coder-7B-Instruct",
        api_key=KEY,
        base_url=URL,
        retry=retry,
        http_client=client,
        **options,
    )


def test_render_prompt_matches_the_template_and_transformers():
    assert render_prompt(CHATML, CONVERSATION) == RENDERED
    template = (
        "{%- if messages[0].role != 'system' %}{{ raise_exception('system first') }}{% endif %}\n"
        "{%- for m in messages %}\n"
        "  {{- m.role | upper }}: {{ m.content | tojson }}\n"
        "{% endfor %}\n"
        "{%- if add_generation_prompt %}ASSISTANT:{% endif %}"
    )
    ours = render_prompt(template, CONVERSATION)
    assert ours == 'SYSTEM: "You write kernels."\nUSER: "Fix the line."\nASSISTANT:'
    with pytest.raises(ProviderError, match="chat_template failed to render: system first"):
        render_prompt(template, CONVERSATION[1:])
    utils = pytest.importorskip("transformers.utils.chat_template_utils")
    chat = [{"role": m.role, "content": m.content} for m in CONVERSATION]
    for t, expected in ((CHATML, RENDERED), (template, ours)):
        rendered, _ = utils.render_jinja_template(
            [chat], chat_template=t, add_generation_prompt=True
        )
        assert rendered == [expected]


@pytest.mark.parametrize("style", ["vllm", "sglang", "no-usage"])
def test_scores_are_the_hand_computed_sums(style):
    server = FakeServer(style)
    prefix = "```python\ndef f(x):\n"
    scores = provider(server).score_batch(
        [(CONVERSATION, prefix, ["    return x + 1", "    return x * 2", ""])]
    )
    # "    " "return" " x" " +" " 1"  and  "    " "return" " x" " *" " 2"; empty: 0
    assert scores == [[-0.5 - 1.0 - 0.25 - 2.0 - 1.5, -0.5 - 1.0 - 0.25 - 0.75 - 0.125, 0.0]]
    assert sorted(b["prompt"] for b in server.bodies) == [
        RENDERED + prefix + "    return x * 2",
        RENDERED + prefix + "    return x + 1",
    ]
    body = server.bodies[0]
    assert body["model"] == "Qwen/Qwen2.5-Coder-7B-Instruct"
    assert (body["echo"], body["logprobs"], body["max_tokens"]) == (True, 1, 1)


def test_a_token_straddling_the_boundary_counts_in_full_for_every_candidate():
    server = FakeServer()
    # the prefix ends inside a word: " foo" + "bar" is one token " foobar", as is " fooqux"
    scores = provider(server).score_batch([(CONVERSATION, "x = foo", ["bar baz", "qux"])])
    assert scores == [[-3.0 - 1.25, -0.5]]
    # at a token boundary nothing of the prefix is counted: " baz" alone
    assert provider(FakeServer()).score_batch([(CONVERSATION, "x = foobar", [" baz"])]) == [[-1.25]]


def test_offsets_are_read_from_the_end_not_from_text_offset():
    # a Llama-3 style echo: a decoded BOS shifts text_offset by 17 characters
    body = {
        "id": "c",
        "object": "text_completion",
        "created": 0,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "text": "ab cd!",
                "finish_reason": "length",
                "logprobs": {
                    "tokens": ["<|begin_of_text|>", "ab", " c", "d", "!"],
                    "token_logprobs": [None, -1.0, -2.0, -3.0, -9.0],
                    "text_offset": [0, 17, 19, 21, 22],
                    "top_logprobs": None,
                },
            }
        ],
        "usage": {"prompt_tokens": 4, "completion_tokens": 1, "total_tokens": 5},
    }
    scorer = provider(
        lambda r: httpx.Response(200, json=body), chat_template="{{ messages[0].content }}"
    )
    ab = [Message(role="user", content="ab")]
    assert scorer.score_batch([(ab, " c", ["d"]), (ab, " ", ["cd"]), (ab, "", [" cd"])]) == [
        [-3.0],
        [-5.0],  # " c" holds the "c" of "cd": it counts in full
        [-5.0],
    ]
    with pytest.raises(ProviderError, match="do not spell the end of the prompt"):
        scorer.score_batch([(ab, " c", ["e"])])


LINES = [("    return x + 1", False), ("    return x * 2", True), ("    return 1", False)]


def run_choose(tmp_path, handler, retry=None):
    """A choose case of three lines in two arms, through ``Generator.run``: its records."""
    from upskills.cases.model import Choice
    from upskills.lift.arms import Arm
    from upskills.lift.config import CaseInfo, LiftConfig, RunManifest
    from upskills.lift.generate import Generator
    from upskills.lift.store import GenerationRecord, read_records
    from upskills.lift.student import student_from_dict
    from upskills.tasks.model import Task

    student = student_from_dict(
        {
            "name": "served",
            "provider": "openai",
            "model": "Qwen/Qwen2.5-Coder-7B-Instruct",
            "base_url": URL,
            "prompt_logprobs": True,
            "chat_template": CHATML,
        }
    )
    served = get_provider(
        student.provider_spec(),
        **student.provider_options(),
        http_client=httpx.Client(transport=httpx.MockTransport(handler)),
        api_key=KEY,
        retry=retry,
    )
    case = CaseInfo(
        id="c1",
        task="t",
        task_hash="h",
        split="heldout",
        prompt="Fix the line.",
        task_def=Task(name="t", statement="s", source="class Model: pass\n"),
        rung="choose",
        choices=[Choice(line=line, correct=ok) for line, ok in LINES],
        kernel_prefix="def f(x):\n",
    )
    manifest = RunManifest(
        config=LiftConfig(out=str(tmp_path), students=["served"], cases=["x"], evaluate=False),
        arms=[Arm(name="baseline", kind="baseline"), Arm(name="s@1", kind="inline", block="B")],
        cases=[case],
        students=[student.model_dump(mode="json")],
        prompt_hashes={},
        token_counter="estimate:chars/4",
        created="2026-01-01T00:00:00+00:00",
        upskills_version="0.1.0",
    )
    path = tmp_path / "generations.jsonl"
    assert Generator(manifest, student, served, {}).run(path) == 2
    return read_records(path, GenerationRecord)


def test_the_argmax_picks_the_likeliest_line_through_the_generator(tmp_path):
    from upskills.lift.prompting import system_prompt

    server = FakeServer()
    records = run_choose(tmp_path, server)
    expected = [-5.25, -2.625, -0.5 - 1.0 - 1.5]  # the * line is the likeliest
    assert [(r.arm, r.choice, r.scores, r.error) for r in records] == [
        ("baseline", 1, expected, None),
        ("s@1", 1, expected, None),
    ]
    assert records[0].kernel_source == "def f(x):\n    return x * 2\n"
    prompts = {b["prompt"] for b in server.bodies}
    assert len(server.bodies) == len(prompts) == 6
    for block in ("", "B"):
        system = Message(role="system", content=system_prompt(block))
        head = render_prompt(CHATML, [system, Message(role="user", content="Fix the line.")])
        assert {head + "```python\ndef f(x):\n" + line for line, _ in LINES} <= prompts


def test_http_500_is_retried_then_a_provider_error(retry, sleeps):
    calls = []

    def handler(request):
        calls.append(request)
        return httpx.Response(500, json={"error": {"message": "engine dead", "type": "x"}})

    with pytest.raises(ProviderError, match="HTTP 500 server error, still failing after 2") as e:
        provider(handler, retry).score_batch([(CONVERSATION, "", ["a"])])
    assert (e.value.status, e.value.retries, len(calls), sleeps) == (500, 2, 3, [1.0, 2.0])


def test_a_timeout_is_retried_then_a_provider_error(retry):
    def handler(request):
        raise httpx.ReadTimeout("timed out", request=request)

    with pytest.raises(ProviderError, match="request timed out, still failing after 2 retries"):
        provider(handler, retry).score_batch([(CONVERSATION, "", ["a", "b"])])


def test_an_outage_is_recorded_as_an_infrastructure_error_not_an_answer(tmp_path, retry):
    def handler(request):
        raise httpx.ConnectError("refused", request=request)

    records = run_choose(tmp_path, handler, retry)
    assert [(r.choice, r.scores, r.kernel_source) for r in records] == [(None, [], None)] * 2
    assert all("could not connect" in (r.error or "") for r in records)


@pytest.mark.parametrize(
    ("style", "message"),
    [
        ("no-echo", "did not echo the prompt's log-probabilities"),
        ("null-logprobs", "carry no log-probabilities"),
        ("token-ids", "do not spell the end of the prompt"),
    ],
)
def test_a_server_without_prompt_logprobs_says_so(style, message, retry, sleeps):
    with pytest.raises(ProviderError, match=message) as e:
        provider(FakeServer(style), retry).score_batch([(CONVERSATION, "", ["    return x"])])
    assert "vLLM and SGLang return prompt log-probabilities" in str(e.value)
    assert "llama.cpp" in str(e.value) and sleeps == []  # not retried: it will not change


def test_llama_cpp_refusing_echo_is_a_clear_error_not_retried(retry, sleeps):
    def handler(request):  # what llama-server answers to echo=true
        body = {"error": {"code": 400, "message": "Only no echo is supported", "type": "x"}}
        return httpx.Response(400, json=body)

    with pytest.raises(ProviderError, match="HTTP 400.*Only no echo is supported") as e:
        provider(handler, retry).score_batch([(CONVERSATION, "", ["a"])])
    assert e.value.status == 400 and sleeps == []


def test_unsupported_providers_say_so_before_any_request():
    from upskills.lift.runner import can_score

    calls = []
    plain = provider(lambda r: calls.append(r), prompt_logprobs=False, chat_template=None)
    assert plain.scores_log_likelihood is False and not can_score(plain)
    with pytest.raises(ProviderError, match="not set up to score log-likelihoods.*vLLM and SGLang"):
        plain.score_batch([(CONVERSATION, "", ["a"])])
    assert calls == []
    assert can_score(provider(FakeServer()))
    with pytest.raises(ProviderError, match="OpenAI's API returns no prompt log-probabilities"):
        get_provider("openai/gpt-4o-mini", api_key=KEY, prompt_logprobs=True, chat_template=CHATML)
    with pytest.raises(ProviderError, match="prompt_logprobs needs chat_template"):
        get_provider("openai/m", api_key=KEY, base_url=URL, prompt_logprobs=True)
    pytest.importorskip("anthropic")
    assert not can_score(get_provider("anthropic/claude-haiku-4-5", api_key=KEY))


def test_student_prompt_logprobs_is_checked_at_load():
    from upskills.lift.student import StudentError, student_from_dict

    base = {"name": "s", "model": "m", "base_url": URL}
    ok = student_from_dict(
        base | {"provider": "openai", "prompt_logprobs": True, "chat_template": CHATML}
    )
    assert ok.provider_options() == {
        "base_url": URL,
        "chat_template": CHATML,
        "prompt_logprobs": True,
    }
    assert (
        "prompt_logprobs" not in student_from_dict(base | {"provider": "openai"}).provider_options()
    )
    with pytest.raises(StudentError, match="field chat_template: prompt_logprobs needs it"):
        student_from_dict(base | {"provider": "openai", "prompt_logprobs": True})
    with pytest.raises(StudentError, match="field prompt_logprobs: only openai students"):
        student_from_dict(base | {"provider": "anthropic", "prompt_logprobs": True})
