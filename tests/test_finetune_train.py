"""A tiny fine-tuning run: the checkpoint it writes, its determinism and the CLI around it."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from albert_edge.cli import main
from albert_edge.inputs.data import write_tsv
from albert_edge.finetune.tf_model import TfAlbertClassifier
from albert_edge.finetune.trainer import (
    FinetuneSettings,
    bucketed_batches,
    finetune,
    learning_rate_at,
    training_init,
)
from albert_edge.model import load_checkpoint, reference_forward
from albert_edge.model.config import tf1_config_dict
from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer
from tests.support.finetune_task import CONFIG, VOCAB, generated

SETTINGS = FinetuneSettings(epochs=1, max_seq_len=16, batch_size=8, learning_rate=3e-3, max_steps=6,
                            evals_per_epoch=2, seed=5)


@pytest.fixture(scope="module")
def preprocessor():
    return Preprocessor(WordPieceTokenizer.from_vocab_text("\n".join(VOCAB) + "\n"), max_seq_len=16)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("ft")
    write_tsv(root / "train.tsv", generated(48, 0))
    write_tsv(root / "dev.tsv", generated(16, 1))
    (root / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (root / "config.json").write_text(json.dumps(tf1_config_dict(CONFIG, "brightmart")), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def cli_run(files):
    out = files / "ckpt"
    code = main(["finetune", "--config", str(files / "config.json"), "--train", str(files / "train.tsv"),
                 "--dev", str(files / "dev.tsv"), "--test", str(files / "dev.tsv"), "--vocab",
                 str(files / "vocab.txt"), "--out", str(out), "--epochs", "1", "--max-seq-len", "16",
                 "--batch-size", "8", "--max-steps", "6", "--seed", "5", "--lr", "3e-3",
                 "--evals-per-epoch", "2", "--no-progress"])
    assert code == 0
    return out


@pytest.mark.slow  # fine-tunes (the cli_run / direct_run fixtures)
def test_cli_writes_a_brightmart_checkpoint_directory(cli_run):
    names = sorted(p.name for p in cli_run.iterdir())
    prefix = json.loads((cli_run / "finetune_log.json").read_text())["best_step"]
    assert f"model.ckpt-{prefix}.index" in names and f"model.ckpt-{prefix}.data-00000-of-00001" in names
    assert {"checkpoint", "albert_config.json", "vocab.txt", "labels.txt", "finetune_log.json"} <= set(names)
    assert (cli_run / "labels.txt").read_text().split() == ["neg", "pos"]
    weights = load_checkpoint(cli_run)
    assert weights.scheme == "brightmart-tf1"
    assert weights.config == CONFIG
    assert weights.num_labels == 2


@pytest.mark.slow  # fine-tunes (the cli_run / direct_run fixtures)
def test_checkpoint_holds_no_optimizer_slots(cli_run):
    names = [name for name, _ in tf.train.list_variables(str(cli_run))]
    assert names and not [n for n in names if "adam" in n.lower() or "slot" in n.lower()]
    assert "bert/embeddings/word_embeddings_2" in names


@pytest.mark.slow  # fine-tunes (the cli_run / direct_run fixtures)
def test_cli_records_dev_and_test_accuracy(cli_run):
    log = json.loads((cli_run / "finetune_log.json").read_text())
    assert [h["step"] for h in log["history"]] == [3, 6]
    assert log["best_dev_accuracy"] == max(h["dev_accuracy"] for h in log["history"])
    assert 0.0 <= log["test"]["accuracy"] <= 1.0
    assert log["settings"]["seed"] == 5


@pytest.fixture(scope="module")
def direct_run(files, preprocessor):
    """The CLI run again through the library, same data and seed."""
    return finetune(training_init(CONFIG, 2, 5), generated(48, 0), generated(16, 1), preprocessor,
                    ("neg", "pos"), SETTINGS, log=lambda m: None, progress=False)


@pytest.mark.slow  # fine-tunes (the cli_run / direct_run fixtures)
def test_trained_tf_logits_equal_reference_on_the_written_checkpoint(cli_run, direct_run, preprocessor):
    loaded = load_checkpoint(cli_run)
    batch = preprocessor.encode_batch([e.text_a for e in generated(5, 9)])
    tf_logits = TfAlbertClassifier(direct_run.weights)(batch.input_ids, batch.attention_mask, batch.token_type_ids)
    ref = reference_forward(loaded, batch.input_ids, batch.attention_mask, batch.token_type_ids).logits
    np.testing.assert_allclose(tf_logits.numpy(), ref, atol=1e-4, rtol=0)


@pytest.mark.slow  # fine-tunes (the cli_run / direct_run fixtures)
def test_same_seed_gives_the_same_weights(cli_run, direct_run):
    loaded = load_checkpoint(cli_run)
    assert sorted(loaded.tensors) == sorted(direct_run.weights.tensors)
    for name, array in direct_run.weights.tensors.items():
        np.testing.assert_array_equal(loaded.tensors[name], array)
    start = training_init(CONFIG, 2, 5)
    assert not np.array_equal(loaded.tensors["classifier.kernel"], start.tensors["classifier.kernel"])


@pytest.mark.slow  # fine-tunes (the cli_run / direct_run fixtures)
def test_another_seed_gives_other_weights(direct_run, preprocessor):
    settings = FinetuneSettings(**{**SETTINGS.__dict__, "seed": 6})
    other = finetune(training_init(CONFIG, 2, 6), generated(48, 0), generated(16, 1), preprocessor,
                     ("neg", "pos"), settings, log=lambda m: None, progress=False)
    assert not np.array_equal(other.weights.tensors["pooler.kernel"], direct_run.weights.tensors["pooler.kernel"])


@pytest.mark.slow  # fine-tunes until the task is learned
def test_training_learns_a_separable_task(preprocessor):
    settings = FinetuneSettings(epochs=10, max_seq_len=16, batch_size=16, learning_rate=3e-3, dropout=0.0,
                                warmup_ratio=0.05, seed=0)
    result = finetune(training_init(CONFIG, 2, 0), generated(192, 0), generated(64, 1), preprocessor,
                      ("neg", "pos"), settings, log=lambda m: None, progress=False)
    assert result.best_dev_accuracy >= 0.85


def test_batches_cover_every_example_once_and_group_similar_lengths():
    lengths = np.random.default_rng(0).integers(3, 100, size=1000)
    batches = bucketed_batches(lengths, 10, np.random.default_rng(1))
    assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
    spread = np.mean([lengths[b].max() - lengths[b].min() for b in batches])
    assert spread < 10


def test_learning_rate_warms_up_then_decays_to_zero():
    settings = FinetuneSettings(learning_rate=1e-3, warmup_ratio=0.1)
    rates = [learning_rate_at(step, 100, settings) for step in range(100)]
    assert rates[0] == pytest.approx(1e-4) and rates[9] == pytest.approx(1e-3)
    assert all(a >= b for a, b in itertools.pairwise(rates[9:]))
    assert rates[-1] == pytest.approx(1e-3 / 90)


def test_cli_rejects_a_vocab_of_the_wrong_size(files, capsys):
    (files / "short_vocab.txt").write_text("\n".join(VOCAB[:-1]) + "\n", encoding="utf-8")
    code = main(["finetune", "--config", str(files / "config.json"), "--train", str(files / "train.tsv"),
                 "--dev", str(files / "dev.tsv"), "--vocab", str(files / "short_vocab.txt"),
                 "--out", str(files / "never"), "--no-progress"])
    assert code == 2
    assert "short_vocab.txt: vocab has 18 tokens, the config expects vocab_size 19" in capsys.readouterr().err
