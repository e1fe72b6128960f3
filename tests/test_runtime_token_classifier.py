"""TokenClassifier end to end on a model fine-tuned here: checkpoint -> TFLite/ONNX -> entities.

A tiny BertForTokenClassification (H=32, 2 layers) is trained with torch for a few seconds on
English and Chinese sentences with people, cities and organisations (tests/support/ner_data.py, char-span
annotations turned into BIO tags through the tokenizer's offsets), saved with save_pretrained,
converted, quantized, and asked for entities on held-out sentences it never saw.
Measured on this machine: entity F1 1.00 (fp32 TFLite and ONNX) on held-out sentences.
Runtime: 17-25 s on an idle 2-core machine (training ~5 s, conversions, two dynamic-int8 quantizes), over
100 s when the machine is shared.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from albert_edge.tasks.entities import decode_tags, entity_counts, f1_from_counts
from tests.support.ner_data import LABELS, sentences

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tests.support.ner_model import (  # noqa: E402 - needs torch: after the importorskips
    MAX_SEQ_LEN,
    model_file,
    train_and_convert,
    training_set,
)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A fine-tuned HF checkpoint directory and its fp32 TFLite/ONNX conversions."""
    return train_and_convert(tmp_path_factory.mktemp("ner"))


def _unseen(data):
    seen = {text for text, _ in training_set()}
    return [(text, ents) for text, ents in data if text not in seen]


def held_out():
    """40 English sentences the training never saw (exact duplicates of training ones are dropped)."""
    return _unseen(sentences(seed=2, n=60))[:40]


def held_out_chinese():
    return _unseen(sentences(seed=12, n=60, chinese=True))[:30]


def entity_f1(clf, data) -> float:
    counts = np.zeros(3, dtype=np.int64)
    for text, gold in data:
        found = clf.predict(text)
        assert all(e.text == text[e.start:e.end] for e in found)
        counts += entity_counts([(e.start, e.end, e.label) for e in found], gold)
    return f1_from_counts(*counts)


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_fine_tuned_model_finds_held_out_entities_in_tflite_and_onnx(trained):
    from albert_edge.runtime import TokenClassifier

    _, out = trained
    tflite = TokenClassifier.from_file(model_file(out, ".tflite"), num_threads=1)
    onnx = TokenClassifier.from_file(model_file(out, ".onnx"), num_threads=1)
    assert tflite.labels == tuple(LABELS)
    assert entity_f1(tflite, held_out()) >= 0.95
    text = "Irene Walker works for Vandelay Imports in New York."
    assert text not in {t for t, _ in training_set()}
    found = tflite.predict(text)
    assert [(e.label, e.text) for e in found] == [("PER", "Irene Walker"), ("ORG", "Vandelay Imports"),
                                                  ("LOC", "New York")]
    assert [(e.start, e.end) for e in found] == [(0, 12), (23, 39), (43, 51)]
    assert all(0.5 < e.score <= 1.0 for e in found)
    assert [(e.label, e.start, e.end) for e in onnx.predict(text)] == [(e.label, e.start, e.end) for e in found]


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_fine_tuned_model_finds_held_out_entities_in_chinese_sentences(trained):
    from albert_edge.runtime import TokenClassifier

    _, out = trained
    clf = TokenClassifier.from_file(model_file(out, ".tflite"), num_threads=1)
    assert entity_f1(clf, held_out_chinese()) >= 0.95
    text = "刘洋在成都的华为工作。"
    assert text not in {t for t, _ in training_set()}
    assert [(e.label, e.text, e.start, e.end) for e in clf.predict(text)] == [
        ("PER", "刘洋", 0, 2), ("LOC", "成都", 3, 5), ("ORG", "华为", 6, 8)]


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_long_text_runs_in_overlapping_windows_and_entities_survive_the_seams(trained):
    from albert_edge.runtime import TokenClassifier

    _, out = trained
    clf = TokenClassifier.from_file(model_file(out, ".tflite"), num_threads=1, stride=8)
    parts = held_out()[:12]
    text, gold = "", []
    for sentence, ents in parts:
        if text:
            text += " "
        gold += [(s + len(text), e + len(text), t) for s, e, t in ents]
        text += sentence
    tokens = clf.tokenizer.tokenize_with_offsets(text)
    assert len(tokens) > 3 * clf.window  # several windows
    from albert_edge.runtime.token_classifier import window_starts

    ends = [s + clf.window for s in window_starts(len(tokens), clf.window, clf.stride)][:-1]
    crossing = [(s, e) for s, e, _ in gold
                if any(tokens[k - 1][2] <= e and tokens[k][1] >= s and s < tokens[k][1] for k in ends)]
    assert crossing  # an entity has tokens on both sides of a window's end
    found = clf.predict(text)
    assert all(e.text == text[e.start:e.end] for e in found)
    assert f1_from_counts(*entity_counts([(e.start, e.end, e.label) for e in found], gold)) >= 0.95
    # Mixed case and extra spaces: offsets still cut the text as typed.
    odd = "  IRENE   WALKER works for   HOOLI in  Oslo."
    assert [(e.label, e.text) for e in clf.predict(odd)] == [("PER", "IRENE   WALKER"), ("ORG", "HOOLI"),
                                                              ("LOC", "Oslo")]
    assert clf.predict("") == []


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_predict_cli_prints_entities_for_a_token_classification_file(trained, capsys):
    from albert_edge.cli import main

    _, out = trained
    assert main(["predict", "--json", str(model_file(out, ".tflite")), "Grace Lee moved to Berlin last year."]) == 0
    record = json.loads(capsys.readouterr().out.strip())
    assert [(e["label"], e["text"], e["start"], e["end"]) for e in record["entities"]] == [
        ("PER", "Grace Lee", 0, 9), ("LOC", "Berlin", 19, 25)]
    assert main(["predict", str(model_file(out, ".tflite")), "Grace Lee moved to Berlin last year."]) == 0
    assert capsys.readouterr().out.splitlines()[0].split("\t")[:3] == ["PER", "0", "9"]


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_predict_cli_bad_input_for_a_token_classifier_is_one_line(trained, tmp_path, capsys):
    from albert_edge.cli import main

    _, out = trained
    model = str(model_file(out, ".tflite"))
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("Grace Lee\tmoved to Berlin\n", encoding="utf-8")
    assert main(["predict", model, "--file", str(pairs)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "single texts" in err[0]
    assert main(["predict", "--stride", "99", model, "Grace Lee moved to Berlin."]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stride 99" in err[0]


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_other_runtimes_refuse_a_token_classification_pack_and_vice_versa(trained):
    from albert_edge.errors import ModelFileError
    from albert_edge.runtime import TextClassifier, TokenClassifier
    from albert_edge.runtime.pack import read_pack

    _, out = trained
    path = model_file(out, ".tflite")
    assert read_pack(path).task == "token_classification"
    with pytest.raises(ModelFileError, match="TextClassifier needs a sequence_classification"):
        TextClassifier.from_file(path)
    broken = path.read_bytes()[:1000]
    with pytest.raises(ModelFileError):
        TokenClassifier.from_bytes(broken, "cut.tflite")


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_quantize_judges_entity_f1_and_token_agreement_against_fp32(trained, tmp_path):
    from albert_edge.quantize.pipeline import quantize_checkpoint
    from albert_edge.runtime import TokenClassifier

    ckpt, _ = trained
    calib = tmp_path / "calib.txt"
    calib.write_text("\n".join(text for text, _ in sentences(seed=3, n=80)) + "\n", encoding="utf-8")
    report = quantize_checkpoint(ckpt, tmp_path / "q", calib, mode="dynamic", formats="tflite", max_seq_len=MAX_SEQ_LEN,
                                 seq_len=32,
                                 rounds=3, num_threads=1, max_drop=5.0, min_agreement=0.9)
    data = json.loads((tmp_path / "q" / "quantize_report.json").read_text())
    assert data["judge"]["task"] == "token_classification" and data["judge"]["labels"] == LABELS
    drift = {v["name"]: v["drift"] for v in data["variants"] if v.get("drift")}
    int8 = drift["dynamic_int8_col_sq"]  # --mode dynamic's TFLite variant for NER (decision 0201)
    assert int8["tokens"] > 100 and int8["entity_f1"] is not None and int8["entity_f1"] >= 0.9
    assert int8["agreement"] >= 0.95
    int8_file = tmp_path / "q" / "variants" / "dynamic_int8_col_sq.tflite"
    assert entity_f1(TokenClassifier.from_file(int8_file, num_threads=1), held_out()) >= 0.9
    assert report is not None


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_quantize_on_a_labelled_entity_file_reports_f1_against_gold_for_fp32_and_int8(trained, tmp_path):
    from albert_edge.quantize.pipeline import quantize_checkpoint

    ckpt, _ = trained
    calib = tmp_path / "calib.txt"
    calib.write_text("\n".join(text for text, _ in sentences(seed=3, n=40)) + "\n", encoding="utf-8")
    gold = tmp_path / "eval.jsonl"
    gold.write_text("\n".join(json.dumps({"text": t, "entities": [list(e) for e in ents]}) for t, ents in held_out()),
                    encoding="utf-8")
    quantize_checkpoint(ckpt, tmp_path / "q", calib, mode="dynamic", formats="tflite", max_seq_len=MAX_SEQ_LEN,
                        seq_len=32, rounds=2,
                        num_threads=1, eval_tsv=gold, max_drop=5.0, min_agreement=0.9)
    data = json.loads((tmp_path / "q" / "quantize_report.json").read_text())
    assert data["judge"]["kind"] == "labelled task file (.jsonl)" and data["judge"]["examples"] == 40
    drift = {v["name"]: v["drift"] for v in data["variants"] if v.get("drift")}
    assert drift["fp32"]["baseline_entity_f1"] >= 0.95 and drift["fp32"]["f1_drop"] == 0.0
    assert drift["dynamic_int8_col_sq"]["entity_f1"] >= 0.9


def test_labelled_entity_file_errors_name_the_file_and_line(tmp_path):
    from albert_edge.errors import DataError
    from albert_edge.tasks.entity_data import gold_tags, read_entity_jsonl

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "Oslo", "entities": [[0, 4, "LOC"]]}\n{"text": "Rome", "entities": [[0, 9, "LOC"]]}\n')
    with pytest.raises(DataError, match=r"bad.jsonl:2: entity \[0, 9, 'LOC'\]"):
        read_entity_jsonl(bad)
    bad.write_text("not json\n")
    with pytest.raises(DataError, match="bad.jsonl:1: not JSON"):
        read_entity_jsonl(bad)
    tokens = [("new", 0, 3), ("york", 4, 8), ("is", 9, 11), ("big", 12, 15)]
    assert gold_tags(tokens, [(0, 8, "LOC"), (12, 15, "X")], bioes=False) == ["B-LOC", "I-LOC", "O", "B-X"]
    assert gold_tags(tokens, [(0, 8, "LOC"), (12, 15, "X")], bioes=True) == ["B-LOC", "E-LOC", "O", "S-X"]


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_quantize_cli_refuses_a_broken_entity_file_in_one_line(trained, tmp_path, capsys):
    from albert_edge.cli import main

    ckpt, _ = trained
    calib = tmp_path / "calib.txt"
    calib.write_text("\n".join(text for text, _ in sentences(seed=3, n=40)) + "\n", encoding="utf-8")
    bad = tmp_path / "eval.jsonl"
    bad.write_text('{"text": "Oslo", "entities": [[0, 4, "CITY"]]}\n', encoding="utf-8")
    code = main(["quantize", str(ckpt), "--calib", str(calib), "--eval", str(bad), "--mode", "dynamic",
                 "--out", str(tmp_path / "q")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "eval.jsonl" in err[0] and "B-CITY" in err[0]
    assert not (tmp_path / "q").exists() or not any((tmp_path / "q").iterdir())


def test_bio_and_bioes_decoding():
    assert decode_tags(["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-ORG"]) == [(0, 2, "PER"), (3, 4, "LOC"),
                                                                          (4, 5, "LOC"), (5, 6, "ORG")]
    assert decode_tags(["S-PER", "B-LOC", "I-LOC", "E-LOC", "E-ORG", "U-X", "B-Y", "L-Y"]) == [
        (0, 1, "PER"), (1, 4, "LOC"), (4, 5, "ORG"), (5, 6, "X"), (6, 8, "Y")]
    assert decode_tags(["I-PER", "I-PER", "I-LOC", "O", "PER"]) == [(0, 2, "PER"), (2, 3, "LOC"), (4, 5, "PER")]
    assert decode_tags(["B-PER", "E-LOC"]) == [(0, 1, "PER"), (1, 2, "LOC")]
    assert decode_tags([]) == [] and f1_from_counts(0, 0, 0) == 1.0


def test_window_merge_takes_each_token_from_its_most_central_window():
    from albert_edge.runtime.token_classifier import merge_windows, window_starts

    assert window_starts(5, 10, 2) == [0]
    assert window_starts(25, 10, 4) == [0, 6, 12, 15]
    starts = window_starts(14, 8, 4)  # [0, 4, 6]
    logits = [np.full((8, 1), float(k)) for k in range(len(starts))]
    merged = merge_windows(14, starts, logits)[:, 0]
    # Margin = distance to the nearer window edge; ties keep the earlier window. Token 5: margin 2 in
    # window 0 (pos 5 of 8) > 1 in window 1; token 6: 2 in window 1 > 1 in window 0; token 9: 3 in window 2.
    assert merged.tolist() == [0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2]


def test_sentencepiece_albert_token_classifier_converts_and_cuts_entities_from_the_original_text(tmp_path):
    """Random weights (the predictions mean nothing); what is tested is the SentencePiece path: offsets
    through the pack's spiece.model, windows and the decoded spans cut from the text as typed."""
    import io

    import sentencepiece as spm

    from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint
    from albert_edge.runtime import TokenClassifier
    from tests.support.sentencepiece_corpus import albert_layout, training_sentences

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_sentences()), model_writer=buf, vocab_size=600, model_type="unigram",
        character_coverage=0.9995, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, minloglevel=2, num_threads=1)
    ckpt = tmp_path / "ckpt"
    torch.manual_seed(3)
    config = transformers.AlbertConfig(vocab_size=600, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=48, max_position_embeddings=64,
                                       num_labels=3, id2label={0: "O", 1: "B-X", 2: "I-X"},
                                       label2id={"O": 0, "B-X": 1, "I-X": 2})
    transformers.AlbertForTokenClassification(config).eval().save_pretrained(str(ckpt))
    (ckpt / "spiece.model").write_bytes(albert_layout(buf.getvalue()))
    convert_checkpoint(ckpt, tmp_path / "out", ConvertOptions(formats="tflite", max_seq_len=16))
    clf = TokenClassifier.from_file(model_file(tmp_path / "out", ".tflite"), num_threads=1, stride=4)
    text = "  The QUICK brown fox, said ``Zoë'', jumped over 1,000 lazy dogs in Ångström street again and again."
    tags = clf.tag(text)
    assert len(tags) > clf.window  # several windows
    assert [t.token for t in tags] == clf.tokenizer.tokenize(text)
    assert clf.tags_from_logits(*clf.token_logits(text)) == tags   # the bench's one-run path gives the same tags
    entities = clf.predict(text)
    assert entities and all(e.text == text[e.start:e.end] and e.text == e.text.strip() for e in entities)


@pytest.mark.slow  # fine-tunes the NER model (the module's trained fixture)
def test_bench_drift_judges_entity_f1_against_gold_and_tag_agreement(trained, tmp_path):
    from albert_edge.bench_latency.drift import measure_drift

    _, out = trained
    gold = tmp_path / "eval.jsonl"
    gold.write_text("\n".join(json.dumps({"text": t, "entities": [list(e) for e in ents]}) for t, ents in held_out()),
                    encoding="utf-8")
    entries = measure_drift([("fp32", model_file(out, ".tflite")), ("onnx", model_file(out, ".onnx"))], "fp32", gold,
                            threads=1)
    by = {e["variant"]: e for e in entries}
    assert by["fp32"]["f1_against"] == "gold" and by["fp32"]["examples"] == 40 and by["fp32"]["tokens"] > 300
    assert by["fp32"]["entity_f1"] >= 0.95 and by["fp32"]["agreement"] == 1.0
    assert by["onnx"]["agreement"] >= 0.99 and abs(by["onnx"]["entity_f1"] - by["fp32"]["entity_f1"]) <= 0.02
    texts = tmp_path / "texts.txt"
    texts.write_text("\n".join(t for t, _ in held_out()) + "\n", encoding="utf-8")
    [unlabelled] = measure_drift([("fp32", model_file(out, ".tflite"))], "fp32", texts, threads=1)
    assert unlabelled["f1_against"] == "baseline entities" and unlabelled["entity_f1"] == 1.0
