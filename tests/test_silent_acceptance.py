"""Data the readers used to accept without a word (issue #27, causes 14 and 17).

A negative QA ``answer_start`` sliced from the context's end and could pass the offset check;
overlapping NER gold spans lost one entity to BIO tagging; bench's NER judge scored gold types the
model cannot tag; device logs with negative or 1e308 µs became report rows; a garbled timings line
was reported without its line.
"""

from __future__ import annotations

import json
import re

import pytest
from tests.support.benchmark_logs import PLAIN_LOG, PROFILED_LOG

from albert_edge.bench_latency.device import parse_benchmark_log
from albert_edge.errors import DataError
from albert_edge.tasks.entity_data import check_entity_types, read_entity_jsonl
from albert_edge.tasks.qa_data import read_qa_jsonl


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_negative_answer_start_is_refused_even_when_the_slice_matches(tmp_path):
    # context[-7:-4] is "abc": Python's negative slice made the offset check pass.
    row = {"question": "who?", "context": "abc xyz", "answers": [{"text": "abc", "answer_start": -7}]}
    with pytest.raises(DataError, match="is not at offset -7"):
        read_qa_jsonl(_jsonl(tmp_path / "qa.jsonl", [row]))


def test_overlapping_gold_entities_are_refused_with_their_line(tmp_path):
    rows = [{"text": "Ada Lovelace wrote", "entities": [[0, 12, "PER"], [4, 12, "PER"]]}]
    with pytest.raises(DataError, match=r"ner\.jsonl:1.*overlap"):
        read_entity_jsonl(_jsonl(tmp_path / "ner.jsonl", rows))
    touching = [{"text": "Ada Lovelace", "entities": [[0, 3, "PER"], [4, 12, "PER"]]}]
    assert len(read_entity_jsonl(_jsonl(tmp_path / "ok.jsonl", touching))[0][1]) == 2


def test_gold_entity_types_the_model_lacks_are_refused():
    examples = [("Ada in Paris", [(0, 3, "PER"), (7, 12, "LOC")])]
    with pytest.raises(DataError, match="entity type 'LOC' is not one of the model's labels"):
        check_entity_types(examples, ["O", "B-PER", "I-PER"], "eval.jsonl")
    check_entity_types(examples, ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"], "eval.jsonl")


@pytest.mark.parametrize("value", ["-5", "1e308"])
def test_device_timings_out_of_all_proportion_are_refused(value):
    log = re.sub(r"Inference \(avg\): [0-9.e+]+", f"Inference (avg): {value}", PLAIN_LOG, count=1)
    with pytest.raises(DataError, match="expected microseconds between 0 and"):
        parse_benchmark_log(log, "phone.log")


def test_a_garbled_timings_line_is_named_by_file_and_line():
    lines = PROFILED_LOG.splitlines()
    number = next(i for i, line in enumerate(lines, start=1) if "Inference timings in us" in line)
    lines[number - 1] = "INFO: Inference timings in us: Init: ??, First inference: 1"
    with pytest.raises(DataError, match=rf"^phone\.log:{number}: garbled timings line"):
        parse_benchmark_log("\n".join(lines) + "\n", "phone.log")


def test_a_400_digit_score_is_a_data_error_not_an_overflow(tmp_path):
    """#27 cause 13: np.isfinite of a huge JSON integer raised OverflowError, reported as an internal error."""
    from albert_edge.tasks.sequence_regression import SequenceRegression
    from albert_edge.tokenizer.wordpiece import WordPieceTokenizer

    path = tmp_path / "scores.jsonl"
    path.write_text('{"text": "a b", "score": ' + "9" * 400 + "}\n", encoding="utf-8")
    tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"])
    with pytest.raises(DataError, match='"score" must be a finite number'):
        SequenceRegression.eval_format.labelled_samples(path, tokenizer, 16)


@pytest.mark.parametrize("target", ["missing", "loop"])
def test_a_dangling_or_looping_out_symlink_is_named_as_such(tmp_path, target):
    """#27 cause 17: mkdir on such a link says only "File exists"."""
    from albert_edge.outputs.atomic import ensure_writable_dir
    from albert_edge.errors import OutputError

    link = tmp_path / "out"
    if target == "missing":
        link.symlink_to(tmp_path / "nowhere")
    else:
        link.symlink_to(tmp_path / "other")
        (tmp_path / "other").symlink_to(link)
    with pytest.raises(OutputError, match="does not resolve to a directory"):
        ensure_writable_dir(link)


def test_constant_gold_gets_one_verdict_from_pearson_and_spearman():
    """#27 cause 14: constant gold scores read as Pearson 0.0 but Spearman 1.0."""
    import numpy as np

    from albert_edge.tasks.sequence_regression import pearson, spearman

    gold, scores = np.full(5, 2.0), np.full(5, 0.5)
    assert pearson(scores, gold) == spearman(scores, gold) == 0.0
    assert spearman(gold, gold) == 1.0 and spearman(np.arange(5.0), np.arange(5.0) ** 3) == pytest.approx(1.0)


@pytest.mark.parametrize("bad", [[], "", 0, False])
def test_a_task_config_of_the_wrong_type_is_named_as_such(bad):
    """#27 cause 17: a falsy task_config of the wrong type read as {} and failed later as a missing graph output."""
    from tests.support.bench_models import shared_models

    from albert_edge.errors import ModelFileError
    from albert_edge.runtime.pack import SETTINGS_MEMBER, pack_from_metadata_props, pack_to_metadata_props, read_pack

    props = pack_to_metadata_props(read_pack(shared_models()["fp32"]))
    settings = json.loads(props[SETTINGS_MEMBER])
    settings["task_config"] = bad
    props[SETTINGS_MEMBER] = json.dumps(settings)
    with pytest.raises(ModelFileError, match="pack task_config is .*expected a JSON object"):
        pack_from_metadata_props(props, "m.onnx")
