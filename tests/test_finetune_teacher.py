"""Distillation: the soft-target file (tied to one training set) and what the loss does with it."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from albert_edge.inputs.data import data_hash, write_tsv
from albert_edge.errors import DataError
from albert_edge.finetune.teacher import read_soft_targets, write_soft_targets

LABELS = ("neg", "pos")
HASH = "0123456789abcdef0123456789abcdef"


def test_soft_targets_round_trip(tmp_path):
    probs = np.array([[0.9, 0.1], [0.25, 0.75], [0.5, 0.5]])
    path = write_soft_targets(tmp_path / "t.tsv", probs, LABELS, HASH)
    np.testing.assert_allclose(read_soft_targets(path, LABELS, HASH, 3), probs, atol=1e-6)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda lines: ["neg\tpos", *lines[1:]], "not an albert-edge soft-target file"),
        (lambda lines: [lines[0].replace("0123", "ffff"), *lines[1:]], "made for training data with hash ffff"),
        (lambda lines: [lines[0], "pos\tneg", *lines[2:]], "label columns ['pos', 'neg'] differ"),
        (lambda lines: lines[:-1], "2 rows of soft targets for 3 training examples"),
        (lambda lines: [*lines[:-1], "0.7\t0.7"], "line 5 is not a probability distribution"),
        (lambda lines: [*lines[:3], "", *lines[3:-1], "0.7\t0.7"], "line 6 is not a probability distribution"),
        (lambda lines: [*lines[:-1], "nan\tnan"], "line 5 is not a probability distribution"),
        (lambda lines: [*lines[:-1], "inf\t-inf"], "line 5 is not a probability distribution"),
        (lambda lines: [*lines[:-1], "1e400\t0"], "line 5 is not a probability distribution"),
        (lambda lines: [*lines[:-1], "0.5\thalf"], "soft targets must be numbers"),
        (lambda lines: [*lines[:-1], "1.0"], "line 5 holds 1 columns, expected 2 probabilities"),
    ],
)
def test_a_file_for_other_data_or_a_damaged_file_is_named(tmp_path, edit, message):
    path = write_soft_targets(tmp_path / "t.tsv", np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]]), LABELS, HASH)
    path.write_text("\n".join(edit(path.read_text(encoding="utf-8").splitlines())) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=re.escape(message)) as info:
        read_soft_targets(path, LABELS, HASH, 3)
    assert str(path) in str(info.value)


def test_a_missing_teacher_file_is_named(tmp_path):
    with pytest.raises(DataError, match="nothere.tsv: teacher file not found"):
        read_soft_targets(tmp_path / "nothere.tsv", LABELS, HASH, 3)


tf = pytest.importorskip("tensorflow")

from albert_edge.cli import main  # noqa: E402
from albert_edge.finetune.trainer import FinetuneSettings, finetune, training_init  # noqa: E402
from albert_edge.model.config import tf1_config_dict  # noqa: E402
from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer  # noqa: E402
from tests.support.finetune_task import CONFIG, VOCAB, generated  # noqa: E402  (the same tiny model and task)


def _train(weight: float, soft: np.ndarray | None):
    preprocessor = Preprocessor(WordPieceTokenizer.from_vocab_text("\n".join(VOCAB) + "\n"), max_seq_len=16)
    settings = FinetuneSettings(epochs=10, max_seq_len=16, batch_size=16, learning_rate=3e-3, dropout=0.0,
                                warmup_ratio=0.05, seed=0, distill_weight=weight)
    return finetune(training_init(CONFIG, 2, 0), generated(192, 0), generated(64, 1), preprocessor, LABELS,
                    settings, log=lambda m: None, progress=False, soft_targets=soft)


@pytest.mark.slow  # fine-tunes (distillation)
def test_the_model_follows_the_teacher_at_weight_one_and_ignores_it_at_zero():
    # A teacher that contradicts every label: followed fully, the model learns the opposite task;
    # ignored (weight 0), it learns the real one; the dev set keeps the true labels throughout.
    train = generated(192, 0)
    wrong = np.array([[0.0, 1.0] if ex.label == "neg" else [1.0, 0.0] for ex in train], np.float32)
    followed = _train(1.0, wrong)
    ignored = _train(0.0, wrong)
    assert followed.history[-1]["dev_accuracy"] <= 0.3
    assert ignored.best_dev_accuracy >= 0.85


def test_soft_targets_of_the_wrong_shape_or_weight_are_refused():
    with pytest.raises(DataError, match=r"soft targets are \[3, 2\], expected \[192, 2\]"):
        _train(0.5, np.full((3, 2), 0.5, np.float32))
    with pytest.raises(DataError, match="needs a teacher's soft targets"):
        _train(0.5, None)
    with pytest.raises(DataError, match="must be in"):
        _train(1.5, np.full((192, 2), 0.5, np.float32))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("distil")
    train = generated(48, 0)
    write_tsv(root / "train.tsv", train)
    write_tsv(root / "dev.tsv", generated(16, 1))
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (root / "config.json").write_text(json.dumps(tf1_config_dict(CONFIG, "brightmart")), encoding="utf-8")
    probs = np.array([[0.8, 0.2] if ex.label == "neg" else [0.3, 0.7] for ex in train])
    write_soft_targets(root / "teacher.tsv", probs, LABELS, data_hash(train))
    write_soft_targets(root / "other.tsv", probs, LABELS, HASH)
    return root


def _cli(files, out: str, *extra: str) -> int:
    return main(["finetune", "--config", str(files / "config.json"), "--train", str(files / "train.tsv"),
                 "--dev", str(files / "dev.tsv"), "--vocab", str(files / "vocab.txt"), "--out", str(files / out),
                 "--labels", "neg,pos", "--max-seq-len", "16", "--batch-size", "8", "--max-steps", "3",
                 "--no-progress", *extra])


@pytest.mark.slow  # fine-tunes (distillation)
def test_cli_distils_and_records_the_teacher(files):
    assert _cli(files, "ckpt", "--teacher", str(files / "teacher.tsv")) == 0
    log = json.loads((files / "ckpt" / "finetune_log.json").read_text(encoding="utf-8"))
    assert log["settings"]["distill_weight"] == 0.5
    assert log["teacher"]["path"] == str(files / "teacher.tsv") and len(log["teacher"]["md5"]) == 32


def test_cli_names_a_teacher_made_for_other_data_and_writes_nothing(files, capsys):
    assert _cli(files, "never", "--teacher", str(files / "other.tsv")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "other.tsv: made for training data with hash" in err[0]
    assert not (files / "never").exists()


def test_cli_refuses_a_distill_weight_without_a_teacher(files, capsys):
    assert _cli(files, "never2", "--distill-weight", "0.5") == 2
    assert "--distill-weight needs --teacher FILE" in capsys.readouterr().err
    assert not (files / "never2").exists()


def test_a_byte_order_mark_and_crlf_from_an_editor_are_tolerated(tmp_path):
    probs = np.array([[0.9, 0.1], [0.25, 0.75]])
    path = write_soft_targets(tmp_path / "t.tsv", probs, LABELS, HASH)
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes().replace(b"\n", b"\r\n"))
    np.testing.assert_allclose(read_soft_targets(path, LABELS, HASH, 2), probs, atol=1e-6)


def test_a_device_as_teacher_file_is_refused_at_once():
    with pytest.raises(DataError, match="/dev/zero: cannot read: a device"):
        read_soft_targets("/dev/zero", LABELS, HASH, 2)
