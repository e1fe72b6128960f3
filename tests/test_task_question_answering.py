"""Question answering: checkpoints in real formats -> TFLite/ONNX start/end logits, and the span search.

HF checkpoints are written by transformers' own ``AlbertForQuestionAnswering`` /
``BertForQuestionAnswering.save_pretrained`` (random init, seeded); the TF1 ones by
``write_tf1_checkpoint`` with the variable names of BERT ``run_squad.py`` / ALBERT
``run_squad_v1.py`` (``cls/squad/output_weights`` [2, H], ``cls/squad/output_bias``, BERT's unused
pooler kept). Parity: fp32 start/end logits within 1e-4 of the float64 numpy reference and of
transformers' torch forward on the same weights, with question/context token types.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from albert_edge.convert import check_parity, convert_to_tflite_bytes, onnx_model_bytes
from albert_edge.errors import CheckpointError, ConversionError, DataError
from albert_edge.model import (
    AlbertConfig,
    albert_tiny_zh_config,
    albert_tiny_zh_google_config,
    load_checkpoint,
)
from albert_edge.model.reference import reference_forward
from albert_edge.model.tf1 import write_tf1_checkpoint
from albert_edge.model.weights import AlbertWeights, random_weights
from albert_edge.runtime.backends import open_backend
from albert_edge.tasks import (
    QuestionAnswering,
    SequenceClassification,
    detect_task,
    get_task,
)
from albert_edge.tasks.qa_spans import (
    QAWindow,
    best_span,
    encode_windows,
    exact_match,
    max_context_masks,
    normalize_answer,
    span_token_f1,
    token_f1,
    window_starts,
)

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.support.tiny_hf import saved_checkpoint, tiny_hf_model  # needs torch: after the importorskips

SMALL = dict(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=24,
             max_position_embeddings=32)


def _hf_model(kind: str):
    return tiny_hf_model(kind, "QuestionAnswering")


def _pair_inputs(seed: int = 1, batch: int = 2, seq: int = 11, vocab: int = 60):
    """[CLS] question [SEP] context [SEP]-shaped rows: token type 1 from position 5, row 1 padded."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, vocab, size=(batch, seq))
    mask = np.ones_like(ids)
    mask[1, 8:] = 0
    types = np.zeros_like(ids)
    types[:, 5:] = 1
    types[1, 8:] = 0
    return ids, mask, types


def _torch_logits(model, ids, mask, types) -> np.ndarray:
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(mask), token_type_ids=torch.tensor(types))
    return np.stack([out.start_logits.double().numpy(), out.end_logits.double().numpy()], axis=-1)


def _run(data: bytes, ids, mask, types) -> np.ndarray:
    out = open_backend(data, num_threads=1).run({"input_ids": ids.astype(np.int32), "attention_mask": mask.astype(np.int32),
                                                 "token_type_ids": types.astype(np.int32)})
    return np.stack([out["start_logits"], out["end_logits"]], axis=-1)


@pytest.fixture(scope="module", params=["albert", "bert"])
def hf_checkpoint(request, tmp_path_factory):
    return saved_checkpoint(_hf_model(request.param), tmp_path_factory.mktemp(f"hf_{request.param}_qa"))


def test_hf_question_answering_checkpoint_is_detected_with_a_span_head_and_no_pooler(hf_checkpoint):
    path, _ = hf_checkpoint
    weights = load_checkpoint(path)
    assert weights.has_span_head and not weights.has_pooler and weights.num_labels is None
    assert weights.tensors["qa_outputs.kernel"].shape == (32, 2)
    assert isinstance(detect_task(weights, path), QuestionAnswering)
    with pytest.raises(ConversionError, match="classifier head"):
        SequenceClassification().check_weights(weights)


def test_reference_span_logits_equal_transformers(hf_checkpoint):
    path, model = hf_checkpoint
    weights = load_checkpoint(path)
    ids, mask, types = _pair_inputs()
    ours = reference_forward(weights, ids, mask, types).span_logits
    assert ours.shape == (2, 11, 2)
    real = mask.astype(bool)
    assert np.max(np.abs(ours[real] - _torch_logits(model, ids, mask, types)[real])) <= 1e-4


def test_hf_question_answering_converts_with_parity_against_reference_and_transformers(hf_checkpoint):
    path, model = hf_checkpoint
    weights = load_checkpoint(path)
    task = get_task(None, weights, path)
    ids, mask, types = _pair_inputs(seed=3)
    theirs = _torch_logits(model, ids, mask, types)
    real = mask.astype(bool)
    for data in (convert_to_tflite_bytes(weights, task=task), onnx_model_bytes(weights, task=task)):
        result = check_parity(data, weights, task=task)
        assert result.passed, result.failure_line()
        assert result.max_abs["start_logits"] <= 1e-4 and result.max_abs["end_logits"] <= 1e-4
        got = _run(data, ids, mask, types)
        assert got.shape == (2, 11, 2)
        assert np.max(np.abs(got[real] - theirs[real])) <= 1e-4


def _tf1_config(scheme: str) -> AlbertConfig:
    if scheme == "bert":
        return AlbertConfig(model_type="bert", embedding_size=16, embedding_order="no_projection", num_hidden_groups=2,
                            **SMALL)
    if scheme == "google":
        return albert_tiny_zh_google_config().with_changes(embedding_size=8, **SMALL)
    return albert_tiny_zh_config().with_changes(embedding_size=8, **SMALL)


@pytest.mark.parametrize("scheme", ["bert", "google", "brightmart"])
def test_tf1_run_squad_checkpoint_converts_as_question_answering(tmp_path, scheme):
    # run_squad / run_squad_v1 keep BERT's pooler (built, never used by the span head).
    weights = random_weights(_tf1_config(scheme), num_labels=None, seed=4, span_head=True)
    write_tf1_checkpoint(weights, tmp_path / "model.ckpt", scheme=scheme)
    loaded = load_checkpoint(tmp_path / "model.ckpt")
    assert loaded.has_span_head and loaded.ignored == ()
    np.testing.assert_array_equal(loaded.tensors["qa_outputs.kernel"], weights.tensors["qa_outputs.kernel"])
    task = detect_task(loaded)
    assert isinstance(task, QuestionAnswering)
    ids, mask, types = _pair_inputs(seed=5, seq=9, vocab=50)
    expected = reference_forward(loaded, ids, mask, types).span_logits
    for data in (convert_to_tflite_bytes(loaded, task=task), onnx_model_bytes(loaded, task=task)):
        result = check_parity(data, loaded, task=task)
        assert result.passed and max(result.max_abs["start_logits"], result.max_abs["end_logits"]) <= 1e-4
        assert np.max(np.abs(_run(data, ids, mask, types) - expected)) <= 1e-4


@pytest.mark.parametrize("scheme", ["bert", "google"])
def test_tf1_run_squad_logits_equal_transformers_on_the_same_weights(tmp_path, scheme):
    """The TF1 checkpoint's export against transformers' QA model holding the same weights: the
    weights go TF1 -> canonical -> HF (write_hf_checkpoint), transformers reads them."""
    from albert_edge.model.hf import write_hf_checkpoint

    weights = random_weights(_tf1_config(scheme), num_labels=None, seed=6, span_head=True)
    write_tf1_checkpoint(weights, tmp_path / "tf1" / "model.ckpt", scheme=scheme)
    loaded = load_checkpoint(tmp_path / "tf1" / "model.ckpt")
    head_only = {k: v for k, v in loaded.tensors.items() if not k.startswith("pooler.")}
    write_hf_checkpoint(AlbertWeights(loaded.config, head_only, loaded.scheme, source=loaded.source), tmp_path / "hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"][0].endswith("ForQuestionAnswering") and config["num_labels"] == 2
    cls = transformers.AlbertForQuestionAnswering if scheme == "google" else transformers.BertForQuestionAnswering
    model = cls.from_pretrained(str(tmp_path / "hf")).eval()
    ids, mask, types = _pair_inputs(seed=7, seq=9, vocab=50)
    theirs = _torch_logits(model, ids, mask, types)
    got = _run(convert_to_tflite_bytes(loaded, task=QuestionAnswering()), ids, mask, types)
    real = mask.astype(bool)
    assert np.max(np.abs(got[real] - theirs[real])) <= 1e-4


def test_albert_run_squad_v2_head_is_refused_by_name(tmp_path):
    config = albert_tiny_zh_google_config().with_changes(embedding_size=8, **SMALL)
    h = config.hidden_size
    v2 = {"start_logits/dense/kernel": np.zeros((h, 1)), "start_logits/dense/bias": np.zeros(1),
          "end_logits/dense_0/kernel": np.zeros((2 * h, h)), "end_logits/dense_0/bias": np.zeros(h),
          "end_logits/LayerNorm/gamma": np.ones(h), "end_logits/LayerNorm/beta": np.zeros(h),
          "end_logits/dense_1/kernel": np.zeros((h, 1)), "end_logits/dense_1/bias": np.zeros(1),
          "answer_class/dense_0/kernel": np.zeros((2 * h, h)), "answer_class/dense_0/bias": np.zeros(h),
          "answer_class/dense_1/kernel": np.zeros((h, 1))}
    write_tf1_checkpoint(random_weights(config, num_labels=None, seed=1), tmp_path / "model.ckpt", scheme="google",
                         extra_tensors=v2)
    with pytest.raises(CheckpointError, match="run_squad_v2 head .* not supported"):
        load_checkpoint(tmp_path / "model.ckpt")


def test_a_half_span_head_names_the_missing_variable(tmp_path):
    config = _tf1_config("bert")
    write_tf1_checkpoint(random_weights(config, num_labels=None, seed=1), tmp_path / "model.ckpt", scheme="bert",
                         extra_tensors={"cls/squad/output_weights": np.zeros((2, 16))})
    with pytest.raises(CheckpointError, match="missing variable cls/squad/output_bias"):
        load_checkpoint(tmp_path / "model.ckpt")


def test_question_answering_needs_a_span_head():
    weights = random_weights(_tf1_config("bert"), num_labels=2, seed=1)
    with pytest.raises(ConversionError, match="cls/squad/output_weights"):
        get_task("question_answering", weights).check_weights(weights)


def test_tf1_qa_cli_convert_packs_start_and_end_logits(tmp_path):
    from albert_edge.cli import main
    from albert_edge.runtime.pack import read_pack

    write_tf1_checkpoint(random_weights(_tf1_config("bert"), num_labels=None, seed=6, span_head=True),
                         tmp_path / "ckpt" / "model.ckpt", scheme="bert")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + [f"w{i}" for i in range(46)]
    (tmp_path / "ckpt" / "vocab.txt").write_text("\n".join(words) + "\n", encoding="utf-8")
    assert main(["convert", str(tmp_path / "ckpt" / "model.ckpt"), "--formats", "tflite,onnx", "--out",
                 str(tmp_path / "out")]) == 0
    for path in (tmp_path / "out").iterdir():
        if path.suffix in (".tflite", ".onnx"):
            pack = read_pack(path)
            assert pack.task == "question_answering" and pack.labels is None
            assert pack.outputs == ("start_logits", "end_logits")


# ------------------------------------------------------------------------------ span search and metrics
def _window(n: int, offset: int = 1, first: int = 0, mask=None) -> QAWindow:
    return QAWindow(tuple(range(n + offset + 1)), (0,) * (n + offset + 1), offset, first, n,
                    np.ones(n, bool) if mask is None else np.asarray(mask))


def test_best_span_keeps_start_before_end_inside_the_context_and_within_the_length_limit():
    w = _window(5, offset=3)  # positions 0-2: [CLS] q [SEP]; 3-7 context; 8 [SEP]
    start = np.array([9.0, 9, 9, 0, 1, 0, 5, 0, 9])
    end = np.array([9.0, 9, 9, 0, 6, 0, 0, 0, 9])
    span = best_span([(start, end)], [w])
    # The question positions and the final [SEP] score highest but are not context; the best
    # start (position 6) lies after the best end (4), so start <= end picks (4, 4).
    assert (span.start, span.end) == (1, 1)
    end[7] = 3.0
    assert (best_span([(start, end)], [w]).start, best_span([(start, end)], [w]).end) == (3, 4)
    assert best_span([(start, end)], [w], max_answer_tokens=1).end == 1
    assert 0 < span.score <= 1


def test_best_span_only_starts_where_the_window_is_the_tokens_most_central():
    starts = window_starts(10, 6, 4)
    assert starts == [0, 2, 4]
    masks = max_context_masks(10, starts, 6)
    owner = np.full(10, -1)
    for k, (s, m) in enumerate(zip(starts, masks)):
        owner[s:s + 6][m] = k
    assert (owner >= 0).all()  # every token is some window's most central
    assert sum(int(m.sum()) for m in masks) == 10  # ...and exactly one window's
    w0 = _window(6, first=0, mask=masks[0])
    w1 = _window(6, first=2, mask=masks[1])
    logits0 = (np.array([0, 0, 0, 0, 0, 9.0, 0, 0]), np.array([0, 0, 0, 0, 0, 9.0, 0, 0]))
    logits1 = (np.zeros(8), np.zeros(8))
    span = best_span([logits0, logits1], [w0, w1])
    # Token 4 (position 5 of window 0) is owned by a later window, so window 0 may not start there.
    assert not masks[0][4] and (span.start, span.end) != (4, 4)


def test_encode_windows_builds_question_context_pairs_with_token_types():
    class Tok:
        cls_id, sep_id = 1, 2

        def convert_tokens_to_ids(self, tokens):
            return [100 + int(t) for t in tokens]

    context = [(str(i), i, i + 1) for i in range(12)]
    windows = encode_windows(Tok(), [7, 8], context, max_seq_len=10, stride=2)  # 5 context tokens each
    assert [w.first for w in windows] == [0, 3, 6, 7]
    w = windows[1]
    assert w.input_ids == (1, 7, 8, 2, 103, 104, 105, 106, 107, 2)
    assert w.token_type_ids == (0, 0, 0, 0, 1, 1, 1, 1, 1, 1) and w.offset == 4 and w.length == 5


def test_squad_normalisation_exact_match_and_f1_including_chinese():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffel tower"
    assert exact_match("the Eiffel Tower", ["Eiffel Tower."]) == 1.0
    assert token_f1("Eiffel Tower in Paris", ["Eiffel Tower"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("北京大学", ["北京"]) == pytest.approx(2 * 0.5 / 1.5)  # one token per ideograph
    assert exact_match("北京。", ["北京"]) == 1.0 and token_f1("", ["x"]) == 0.0
    assert span_token_f1((2, 5), (4, 7)) == 0.5 and span_token_f1((1, 1), (2, 2)) == 0.0


def test_qa_jsonl_errors_name_the_file_and_line(tmp_path):
    from albert_edge.tasks.qa_data import read_qa_jsonl

    bad = tmp_path / "qa.jsonl"
    ok = {"question": "Who?", "context": "Ann went home.", "answers": [{"text": "Ann", "answer_start": 0}]}
    bad.write_text(json.dumps(ok) + "\n" + json.dumps({**ok, "answers": [{"text": "Ann", "answer_start": 4}]}))
    with pytest.raises(DataError, match=r"qa.jsonl:2: answer 'Ann' is not at offset 4"):
        read_qa_jsonl(bad)
    bad.write_text(json.dumps(ok) + "\n" + json.dumps({"question": "Who?", "context": "Bo ran."}) + "\n")
    with pytest.raises(DataError, match="qa.jsonl:2: question without answers"):
        read_qa_jsonl(bad)
    bad.write_text(json.dumps({"question": "Who?", "context": "Ann ran.", "answers": {"text": ["Ann"],
                                                                                      "answer_start": [0]}}))
    assert read_qa_jsonl(bad)[0].answers == (("Ann", 0),)
    bad.write_text('{"question": "Who?"}\n')
    with pytest.raises(DataError, match="qa.jsonl:1: expected"):
        read_qa_jsonl(bad)


def _rows(*blocks):
    """judged_values rows ([position, start, end]) for samples given as (start list, end list)."""
    return np.concatenate([np.stack([np.arange(len(s)), s, e], axis=1).astype(np.float64) for s, e in blocks])


def test_drift_on_plain_texts_compares_each_texts_best_span_with_the_baselines():
    from albert_edge.tasks.question_answering import qa_drift

    base = _rows(([0, 1, 5, 0, 0, 0], [0, 0, 0, 5, 0, 0]), ([0, 5, 0, 0, 0], [0, 5, 0, 0, 0]))
    same = qa_drift(base, base, None)
    assert (same.agreement, same.exact_match, same.f1, same.f1_drop, same.against) == (1.0, 1.0, 1.0, 0.0,
                                                                                       "baseline spans")
    moved = base.copy()
    moved[3, 2], moved[4, 2] = 0.0, 6.0  # text 0's best end moves one token right: span (1, 2) -> (1, 3)
    d = qa_drift(moved, base, None)
    assert d.agreement == 0.5 and d.exact_match == 0.5 and d.f1 == pytest.approx((2 * (2 / 3) / (5 / 3) + 1) / 2)
    assert d.f1_drop == pytest.approx(100 * (1 - d.f1)) and d.max_abs_logit == 6.0


def test_drift_on_questions_regroups_windows_and_scores_against_gold():
    from albert_edge.tasks.question_answering import JudgedWindow, qa_drift

    context = "Ann met Bo in Oslo"
    tokens = (("ann", 0, 3), ("met", 4, 7), ("bo", 8, 10), ("in", 11, 13), ("oslo", 14, 18))
    # Question 0 in two windows (tokens 0-2 and 2-4, question of one token: offset 3), question 1 in one.
    w0 = QAWindow((0,) * 7, (0,) * 7, 3, 0, 3, np.array([True, True, False]))
    w1 = QAWindow((0,) * 7, (0,) * 7, 3, 2, 3, np.array([True, True, True]))
    w2 = QAWindow((0,) * 9, (0,) * 9, 3, 0, 5, np.ones(5, bool))
    judged = np.empty(3, dtype=object)
    judged[:] = [JudgedWindow(0, w0, context, tokens, ("Oslo",)), JudgedWindow(0, w1, context, tokens, ("Oslo",)),
                 JudgedWindow(1, w2, context, tokens, ("Ann",))]
    oslo = ([0, 0, 0, 0, 0, 9, 0], [0, 0, 0, 0, 0, 9, 0])  # window 1: token 4 = "oslo"
    none = ([0] * 7, [0] * 7)
    ann = ([0, 0, 0, 9, 0, 0, 0, 0, 0], [0, 0, 0, 9, 0, 0, 0, 0, 0])
    base = _rows(none, oslo, ann)
    d = qa_drift(base, base, judged)
    assert (d.examples, d.exact_match, d.f1, d.baseline_f1, d.f1_drop, d.against) == (2, 1.0, 1.0, 1.0, 0.0, "gold")
    wrong = _rows(none, ([0, 0, 0, 0, 9, 0, 0], [0, 0, 0, 0, 0, 9, 0]), ann)  # "in Oslo"
    d = qa_drift(wrong, base, judged)
    assert d.agreement == 0.5 and d.exact_match == 0.5 and d.f1 == pytest.approx((2 / 3 + 1) / 2)
    assert d.f1_drop == pytest.approx(100 * (1 - d.f1))
