"""albert_edge.inputs.data: TSV reading/writing and the errors bad files produce."""

from __future__ import annotations

import pytest

from albert_edge.inputs.data import Example, read_tsv, write_tsv
from albert_edge.errors import DataError
from albert_edge.quantize.calibration import read_calibration_texts


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_read_tsv_reads_single_text_rows(tmp_path):
    path = write(tmp_path, "a.tsv", "pos\t很好\nneg\t太差了\n\n".encode())
    assert read_tsv(path) == [Example("pos", "很好"), Example("neg", "太差了")]


def test_read_tsv_reads_pair_rows(tmp_path):
    path = write(tmp_path, "p.tsv", "1\t今天下雨\t天气不好\r\n0\t他来了\t她走了\r\n".encode())
    assert read_tsv(path) == [Example("1", "今天下雨", "天气不好"), Example("0", "他来了", "她走了")]


def test_read_tsv_skips_utf8_bom(tmp_path):
    path = write(tmp_path, "bom.tsv", b"\xef\xbb\xbf" + "pos\t好\n".encode())
    assert read_tsv(path)[0].label == "pos"


def test_empty_file_is_a_data_error_naming_the_file(tmp_path):
    path = write(tmp_path, "empty.tsv", b"\n  \n")
    with pytest.raises(DataError, match="empty.tsv: file is empty"):
        read_tsv(path)


def test_missing_file_is_a_data_error(tmp_path):
    with pytest.raises(DataError, match="nope.tsv: data file not found"):
        read_tsv(tmp_path / "nope.tsv")


def test_bad_encoding_names_file_and_line(tmp_path):
    path = write(tmp_path, "gbk.tsv", "pos\t好\n".encode() + b"neg\t" + "差".encode("gbk") + b"\n")
    with pytest.raises(DataError, match=r"gbk.tsv:2: not valid UTF-8"):
        read_tsv(path)


def test_row_without_tab_names_file_and_line(tmp_path):
    path = write(tmp_path, "cols.tsv", "pos\t好\nneg 差\n".encode())
    with pytest.raises(DataError, match=r"cols.tsv:2: expected 2 \(label, text\) or 3"):
        read_tsv(path)


def test_rows_of_mixed_width_are_rejected(tmp_path):
    path = write(tmp_path, "mixed.tsv", "pos\t好\nneg\t差\t很差\n".encode())
    with pytest.raises(DataError, match=r"mixed.tsv:2: expected 2 columns like the first row, got 3"):
        read_tsv(path)


def test_empty_text_column_is_rejected(tmp_path):
    path = write(tmp_path, "blank.tsv", "pos\t好\nneg\t  \n".encode())
    with pytest.raises(DataError, match=r"blank.tsv:2: empty text column"):
        read_tsv(path)


def test_unknown_label_is_rejected_when_labels_are_given(tmp_path):
    path = write(tmp_path, "labels.tsv", "pos\t好\nnegative\t差\n".encode())
    with pytest.raises(DataError, match=r"labels.tsv:2: label 'negative' is not one of \['neg', 'pos'\]"):
        read_tsv(path, labels=("neg", "pos"))


def test_write_tsv_keeps_each_example_on_one_row(tmp_path):
    examples = [Example("pos", "好\t看\n极了"), Example("neg", "差", None)]
    path = write_tsv(tmp_path / "out.tsv", examples)
    assert read_tsv(path) == [Example("pos", "好 看 极了"), Example("neg", "差")]


def test_calibration_texts_come_from_a_tsv_text_column_or_plain_lines(tmp_path):
    tsv = write(tmp_path, "c.tsv", "pos\t好\nneg\t差\n".encode())
    txt = write(tmp_path, "c.txt", "第一句\n\n第二句\n".encode())
    assert read_calibration_texts(tsv, min_texts=1) == ["好", "差"]
    assert read_calibration_texts(txt, min_texts=1) == ["第一句", "第二句"]
