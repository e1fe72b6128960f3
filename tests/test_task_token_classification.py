"""Token classification (NER): checkpoints in real formats -> TFLite/ONNX per-token logits.

HF checkpoints are written by transformers' own ``AlbertForTokenClassification`` /
``BertForTokenClassification.save_pretrained`` (random init, seeded); the TF1 ones by
``write_tf1_checkpoint`` with the variable names the BERT-NER scripts create (``output_weights``
[num_labels, H] on the sequence output, BERT's unused pooler kept). Parity: fp32 logits within
1e-4 of the float64 numpy reference and of transformers' torch forward on the same weights.
Runtime: about 12 s (a dozen small conversions; more on a shared machine).
"""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.convert import check_parity, convert_to_tflite_bytes, onnx_model_bytes
from albert_edge.errors import CheckpointError
from albert_edge.model import (AlbertConfig, albert_tiny_zh_config, albert_tiny_zh_google_config, load_checkpoint,
                               random_weights)
from albert_edge.model.reference import reference_forward
from albert_edge.model.tf1 import write_tf1_checkpoint
from albert_edge.runtime.backends import open_backend
from albert_edge.tasks import SequenceClassification, TokenClassification, detect_task, get_task

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.support.tiny_hf import saved_checkpoint, tiny_hf_model  # needs torch: after the importorskips

LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def _hf_model(kind: str):
    return tiny_hf_model(kind, "TokenClassification", num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
                         label2id={label: i for i, label in enumerate(LABELS)})


def _ids(seed: int = 1, batch: int = 2, seq: int = 9):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 60, size=(batch, seq))
    mask = np.ones_like(ids)
    mask[1, 6:] = 0
    return ids, mask


@pytest.fixture(scope="module", params=["albert", "bert"])
def hf_checkpoint(request, tmp_path_factory):
    return saved_checkpoint(_hf_model(request.param), tmp_path_factory.mktemp(f"hf_{request.param}_ner"))


def test_hf_token_classifier_is_detected_and_has_no_pooler(hf_checkpoint):
    path, _ = hf_checkpoint
    weights = load_checkpoint(path)
    assert not weights.has_pooler and weights.num_labels == len(LABELS)
    assert isinstance(detect_task(weights), TokenClassification)  # by the missing pooler
    assert isinstance(detect_task(weights, path), TokenClassification)  # and by config.json architectures
    with pytest.raises(Exception, match="pooler"):
        SequenceClassification().check_weights(weights)


def test_reference_token_logits_equal_transformers(hf_checkpoint):
    path, model = hf_checkpoint
    weights = load_checkpoint(path)
    ids, mask = _ids()
    ours = reference_forward(weights, ids, mask).token_logits
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.double().numpy()
    assert ours.shape == (2, 9, len(LABELS))
    real = mask.astype(bool)
    assert np.max(np.abs(ours[real] - theirs[real])) <= 1e-4


def test_hf_token_classifier_converts_with_parity_against_reference_and_transformers(hf_checkpoint):
    path, model = hf_checkpoint
    weights = load_checkpoint(path)
    task = get_task(None, weights, path)
    ids, mask = _ids(seed=3)
    with torch.no_grad():
        theirs = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask)).logits.double().numpy()
    real = mask.astype(bool)
    for data in (convert_to_tflite_bytes(weights, task=task), onnx_model_bytes(weights, task=task)):
        result = check_parity(data, weights, task=task)
        assert result.passed and result.max_abs["logits"] <= 1e-4, result.failure_line()
        got = open_backend(data, num_threads=1).run(
            {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})["logits"]
        assert got.shape == (2, 9, len(LABELS))
        assert np.max(np.abs(got[real] - theirs[real])) <= 1e-4


@pytest.mark.parametrize("scheme", ["bert", "google", "brightmart"])
def test_tf1_ner_checkpoint_converts_as_token_classification(tmp_path, scheme):
    small = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
                 max_position_embeddings=32)
    if scheme == "bert":
        config = AlbertConfig(model_type="bert", embedding_size=16, embedding_order="no_projection",
                              num_hidden_groups=2, **small)
    elif scheme == "google":
        config = albert_tiny_zh_google_config().with_changes(embedding_size=8, **small)
    else:
        config = albert_tiny_zh_config().with_changes(embedding_size=8, **small)
    weights = random_weights(config, num_labels=len(LABELS), seed=4)
    write_tf1_checkpoint(weights, tmp_path / "model.ckpt", scheme=scheme)
    loaded = load_checkpoint(tmp_path / "model.ckpt")
    # Same names as a sentence classifier: detection cannot tell, the user says --task.
    assert isinstance(detect_task(loaded), SequenceClassification)
    task = get_task("token_classification", loaded)
    data = convert_to_tflite_bytes(loaded, task=task)
    result = check_parity(data, loaded, task=task)
    assert result.passed and result.max_abs["logits"] <= 1e-4
    ids, mask = _ids(seed=5, seq=7)
    ids = ids % 50
    expected = reference_forward(loaded, ids, mask).token_logits
    got = open_backend(data, num_threads=1).run({"input_ids": ids, "attention_mask": mask,
                                                 "token_type_ids": np.zeros_like(ids)})["logits"]
    assert np.max(np.abs(got - expected)) <= 1e-4


def test_tf1_crf_transitions_are_an_unmapped_variable_error(tmp_path):
    config = AlbertConfig(vocab_size=50, embedding_size=16, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                          intermediate_size=24, max_position_embeddings=32, model_type="bert",
                          embedding_order="no_projection", num_hidden_groups=1)
    weights = random_weights(config, num_labels=3, seed=1)
    write_tf1_checkpoint(weights, tmp_path / "model.ckpt", scheme="bert",
                         extra_tensors={"crf/transitions": np.zeros((3, 3), np.float32)})
    with pytest.raises(CheckpointError, match="crf/transitions"):
        load_checkpoint(tmp_path / "model.ckpt")


def test_tf1_ner_cli_convert_with_task_and_labels_packs_a_token_classifier(tmp_path, capsys):
    from albert_edge.cli import main
    from albert_edge.runtime.pack import read_pack

    config = AlbertConfig(vocab_size=50, embedding_size=16, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                          intermediate_size=24, max_position_embeddings=32, model_type="bert",
                          embedding_order="no_projection", num_hidden_groups=1)
    write_tf1_checkpoint(random_weights(config, num_labels=len(LABELS), seed=6), tmp_path / "ckpt" / "model.ckpt",
                         scheme="bert")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + [f"w{i}" for i in range(46)]
    (tmp_path / "ckpt" / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    base = ["convert", str(tmp_path / "ckpt" / "model.ckpt"), "--task", "token_classification", "--formats", "tflite"]
    assert main(base + ["--out", str(tmp_path / "bad"), "--labels", "O,B-LOC"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--labels has 2 names" in err[0]
    assert main(base + ["--out", str(tmp_path / "out"), "--labels", ",".join(LABELS)]) == 0
    pack = read_pack(next((tmp_path / "out").glob("*.tflite")))
    assert pack.task == "token_classification" and list(pack.labels) == LABELS and pack.outputs == ("logits",)
