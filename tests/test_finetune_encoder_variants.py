"""A fine-tuned pre-LN or non-default-activation model exports to files that match the numpy reference.

The trainable model and the exporters build the same encoder skeleton; these runs prove it end to
end for the layouts the fine-tuner used to refuse or never exercised: train a few steps (with
dropout), then convert the trained weights to TFLite and ONNX and judge both against the reference.
"""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from albert_edge.convert.onnx_export import onnx_model_bytes
from albert_edge.convert.parity import ParityCase, check_parity, make_samples
from albert_edge.convert.tflite_export import convert_to_tflite_bytes
from albert_edge.inputs.data import Example
from albert_edge.finetune.trainer import FinetuneSettings, finetune, training_init
from albert_edge.model import AlbertConfig, parse_config_dict
from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer

pytestmark = pytest.mark.slow  # fine-tunes three encoder variants, then exports each

CHARS = "好坏大小多少高低快慢新旧美丑"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *CHARS]
SETTINGS = FinetuneSettings(epochs=1, max_seq_len=16, batch_size=8, learning_rate=3e-3, max_steps=4,
                            evals_per_epoch=1, dropout=0.1, seed=3)
SIZES = {"vocab_size": len(VOCAB), "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2,
         "intermediate_size": 32, "max_position_embeddings": 32}

CONFIGS = {
    # brightmart albert_zh modeling_preln: pre-LN, projection before the sum, the TF1 "gelu" (tanh form).
    "preln_brightmart": AlbertConfig(**SIZES, embedding_size=8, ln_type="preln", embedding_order="project_then_add"),
    # A Hugging Face BERT config.json that asks for "gelu_new" (the tanh GELU).
    "hf_bert_gelu_new": parse_config_dict({"model_type": "bert", "hidden_act": "gelu_new", "type_vocab_size": 2,
                                           "layer_norm_eps": 1e-12, **SIZES}, "config.json"),
    # Google ALBERT layout with relu.
    "google_relu": AlbertConfig(**SIZES, embedding_size=8, hidden_act="relu", embedding_order="add_then_project"),
}


def generated(n: int, seed: int) -> list[Example]:
    rng = np.random.default_rng(seed)
    texts = ["".join(rng.choice(list(CHARS), size=int(rng.integers(2, 14)))) for _ in range(n)]
    return [Example("pos" if t.count("好") > t.count("坏") else "neg", t) for t in texts]


@pytest.fixture(scope="module", params=sorted(CONFIGS))
def trained(request):
    config = CONFIGS[request.param]
    preprocessor = Preprocessor(WordPieceTokenizer.from_vocab_text("\n".join(VOCAB) + "\n"), max_seq_len=16)
    start = training_init(config, 2, 3)
    result = finetune(start, generated(32, 0), generated(8, 1), preprocessor, ("neg", "pos"), SETTINGS,
                      log=lambda m: None, progress=False)
    return start, result.weights


def test_config_reads_as_intended():
    assert CONFIGS["hf_bert_gelu_new"].hidden_act == "gelu_tanh"
    assert CONFIGS["hf_bert_gelu_new"].embedding_order == "no_projection"


def test_training_moves_the_encoder_weights(trained):
    start, weights = trained
    name = "encoder.group0.inner0.attention.query.kernel"
    assert not np.array_equal(start.tensors[name], weights.tensors[name])


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_exported_trained_model_matches_the_reference(trained, fmt):
    _, weights = trained
    data = convert_to_tflite_bytes(weights) if fmt == "tflite" else onnx_model_bytes(weights)
    samples = make_samples(weights, cases=(ParityCase(1, 7, False), ParityCase(3, 16, True)))
    result = check_parity(data, weights, samples=samples, threads=(1,), name=fmt)
    assert result.passed, result.failure_line()
    assert result.max_abs_logit is not None and result.max_abs_logit <= 1e-4
