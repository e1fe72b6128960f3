"""Bad input to ``albert-edge quantize``: one clear error line, a non-zero exit, nothing written."""

from __future__ import annotations

import numpy as np
import pytest

from albert_edge.cli import main
from albert_edge.errors import DataError
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.quantize.calibration import MIN_CALIBRATION_TEXTS, encode_calibration, read_calibration_texts

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"好坏的了是在我有他这"]


def _tiny_weights():
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    return random_weights(config, num_labels=2, seed=0)


@pytest.fixture()
def checkpoint(tmp_path):
    ckpt = write_hf_checkpoint(_tiny_weights(), tmp_path / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return ckpt


@pytest.fixture()
def calib(tmp_path):
    path = tmp_path / "calib.txt"
    path.write_text("\n".join("好的了是在我" * (1 + i % 3) for i in range(MIN_CALIBRATION_TEXTS + 4)) + "\n",
                    encoding="utf-8")
    return path


def _run(capsys, *argv):
    code = main(["quantize", *map(str, argv)])
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def _assert_one_line_error(code, err, *needles):
    assert code != 0
    assert len(err) == 1 and err[0].startswith("albert-edge quantize: error:")
    for needle in needles:
        assert needle in err[0]


def test_empty_calibration_file_is_a_one_line_data_error(tmp_path, checkpoint, capsys):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    code, err = _run(capsys, checkpoint, "--calib", empty, "--out", tmp_path / "out")
    _assert_one_line_error(code, err, "empty.txt", "empty")
    assert not (tmp_path / "out").exists()


def test_missing_calibration_file_names_the_path(tmp_path, checkpoint, capsys):
    code, err = _run(capsys, checkpoint, "--calib", tmp_path / "nope.txt", "--out", tmp_path / "out")
    _assert_one_line_error(code, err, "nope.txt", "does not exist")


def test_non_utf8_calibration_file_names_the_line(tmp_path, checkpoint, capsys):
    bad = tmp_path / "gbk.txt"
    bad.write_bytes("好的\n".encode("utf-8") * 20 + "坏了\n".encode("gbk"))
    code, err = _run(capsys, checkpoint, "--calib", bad, "--out", tmp_path / "out")
    _assert_one_line_error(code, err, "gbk.txt:21", "UTF-8")
    assert not (tmp_path / "out").exists()


def test_too_few_calibration_lines_says_how_many_are_needed(tmp_path, checkpoint, capsys):
    few = tmp_path / "few.txt"
    few.write_text("好的\n坏了\n\n", encoding="utf-8")
    code, err = _run(capsys, checkpoint, "--calib", few, "--out", tmp_path / "out")
    _assert_one_line_error(code, err, "few.txt", "2 calibration texts", f"at least {MIN_CALIBRATION_TEXTS}")


def test_eval_tsv_with_bad_columns_is_rejected_before_any_model_is_built(tmp_path, checkpoint, calib, capsys):
    bad = tmp_path / "eval.tsv"
    bad.write_text("pos\t好的\nneg\t坏\t了\t是\n", encoding="utf-8")
    code, err = _run(capsys, checkpoint, "--calib", calib, "--eval", bad, "--out", tmp_path / "out")
    _assert_one_line_error(code, err, "eval.tsv:2", "columns")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_eval_tsv_with_a_label_the_model_lacks_names_the_label(tmp_path, checkpoint, calib, capsys):
    bad = tmp_path / "eval.tsv"
    bad.write_text("pos\t好的\nneg\t坏了\nmeh\t是在\n", encoding="utf-8")
    code, err = _run(capsys, checkpoint, "--calib", calib, "--eval", bad, "--labels", "neg,pos",
                     "--out", tmp_path / "out")
    _assert_one_line_error(code, err, "eval.tsv:3", "'meh'")
    assert not any((tmp_path / "out").glob("*.tflite"))


def test_already_quantized_model_file_is_refused(tmp_path, calib, capsys):
    from albert_edge.quantize.tflite_quant import tflite_variant

    model = tmp_path / "model_dynamic_int8.tflite"
    model.write_bytes(tflite_variant(_tiny_weights(), "dynamic_int8"))
    code, err = _run(capsys, model, "--calib", calib, "--out", tmp_path / "out")
    _assert_one_line_error(code, err, "already quantized")
    assert not (tmp_path / "out").exists()


def test_unknown_mode_is_an_argument_error(tmp_path, checkpoint, calib, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["quantize", str(checkpoint), "--calib", str(calib), "--mode", "int4"])
    assert exc.value.code == 2


def test_tsv_calibration_uses_the_text_column(tmp_path):
    path = tmp_path / "calib.tsv"
    path.write_text("".join(f"pos\t好的{i}\n" for i in range(MIN_CALIBRATION_TEXTS)), encoding="utf-8")
    texts = read_calibration_texts(path)
    assert texts[0] == "好的0" and len(texts) == MIN_CALIBRATION_TEXTS


def test_calibration_is_int32_token_ids_from_the_models_tokenizer():
    from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_text("\n".join(VOCAB) + "\n")
    calibration = encode_calibration(["好的了"], Preprocessor(tokenizer, 16))
    sample = next(calibration.representative_dataset())
    assert sample["input_ids"].dtype == np.int32 and sample["input_ids"].tolist() == [[2, 5, 7, 8, 3]]
    assert sample["attention_mask"].tolist() == [[1] * 5] and sample["token_type_ids"].tolist() == [[0] * 5]


def test_untokenizable_calibration_text_is_a_data_error():
    from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer

    tokenizer = WordPieceTokenizer.from_vocab_text("\n".join(VOCAB) + "\n")
    with pytest.raises(DataError, match="text 2"):
        encode_calibration(["好的", "\u200b"], Preprocessor(tokenizer, 16), "c.txt")


def test_float_model_file_is_refused_with_a_pointer_to_the_checkpoint(tmp_path, calib, capsys):
    from albert_edge.quantize.tflite_quant import tflite_variant

    model = tmp_path / "model_fp32.tflite"
    model.write_bytes(tflite_variant(_tiny_weights(), "fp32"))
    code, err = _run(capsys, model, "--calib", calib, "--out", tmp_path / "out")
    _assert_one_line_error(code, err, "pass the checkpoint")
