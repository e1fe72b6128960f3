"""Deeply nested JSON in any file albert-edge reads is one line, not a RecursionError (issue #27, cause 5).

Python's json recurses once per level, so ``[[[[...`` a few thousand deep used to end in
"internal error (RecursionError)", exit 1: in eval/predict ``.jsonl`` files, peers documents
and an existing ``report.json``. Every reader now bounds the depth first (``jsonfile``). Fast.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.errors import DataError
from albert_edge.tasks.jsonl import iter_jsonl_rows

DEEP = "[" * 100_000 + "]" * 100_000


def one_line_exit_2(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, (code, err)
    assert "internal error" not in err[0] and "Recursion" not in err[0], err
    return err[0]


def test_a_deeply_nested_jsonl_line_names_the_file_and_line(tmp_path):
    path = tmp_path / "eval.jsonl"
    path.write_text('{"question": "q", "context": "c"}\n' + DEEP + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"eval.jsonl:2: JSON nested 100000 levels deep"):
        list(iter_jsonl_rows(path, "question file"))


def test_a_deeply_nested_peers_document_is_one_line(tmp_path, capsys):
    path = tmp_path / "peers.json"
    path.write_text('{"tool": ' + DEEP + "}", encoding="utf-8")
    line = one_line_exit_2(capsys, ["bench", "--import-peers", str(path), "--out", str(tmp_path / "report")])
    assert str(path) in line and "nested" in line


def test_a_deeply_nested_report_json_in_the_folder_is_one_line(tmp_path, capsys):
    out = tmp_path / "report"
    out.mkdir()
    (out / "report.json").write_text(DEEP, encoding="utf-8")
    log = tmp_path / "phone.log"
    log.write_text("STARTING!\nNum threads: [1]\nGraph: [/x/fp32.tflite]\nInput shapes: [1,64:1,64:1,64]\n"
                   "count=5 first=10 curr=10 min=9 max=11 avg=10 std=1\n"
                   "Inference timings in us: Init: 1, First inference: 2, Warmup (avg): 3, Inference (avg): 4\n",
                   encoding="utf-8")
    line = one_line_exit_2(capsys, ["bench", "--import-device-log", str(log), "--out", str(out)])
    assert str(out / "report.json") in line and "nested" in line


def test_a_deeply_nested_token_classification_config_is_not_an_error(tmp_path):
    from albert_edge.tasks.token_classification import declares_token_classification

    (tmp_path / "config.json").write_text(DEEP, encoding="utf-8")
    assert declares_token_classification(tmp_path) is False


def test_a_deeply_nested_tokenizer_corpus_is_one_data_error(tmp_path):
    from albert_edge.android.ner import read_corpus

    path = Path(tmp_path / "corpus.jsonl")
    path.write_text(DEEP + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="nested"):
        read_corpus(path)
