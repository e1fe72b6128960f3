"""Tasks as objects: the registry, what each task declares, its drift metrics and the pack's task_config."""

from __future__ import annotations

import json

import numpy as np
import pytest

from albert_edge.errors import CheckpointError, ConversionError, ModelFileError
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.sentence_transformers import read_pooling
from albert_edge.quantize.auto import Budget, budget_failures, choose
from albert_edge.runtime.pack import ModelPack, attach_tflite_pack, pack_from_members, read_pack_bytes
from albert_edge.tasks import (
    TASK_NAMES,
    FeatureExtraction,
    SequenceClassification,
    detect_task,
    get_task,
    task_of_pack,
)
from albert_edge.tasks.base import uses_weight
from albert_edge.tasks.feature_extraction import embedding_drift, l2_normalize, neighbour_agreement, pool

SMALL = AlbertConfig(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=24, max_position_embeddings=32)
VOCAB = "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"]).encode()
FAKE_FLATBUFFER = b"\x1c\x00\x00\x00TFL3" + b"\x00" * 40


def test_registry_names_every_task_once():
    assert TASK_NAMES == ("question_answering", "token_classification", "sequence_regression",
                          "sequence_classification", "feature_extraction")


def test_quantize_console_table_shows_each_tasks_own_drift_columns():
    """The table used to read classification fields and raised AttributeError for QA and NER drift."""
    from albert_edge.quantize.pipeline import QuantizeReport, VariantResult
    from albert_edge.tasks.question_answering import QADrift
    from albert_edge.tasks.sequence_classification import classification_drift
    from albert_edge.tasks.token_classification import TokenDrift

    budget = Budget(0.5, 0.99, None, 0.95, 0.995, 0.999, 0.1)
    logits = np.array([[1.0, 0.0], [0.0, 1.0]])
    cases = {"acc": classification_drift(logits, logits, np.array([0, 1])),
             "cos mean": embedding_drift(np.eye(3), np.eye(3)),
             "ent F1": TokenDrift(4, 30, 0.9, 0.2, 0.01, 0.8, 0.9, 10.0),
             "EM": QADrift(10, 0.9, 0.8, 0.85, None, None, 15.0, "baseline answers", 0.1, 0.01)}
    for header, drift in cases.items():
        variant = VariantResult("dynamic_int8", "tflite")
        variant.drift = drift
        table = QuantizeReport("ckpt", "dynamic", budget, {}, {}, {}, [variant]).table()
        assert header in table.splitlines()[0]
        assert len(table.splitlines()[2].split()) >= 3 + len(drift.table_columns())
    from albert_edge.tasks.metrics import agreement_lower_bound

    bound = np.floor(agreement_lower_bound(0.9, 30, 0.95) * 1000) / 1000
    assert cases["ent F1"].relax_hints(budget) == ["--max-drop 10", f"--min-agreement {bound:g} (or judge on more --eval rows)"]
    assert cases["cos mean"].relax_hints(budget) == []


def test_classifier_head_is_detected_as_sequence_classification_and_headless_as_feature_extraction():
    assert isinstance(detect_task(random_weights(SMALL, num_labels=3)), SequenceClassification)
    task = detect_task(random_weights(SMALL, num_labels=None))
    assert isinstance(task, FeatureExtraction) and task.pooling == "none"


def test_classification_declares_outputs_shapes_and_head_weights():
    weights = random_weights(SMALL, num_labels=3)
    task = SequenceClassification()
    assert task.outputs() == ("logits",)
    assert task.output_shapes(SMALL, weights) == {"logits": ["batch", 3]}
    assert uses_weight(task, "classifier.kernel") and uses_weight(task, "pooler.bias")
    assert uses_weight(task, "encoder.group0.inner0.ffn.output.kernel")
    assert task.tolerances["fp32"]["logits"] == 1e-4


@pytest.mark.parametrize("pooling,in_graph,outputs", [
    ("none", True, ("last_hidden_state", "pooled_output")),
    ("mean", True, ("sentence_embedding",)),
    ("max", False, ("last_hidden_state",)),
])
def test_feature_extraction_outputs_follow_pooling(pooling, in_graph, outputs):
    task = FeatureExtraction(pooling, pooling_in_graph=in_graph)
    assert task.outputs() == outputs
    assert uses_weight(task, "pooler.kernel") == (pooling == "none")
    assert not uses_weight(task, "classifier.kernel")


def test_classification_on_a_headless_checkpoint_names_the_checkpoint():
    weights = random_weights(SMALL, num_labels=None)
    with pytest.raises(ConversionError, match="classifier head"):
        SequenceClassification().check_weights(weights)


def test_unknown_task_name_is_refused():
    with pytest.raises(ConversionError, match="no_such_task"):
        get_task("no_such_task")


def test_normalize_without_pooling_is_refused():
    with pytest.raises(ConversionError, match="normalize"):
        FeatureExtraction("none", normalize=True)


# ------------------------------------------------------------------ pooling and drift metrics


def test_pooling_matches_sentence_transformers_formulas():
    hidden = np.array([[[1.0, 2.0], [3.0, -4.0], [100.0, 100.0]]])
    mask = np.array([[1, 1, 0]])
    np.testing.assert_allclose(pool(hidden, mask, "mean"), [[2.0, -1.0]])
    np.testing.assert_allclose(pool(hidden, mask, "max"), [[3.0, 2.0]])
    np.testing.assert_allclose(pool(hidden, mask, "cls"), [[1.0, 2.0]])
    np.testing.assert_allclose(np.linalg.norm(l2_normalize(np.array([[3.0, 4.0]])), axis=1), [1.0])


def test_embedding_drift_is_one_for_identical_vectors_and_catches_a_rotated_text():
    rng = np.random.default_rng(0)
    base = rng.standard_normal((12, 8))
    same = embedding_drift(base * 2.0, base)
    assert same.min_cosine == pytest.approx(1.0) and same.neighbour_agreement == 1.0
    moved = base.copy()
    moved[3] = -moved[3]
    d = embedding_drift(moved, base)
    assert d.min_cosine == pytest.approx(-1.0) and d.mean_cosine < 0.9


def test_neighbour_agreement_drops_when_neighbours_are_shuffled():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((20, 16))
    assert neighbour_agreement(rng.standard_normal((20, 16)), base, k=3) < 0.5


def test_embedding_budget_rejects_low_cosine_and_choose_logs_the_summary():
    from albert_edge.quantize.pipeline import VariantResult

    rng = np.random.default_rng(2)
    base = rng.standard_normal((10, 8))
    good = VariantResult("dynamic_int8", "tflite", size_bytes=1, ratio_vs_fp32=0.4,
                         drift=embedding_drift(base + 1e-4 * rng.standard_normal(base.shape), base))
    bad = VariantResult("int8_full", "tflite", size_bytes=1, ratio_vs_fp32=0.3,
                        drift=embedding_drift(base + 0.5 * rng.standard_normal(base.shape), base))
    budget = Budget(min_cosine=0.995, min_mean_cosine=0.999)
    assert any("min cosine" in reason for reason in budget_failures(bad, budget))
    chosen, log = choose([bad, good], budget)
    assert chosen is good and "cosine mean" in " ".join(log)


def test_mean_cosine_is_judged_by_its_lower_confidence_bound():
    """A judge-set mean that clears 0.999 by less than its own noise does not pass (as agreement's Wilson bound)."""
    from albert_edge.tasks.feature_extraction import EmbeddingDrift
    from albert_edge.tasks.metrics import normal_quantile

    budget = Budget(min_cosine=0.995, min_mean_cosine=0.999, confidence=0.95)
    few = EmbeddingDrift(50, 0.9991, 0.996, 1.0, 5, cosine_sd=0.002)
    bound = 0.9991 - normal_quantile(0.95) * 0.002 / np.sqrt(50)
    assert few.mean_cosine_bound(0.95) == pytest.approx(bound) and bound < 0.999
    [reason] = few.budget_failures(budget)
    assert f"lower bound {bound:.5f}" in reason and "over 50 texts" in reason
    assert few.relax_hints(budget) == [f"--min-mean-cosine {np.floor(bound * 1e4) / 1e4:g} (or judge on more texts)"]
    many = EmbeddingDrift(5000, 0.9991, 0.996, 1.0, 5, cosine_sd=0.002)
    assert many.budget_failures(budget) == []
    # The sd is the per-text cosines' (ddof 1): one text far off widens the bound.
    from albert_edge.tasks.feature_extraction import cosine_rows

    rng = np.random.default_rng(5)
    base = rng.standard_normal((40, 8))
    moved = base + 1e-2 * rng.standard_normal(base.shape)
    d = embedding_drift(moved, base)
    assert d.cosine_sd == pytest.approx(np.std(cosine_rows(moved, base), ddof=1))
    moved[0] = -base[0]
    assert embedding_drift(moved, base).mean_cosine_bound() < d.mean_cosine_bound() - 0.05


# ------------------------------------------------------------------ the pack


def _pack(**kw) -> ModelPack:
    base = dict(tokenizer_type="wordpiece", tokenizer_asset=VOCAB, labels=None, task="feature_extraction",
                outputs=("sentence_embedding",), max_seq_len=16)
    base.update(kw)
    return ModelPack(**base)


def test_pack_records_pooling_and_reads_it_back_as_the_task():
    task = FeatureExtraction("mean", normalize=True)
    pack = _pack(task_config=task.settings())
    again = read_pack_bytes(attach_tflite_pack(FAKE_FLATBUFFER, pack), "m.tflite")
    assert again.task_config == {"pooling": "mean", "normalize": True, "pooling_in_graph": True}
    assert again.task_object() == task


def test_pack_without_task_config_reads_as_the_task_defaults():
    pack = _pack(outputs=("last_hidden_state", "pooled_output"))
    settings = json.loads(pack.members()["albert_edge.json"])
    assert "task_config" not in settings
    assert read_pack_bytes(attach_tflite_pack(FAKE_FLATBUFFER, pack)).task_object() == FeatureExtraction()


def test_pack_with_bad_pooling_is_one_model_file_error_naming_the_file():
    members = _pack(task_config={"pooling": "mean"}).members()
    members["albert_edge.json"] = members["albert_edge.json"].replace(b'"mean"', b'"mode"')
    with pytest.raises(ModelFileError, match=r"m\.tflite: pack task_config"):
        pack_from_members(members, "m.tflite")


def test_pack_with_unknown_task_names_the_task():
    with pytest.raises(ModelFileError, match="translation"):
        task_of_pack("translation", {}, "m.onnx")


# ------------------------------------------------------------------ sentence-transformers folders


def _st_folder(tmp_path, modules, pooling):
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "1_Pooling").mkdir(exist_ok=True)
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    return tmp_path


ST = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
      {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
NORMALIZE = {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}
MEAN = {"word_embedding_dimension": 16, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
        "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False}


def test_sentence_transformers_folder_gives_mean_pooling_and_normalize(tmp_path):
    found = read_pooling(_st_folder(tmp_path, [*ST, NORMALIZE], MEAN))
    assert (found.mode, found.normalize) == ("mean", True)


def test_sentence_transformers_cls_pooling_without_normalize(tmp_path):
    found = read_pooling(_st_folder(tmp_path, ST, {**MEAN, "pooling_mode_mean_tokens": False,
                                                   "pooling_mode_cls_token": True}))
    assert (found.mode, found.normalize) == ("cls", False)


def test_plain_folder_has_no_pooling(tmp_path):
    assert read_pooling(tmp_path) is None


def test_dense_module_is_refused_by_name(tmp_path):
    dense = {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}
    with pytest.raises(CheckpointError, match="models.Dense"):
        read_pooling(_st_folder(tmp_path, [*ST, dense], MEAN))


def test_sqrt_len_pooling_is_refused(tmp_path):
    with pytest.raises(CheckpointError, match="mean_sqrt_len"):
        read_pooling(_st_folder(tmp_path, ST, {**MEAN, "pooling_mode_mean_sqrt_len_tokens": True}))


def test_pooling_path_outside_the_folder_is_refused(tmp_path):
    modules = [ST[0], {**ST[1], "path": "../elsewhere"}]
    with pytest.raises(CheckpointError, match="not a folder inside"):
        read_pooling(_st_folder(tmp_path, modules, MEAN))


def test_corrupt_modules_json_names_the_file(tmp_path):
    (tmp_path / "modules.json").write_text("[{")
    with pytest.raises(CheckpointError, match="modules.json"):
        read_pooling(tmp_path)


# ------------------------------------------------------------------ a new task needs no converter change


class _PerTokenLogits(SequenceClassification):
    """A token-classification-shaped head defined only here: the classifier applied to every position."""

    name = "per_token_logits_test"
    head_prefixes = ("classifier.",)
    tolerances = {"fp32": {"token_logits": 1e-4, "hidden": 1e-4}}

    def __init__(self, weights) -> None:
        self.weights = weights  # the judge below needs the head weights

    required_weights = ("classifier.kernel", "classifier.bias")

    def outputs(self):
        return ("token_logits",)

    def output_shapes(self, config, weights):
        return {"token_logits": ["batch", "sequence", self.num_labels(weights)]}

    def head(self, ops, sequence, attention_mask):
        return {"token_logits": ops.named(ops.token_dense(sequence, "classifier"), "token_logits")}

    def parity_expected(self, reference, attention_mask):
        kernel = self.weights.tensors["classifier.kernel"].astype(np.float64)
        return {"token_logits": reference.last_hidden_state @ kernel + self.weights.tensors["classifier.bias"],
                "hidden": reference.last_hidden_state}

    parity_required = ("token_logits",)


def test_a_new_task_converts_and_passes_parity_without_touching_the_converter():
    from albert_edge.convert import check_parity, convert_to_tflite_bytes, onnx_model_bytes

    weights = random_weights(SMALL, num_labels=4, seed=2)
    task = _PerTokenLogits(weights)
    for data in (convert_to_tflite_bytes(weights, task=task), onnx_model_bytes(weights, task=task)):
        result = check_parity(data, weights, task=task)
        assert result.passed and result.max_abs["token_logits"] <= 1e-4 and result.max_abs_logit is None


def test_an_eval_file_in_a_format_the_task_has_not_is_one_data_error():
    """bench drift and --seq-len real read a .jsonl only through the task's own labelled format."""
    from albert_edge.bench_latency.drift import eval_samples
    from albert_edge.errors import DataError

    with pytest.raises(DataError, match=r"x\.jsonl: task feature_extraction has no labelled eval format"):
        eval_samples(FeatureExtraction("mean"), "x.jsonl", tokenizer=None, max_seq_len=16)
