"""A run never loses the user's files or the previous run's shippable ones (issue #27, causes 2 and 3).

* Every writer refuses, in one line and exit 2 before writing anything, an ``--out`` where it would
  replace or delete a file albert-edge did not write, or put a checkpoint beside someone else's;
  re-running a command into its own previous output keeps working (the folder's manifest).
* ``quantize`` exiting 3 (nothing within budget) leaves the previous run's chosen model and report
  exactly as they were; its own report and best effort go into ``over_budget/``.
About 20 s (tiny random models; two quantize runs, a few conversions).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint
from albert_edge.outputs.claim import MANIFEST
from albert_edge.quantize.calibration import MIN_CALIBRATION_TEXTS

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"好坏的了是在我有他这"]


@pytest.fixture()
def checkpoint(tmp_path) -> Path:
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    ckpt = write_hf_checkpoint(random_weights(config, num_labels=2, seed=0), tmp_path / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return ckpt


@pytest.fixture()
def calib(tmp_path) -> Path:
    path = tmp_path / "calib.txt"
    path.write_text("\n".join("好的了是在我" * (1 + i % 3) for i in range(MIN_CALIBRATION_TEXTS + 4)) + "\n",
                    encoding="utf-8")
    return path


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file directly in ``directory`` (hidden ones too) with its bytes; folders as b'<dir>'."""
    return {p.name: (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(directory.iterdir())}


def run(capsys, *argv) -> tuple[int, list[str]]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err.strip().splitlines()


def one_line_refusal(code: int, err: list[str], folder: Path, name: str) -> None:
    assert code == 2 and len(err) == 1, err
    assert str(folder) in err[0] and name in err[0] and "did not write" in err[0], err


# --- cause 3: quantize exit 3 --------------------------------------------------------------------

def test_a_quantize_run_over_budget_keeps_the_previous_chosen_model_and_report(checkpoint, calib, tmp_path, capsys):
    out = tmp_path / "q"
    loose = ["quantize", checkpoint, "--calib", calib, "--out", out, "--mode", "auto", "--formats", "tflite",
             "--max-seq-len", "16",
             "--rounds", "1", "--max-drop", "100", "--min-agreement", "0", "--max-fallback-steps", "0"]
    code, err = run(capsys, *loose)
    assert code == 0, err
    shipped, candidates = snapshot(out), snapshot(out / "variants")
    assert "quantize_report.json" in shipped and "model.tflite" in shipped
    assert len([n for n in candidates if n.endswith(".tflite")]) >= 2
    code, err = run(capsys, *loose, "--max-size-mb", "0.001")
    assert code == 3, err
    assert {k: v for k, v in snapshot(out).items() if k != "over_budget"} == shipped
    assert snapshot(out / "variants") == candidates
    over = out / "over_budget"
    assert (over / "quantize_report.json").is_file()
    assert any(p.name.startswith("over_budget_model_") for p in over.iterdir())
    assert any("over_budget/over_budget_model_" in line for line in err), err
    code, err = run(capsys, *loose)  # and the folder is still the command's own to rerun into
    assert code == 0, err


# --- cause 2: every writer refuses to replace what it did not write --------------------------------

def test_convert_refuses_to_replace_a_model_it_did_not_write(checkpoint, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "model_fp32.onnx").write_bytes(b"the user's own model")
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    before = snapshot(out)
    code, err = run(capsys, "convert", checkpoint, "--out", out, "--formats", "onnx", "--max-seq-len", "16")
    one_line_refusal(code, err, out, "model_fp32.onnx")
    assert snapshot(out) == before


def test_convert_reruns_into_its_own_output_beside_other_files(checkpoint, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")  # not a name convert writes: left alone
    argv = ["convert", checkpoint, "--out", out, "--formats", "onnx", "--max-seq-len", "16"]
    assert run(capsys, *argv)[0] == 0
    assert run(capsys, *argv, "--fp16")[0] == 0
    assert (out / "notes.txt").read_text(encoding="utf-8") == "mine"
    assert {"model_fp32.onnx", "conversion_report.json", MANIFEST} <= set(snapshot(out))


# --- finetune / pretrain: never into someone else's checkpoint ------------------------------------

@pytest.fixture()
def training_files(tmp_path) -> Path:
    """train/dev TSVs, a brightmart config.json and vocab.txt: what ``finetune --config`` trains from."""
    import json

    from albert_edge.inputs.data import Example, write_tsv
    from albert_edge.model.config import tf1_config_dict

    root = tmp_path / "data"
    root.mkdir()
    texts = ["好的了是", "坏在我有", "他这好坏", "我有好的", "是在他坏", "这了我好"] * 3
    write_tsv(root / "train.tsv", [Example("pos" if "好" in t else "neg", t) for t in texts])
    write_tsv(root / "dev.tsv", [Example("pos" if "好" in t else "neg", t) for t in texts[:6]])
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=8, hidden_size=16, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=32, max_position_embeddings=32,
                          embedding_order="project_then_add")
    (root / "config.json").write_text(json.dumps(tf1_config_dict(config, "brightmart")), encoding="utf-8")
    (root / "vocab.txt").write_text("\n".join(VOCAB[:-1]) + "\n[unused1]\n", encoding="utf-8")
    return root


def finetune_argv(files: Path, out: Path) -> list:
    return ["finetune", "--config", files / "config.json", "--vocab", files / "vocab.txt", "--train",
            files / "train.tsv", "--dev", files / "dev.tsv", "--labels", "neg,pos", "--out", out, "--max-steps", "2",
            "--batch-size", "8", "--max-seq-len", "16", "--no-progress"]


def test_finetune_into_a_checkpoint_folder_it_did_not_write_is_refused_and_changes_nothing(
        checkpoint, training_files, capsys):
    pytest.importorskip("tensorflow")
    before = snapshot(checkpoint)
    code, err = run(capsys, *finetune_argv(training_files, checkpoint))
    assert code == 2 and len(err) == 1 and str(checkpoint) in err[0] and "did not write" in err[0], err
    assert snapshot(checkpoint) == before


def test_finetune_reruns_into_its_own_output(training_files, tmp_path, capsys):
    pytest.importorskip("tensorflow")
    out = tmp_path / "ft"
    assert run(capsys, *finetune_argv(training_files, out))[0] == 0
    assert run(capsys, *finetune_argv(training_files, out))[0] == 0
    assert {"checkpoint", "vocab.txt", "labels.txt", "finetune_log.json", MANIFEST} <= set(snapshot(out))


def test_the_write_itself_refuses_a_checkpoint_beside_a_foreign_one(checkpoint, tmp_path):
    """The commit checks the rule too, so a caller that skips the CLI's early check cannot break it."""
    from albert_edge.errors import OutputError
    from albert_edge.outputs.claim import CHECKPOINT_FILES
    from albert_edge.outputs.output_set import OutputSet

    before = snapshot(checkpoint)
    with pytest.raises(OutputError, match="did not write"), \
            OutputSet(checkpoint, "finetune", claims=CHECKPOINT_FILES) as staged:
        staged.write_text("model.ckpt-1.index", "x")
    assert snapshot(checkpoint) == before
