"""MobileBERT's own options through the skeleton (#40), beyond the family tests every encoder shares.

tests/test_encoder_families.py runs MobileBERT's default layout (3-gram embedding, bottleneck narrower
than H, shared key/query bottleneck, stacked FFNs, NoNorm) through convert, every head, quantize and
MediaPipe. Here: the options transformers' MobileBertConfig has that change the computation
(``classifier_activation`` false: no pooler; ``use_bottleneck_attention``; no shared key/query
bottleneck), each matched with transformers on the reference, the TFLite and the ONNX file; and the
options albert-edge does not map, each refused in one line with exit 2 and nothing written.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from albert_edge.cli import main
from albert_edge.convert import check_parity, convert_to_tflite_bytes, onnx_model_bytes
from albert_edge.model import load_checkpoint
from albert_edge.model.reference import reference_forward
from albert_edge.tasks import get_task

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from tests.support.tiny_families import family_checkpoint  # needs torch: after the importorskips
from tests.support.family_parity import PAIRS, hf_batch as _batch, run_file as _run, softmax as _softmax, torch_forward as _torch

OPTIONS = {
    "no pooler": dict(classifier_activation=False),
    "bottleneck attention, three FFNs": dict(use_bottleneck_attention=True, num_feedforward_networks=3),
    "unshared key/query": dict(key_query_shared_bottleneck=False, intra_bottleneck_size=32),
}


@pytest.mark.parametrize("options", list(OPTIONS), ids=list(OPTIONS))
def test_each_layout_option_converts_with_transformers_probabilities(options, tmp_path):
    folder, model, tokenizer = family_checkpoint(tmp_path / "ckpt", "mobilebert", "SequenceClassification",
                                                 num_labels=3, **OPTIONS[options])
    weights = load_checkpoint(folder)
    ids, mask = _batch(tokenizer, PAIRS)
    theirs = _torch(model, ids, mask).logits.double().numpy()
    assert np.max(np.abs(reference_forward(weights, ids, mask).logits - theirs)) <= 1e-5
    task = get_task(None, weights, folder)
    for data in (convert_to_tflite_bytes(weights, task=task), onnx_model_bytes(weights, task=task)):
        assert check_parity(data, weights, task=task).passed
        got = _run(data, ids.astype(np.int32), mask.astype(np.int32))["logits"]
        assert np.max(np.abs(_softmax(got) - _softmax(theirs))) <= 1e-3


def test_without_classifier_activation_the_first_token_is_classified_as_it_is(tmp_path):
    """No pooler weights: the reader's identity pooler, not a tanh one, so logits = classifier([CLS])."""
    folder, model, _ = family_checkpoint(tmp_path / "ckpt", "mobilebert", "SequenceClassification", num_labels=2,
                                         classifier_activation=False)
    assert not any(name.startswith("mobilebert.pooler") for name in model.state_dict())
    weights = load_checkpoint(folder)
    assert weights.config.pooler_act == "identity"
    assert np.array_equal(weights.tensors["pooler.kernel"], np.eye(weights.config.hidden_size, dtype=np.float32))


def test_a_padded_batch_reads_the_pad_rows_in_the_3_gram_as_transformers_does(tmp_path):
    """The 3-gram of the last real token takes the next row: the pad token's embedding in a padded batch,
    zeros at the end of an unpadded one. Each file follows the ids it is given, as transformers does."""
    folder, model, tokenizer = family_checkpoint(tmp_path / "ckpt", "mobilebert", "TokenClassification", num_labels=4)
    with torch.no_grad():  # a pad row that is not zero makes the two cases differ
        model.mobilebert.embeddings.word_embeddings.weight[tokenizer.pad_token_id].add_(1.0)
    model.save_pretrained(str(folder))
    weights = load_checkpoint(folder)
    task = get_task(None, weights, folder)
    ids, mask = _batch(tokenizer, PAIRS)
    theirs = _torch(model, ids, mask).logits.numpy()
    real = mask.astype(bool)
    for data in (convert_to_tflite_bytes(weights, task=task), onnx_model_bytes(weights, task=task)):
        got = _run(data, ids.astype(np.int32), mask.astype(np.int32))["logits"]
        assert np.max(np.abs(_softmax(got)[real] - _softmax(theirs)[real])) <= 1e-3


@pytest.mark.parametrize("key, value", [("use_bottleneck", False), ("trigram_input", False),
                                        ("normalization_type", "layer_norm"), ("num_feedforward_networks", 0)])
def test_an_unmapped_option_is_one_line_and_exit_2(key, value, tmp_path, capsys):
    folder, _, _ = family_checkpoint(tmp_path / "ckpt", "mobilebert", "SequenceClassification", num_labels=2)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    (folder / "config.json").write_text(json.dumps({**config, key: value}), encoding="utf-8")
    capsys.readouterr()  # transformers' save progress
    assert main(["convert", str(folder), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert "config.json" in err and key in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_inspect_names_mobilebert_norm_and_bottleneck_not_a_layer_norm_place(tmp_path, capsys):
    """MobileBERT has no LayerNorm: `inspect` said "postln" (the config's unused default) for it."""
    folder, _, _ = family_checkpoint(tmp_path / "ckpt", "mobilebert", "SequenceClassification", num_labels=2,
                                     intra_bottleneck_size=32, num_feedforward_networks=3)
    assert main(["inspect", str(folder)]) == 0
    structure = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("structure:"))
    assert "NoNorm, bottleneck 32, 3 FFN(s) per layer" in structure
    assert "postln" not in structure
