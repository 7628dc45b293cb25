"""Log-likelihood scoring: the cached (CPU) and padded-batch (GPU) paths give the same sums."""

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from upskills.llm.scoring import ScoreItem, score_cached, score_padded  # noqa: E402


def _tiny_model():
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        vocab_size=64,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=128,
    )
    return transformers.LlamaForCausalLM(config).eval()


def _reference(model, context, cont):  # noqa: ANN001, ANN202 - plain full-sequence sum
    ids = torch.tensor([context + cont])
    with torch.no_grad():
        logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
    return sum(float(logp[len(context) - 1 + j, t]) for j, t in enumerate(cont))


def test_cached_and_padded_scores_equal_the_full_sequence_sum():
    model = _tiny_model()
    items = [
        ScoreItem(context=[1, 5, 9, 13, 2], continuations=[[3, 4], [7], [8, 9, 10, 11]]),
        ScoreItem(context=[2, 6], continuations=[[1, 1, 1], [60]]),
    ]
    cached = [score_cached(model, it, "cpu") for it in items]
    padded = score_padded(model, items, "cpu", batch_size=3, pad_id=0)
    for it, c_row, p_row in zip(items, cached, padded, strict=True):
        for cont, c, p in zip(it.continuations, c_row, p_row, strict=True):
            ref = _reference(model, it.context, cont)
            assert c == pytest.approx(ref, abs=1e-4)
            assert p == pytest.approx(ref, abs=1e-4)
