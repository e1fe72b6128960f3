"""Hostile data files (issue #14, cause 12 and the calibration minor): one TSV reader, one header rule,
errors that name the real file line. Runs in about 3 s (one quantize CLI call on a tiny model).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from albert_edge import evaluate
from albert_edge.inputs import data
from albert_edge.cli import main
from albert_edge.inputs.data import Example, read_text_lines, read_tsv
from albert_edge.errors import DataError
from albert_edge.finetune.recipe import resolve_labels
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.quantize.calibration import MIN_CALIBRATION_TEXTS, encode_calibration, read_calibration_texts

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"好坏的了是在我有他这"]


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_there_is_one_tsv_reader():
    assert evaluate.read_tsv is data.read_tsv and evaluate.Example is data.Example


@pytest.mark.parametrize("header", ["label\ttext", "Label\ttext_a\t", "LABEL\tsentence"])
def test_a_header_line_is_skipped_by_every_reader(tmp_path, header):
    width = header.count("\t") + 1
    row = "\t".join(["pos", "好"] + ["坏"] * (width - 2))
    path = write(tmp_path, "h.tsv", f"\n{header}\n{row}\n")
    examples = read_tsv(path)
    assert [(ex.label, ex.line) for ex in examples] == [("pos", 3)]


def test_finetune_default_labels_never_include_the_header(tmp_path):
    path = write(tmp_path, "train.tsv", "label\ttext\npos\t好\nneg\t坏\n")
    assert resolve_labels(None, None, read_tsv(path)) == ("neg", "pos")


def test_a_class_really_named_label_is_kept_when_the_labels_say_so(tmp_path):
    path = write(tmp_path, "d.tsv", "label\t好\nother\t坏\n")
    assert [ex.label for ex in read_tsv(path, labels=("label", "other"))] == ["label", "other"]


def test_only_the_first_row_can_be_a_header(tmp_path):
    path = write(tmp_path, "d.tsv", "pos\t好\nlabel\ttext\n")
    with pytest.raises(DataError, match=r"d.tsv:2: label 'label' is not one of"):
        read_tsv(path, labels=("neg", "pos"))


def test_a_header_wider_than_the_rows_is_named(tmp_path):
    path = write(tmp_path, "d.tsv", "label\ttext_a\ttext_b\npos\t好\n")
    with pytest.raises(DataError, match=r"d.tsv:2: expected 3 columns like the first row, got 2"):
        read_tsv(path)


def test_examples_remember_their_line_but_compare_by_content(tmp_path):
    path = write(tmp_path, "d.tsv", "\n\npos\t好\n")
    [example] = read_tsv(path)
    assert example.line == 3 and example == Example("pos", "好")


def test_tsv_calibration_skips_the_header(tmp_path):
    rows = "".join(f"pos\t好的{i}\n" for i in range(MIN_CALIBRATION_TEXTS))
    texts = read_calibration_texts(write(tmp_path, "c.tsv", "label\ttext\n" + rows))
    assert "text" not in texts and len(texts) == MIN_CALIBRATION_TEXTS


def test_calibration_errors_name_the_real_file_line(tmp_path):
    from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer

    lines = ["好的"] * 5 + [""] * 3 + ["好"] * 12 + ["\x01\x02"]  # the bad text is the 18th, on line 21
    path = write(tmp_path, "calib.txt", "\n".join(lines) + "\n")
    texts = read_text_lines(path)
    preprocessor = Preprocessor(WordPieceTokenizer.from_vocab_text("\n".join(VOCAB) + "\n"), 16)
    with pytest.raises(DataError, match=r"calib.txt:21: "):
        encode_calibration(texts, preprocessor, str(path))
    # The judge split (texts[cut:]) restarts the position count but not the line numbers.
    with pytest.raises(DataError, match=r"calib.txt:21: "):
        encode_calibration(texts[15:], preprocessor, str(path))


def test_quantize_names_the_calibration_line(tmp_path, capsys):
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    checkpoint = write_hf_checkpoint(random_weights(config, num_labels=2, seed=0), tmp_path / "ckpt")
    (checkpoint / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    lines = ["好的了是在我"] * 20 + ["", "\x01"]
    calib = write(tmp_path, "calib.txt", "\n".join(lines) + "\n")
    code = main(["quantize", str(checkpoint), "--calib", str(calib), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "calib.txt:22:" in err[0], err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.tflite"))


# --- fresh battery: devices, endless files, CR line endings ------------------------------------------

@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_as_a_data_or_json_file_is_refused_at_once(device):
    from albert_edge.errors import ConfigError
    from albert_edge.finetune.teacher import read_soft_targets
    from albert_edge.model.config import load_config

    if not Path(device).exists():
        pytest.skip(f"{device} missing")
    with pytest.raises(DataError, match=f"{device}: cannot read: a device"):
        read_tsv(device)
    with pytest.raises(DataError, match=f"{device}: cannot read: a device"):
        read_soft_targets(device, ("neg", "pos"), "0" * 32, 1)
    with pytest.raises(ConfigError, match=f"{device}: cannot read: a device"):
        load_config(device)


def test_a_pipe_is_read_but_bounded(tmp_path, monkeypatch):
    import os
    import threading

    fifo = tmp_path / "rows.tsv"
    os.mkfifo(fifo)
    monkeypatch.setattr(data, "MAX_DATA_BYTES", 1000)

    def feed(text: str) -> None:
        with open(fifo, "w", encoding="utf-8") as handle:
            try:
                handle.write(text)
            except BrokenPipeError:
                pass

    writer = threading.Thread(target=feed, args=("pos\t好\n",))
    writer.start()
    assert [ex.label for ex in read_tsv(fifo)] == ["pos"]
    writer.join()
    writer = threading.Thread(target=feed, args=("pos\t好\n" * 1000,))
    writer.start()
    with pytest.raises(DataError, match="more than the 1000 bytes"):
        read_tsv(fifo)
    writer.join()


def test_cr_line_endings_are_refused_not_read_as_a_pair(tmp_path):
    path = tmp_path / "mac.tsv"
    path.write_bytes("pos\t好\rneg\t差\r".encode())
    with pytest.raises(DataError, match=r"mac.tsv:1: carriage return inside a row"):
        read_tsv(path)
    path.write_bytes("pos\t好\r\nneg\t差\r\n".encode())
    assert [ex.label for ex in read_tsv(path)] == ["pos", "neg"]


def _tiny_checkpoint(tmp_path):
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    checkpoint = write_hf_checkpoint(random_weights(config, num_labels=2, seed=0), tmp_path / "ckpt")
    (checkpoint / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return checkpoint


def test_a_non_utf8_labels_txt_beside_the_checkpoint_is_one_line(tmp_path, capsys):
    checkpoint = _tiny_checkpoint(tmp_path)
    (checkpoint / "labels.txt").write_bytes(b"neg\n\xffpos\n")
    calib = write(tmp_path, "calib.txt", "\n".join(["好的了是在我"] * 20) + "\n")
    code = main(["quantize", str(checkpoint), "--calib", str(calib), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "labels.txt:2: not valid UTF-8" in err[0], err


def test_quantize_eval_errors_name_the_tsv_line(tmp_path, capsys):
    checkpoint = _tiny_checkpoint(tmp_path)
    calib = write(tmp_path, "calib.txt", "\n".join(["好的了是在我"] * 20) + "\n")
    rows = "label\ttext\n" + "LABEL_0\t好的\n" * 3 + "\nLABEL_1\t\x01\x02\n"
    evaluation = write(tmp_path, "dev.tsv", rows)
    code = main(["quantize", str(checkpoint), "--calib", str(calib), "--eval", str(evaluation),
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "dev.tsv:6:" in err[0], err


@pytest.mark.parametrize("given", ["pos,neg,pos", "labels.txt"])
def test_finetune_refuses_a_label_listed_twice(tmp_path, given):
    train = read_tsv(write(tmp_path, "train.tsv", "pos\t好\nneg\t坏\n"))
    write(tmp_path, "labels.txt", "neg\npos\nneg\n")
    spec = str(tmp_path / given) if given.endswith(".txt") else given
    with pytest.raises(DataError, match="listed more than once"):
        resolve_labels(spec, None, train)
    assert resolve_labels("neg,pos", None, train) == ("neg", "pos")


def test_android_sentences_from_a_device_are_refused_at_once():
    from albert_edge.android.goldens import read_sentences

    with pytest.raises(DataError, match="/dev/zero: cannot read: a device"):
        read_sentences("/dev/zero")


def test_finetune_applies_the_same_vocab_rule_as_convert(tmp_path):
    from albert_edge.finetune.recipe import resolve_vocab

    config = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"t{i}" for i in range(110)]
    padded = write(tmp_path, "padded.txt", "\n".join(tokens) + "\n")  # 115 tokens, 120 rows: padding to 8
    assert resolve_vocab(str(padded), None, config) == padded
    small = write(tmp_path, "small.txt", "\n".join(tokens[:10]) + "\n")
    with pytest.raises(DataError, match="vocab has 10 tokens, the config expects vocab_size 120"):
        resolve_vocab(str(small), None, config)
