"""Every option and untrusted input is checked before the first expensive step (issue #37).

Causes 4, 7, 8, 9, 10 and 11 and the minor list: each bad input is one line naming it, exit 2, and
nothing written; the fixed inputs (``question<TAB>context`` as an argument) work as from stdin.
Fast: one tiny random checkpoint, one conversion.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"好坏的了是在我有他这"]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    ckpt = write_hf_checkpoint(random_weights(config, num_labels=2, seed=0), tmp_path_factory.mktemp("v") / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return ckpt


@pytest.fixture(scope="module")
def converted(checkpoint, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("converted")
    assert main(["convert", str(checkpoint), "--out", str(out), "--formats", "tflite", "--no-progress"]) == 0
    return out


def refused(capsys, argv: list, *needles: str) -> str:
    code = main([str(a) for a in argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, (code, err)
    assert "Traceback" not in err[0] and all(n in err[0] for n in needles), err
    return err[0]


def cache_repo(tmp_path: Path, checkpoint: Path) -> Path:
    """A Hugging Face cache repo folder holding ``checkpoint`` as the snapshot of refs/main."""
    import shutil

    repo = tmp_path / "models--org--tiny"
    commit = "a" * 40
    shutil.copytree(checkpoint, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit, encoding="utf-8")
    return repo


# --- cause 4 and the minor --revision cases -------------------------------------------------------

@pytest.mark.parametrize("revision", ["../../other", "", "/etc", "main/../../x"])
def test_a_revision_is_a_ref_name_never_a_path(checkpoint, tmp_path, capsys, revision):
    repo = cache_repo(tmp_path, checkpoint)
    (repo / "other").mkdir()  # what ../../other would have reached from snapshots/
    out = tmp_path / "out"
    refused(capsys, ["convert", repo, "--revision", revision, "--out", out], "--revision", "not a path")
    assert not out.exists()


def test_a_revision_for_a_local_folder_is_refused_not_ignored(checkpoint, tmp_path, capsys):
    refused(capsys, ["convert", checkpoint, "--revision", "v2", "--out", tmp_path / "out"], "--revision",
            "local checkpoint")


def test_a_cache_ref_that_is_not_utf8_is_one_line(checkpoint, tmp_path, capsys):
    repo = cache_repo(tmp_path, checkpoint)
    (repo / "refs" / "main").write_bytes(b"\xff\xfe\x00garbage")
    refused(capsys, ["convert", repo, "--out", tmp_path / "out"], "refs/main", "not UTF-8")


def test_a_cache_ref_naming_a_path_is_refused(checkpoint, tmp_path, capsys):
    repo = cache_repo(tmp_path, checkpoint)
    (repo / "refs" / "main").write_text("../../elsewhere", encoding="utf-8")
    refused(capsys, ["convert", repo, "--out", tmp_path / "out"], "refs/main", "commit hash")


# --- cause 7: --variants --------------------------------------------------------------------------

@pytest.mark.parametrize("variants, needle", [("bogus", "unknown"), ("onnx_int4,onnx_int4", "twice"),
                                              ("", "empty"), ("dynamic_int8,bogus", "bogus")])
def test_variants_are_checked_before_any_model_is_read(checkpoint, tmp_path, capsys, variants, needle):
    out = tmp_path / "q"
    refused(capsys, ["quantize", checkpoint, "--mode", "dynamic", "--variants", variants, "--out", out],
            "--variants", needle)
    assert not out.exists()


# --- cause 9: card on a report of the wrong shape -------------------------------------------------

@pytest.mark.parametrize("report, field", [({"variants": {"a": 1}}, "variants"), ({"variants": [1, 2]}, "variants[0]"),
                                           ({"variants": [{"drift": [1]}]}, "variants[0].drift"),
                                           ({"judge": "x", "variants": []}, "judge")])
def test_card_refuses_a_quantize_report_of_the_wrong_shape_by_field(tmp_path, capsys, report, field):
    (tmp_path / "quantize_report.json").write_text(json.dumps(report), encoding="utf-8")
    refused(capsys, ["card", tmp_path], "quantize_report.json", field)
    assert not (tmp_path / "README.md").exists()


def test_card_refuses_a_conversion_report_whose_files_are_not_objects(tmp_path, capsys):
    (tmp_path / "conversion_report.json").write_text(json.dumps({"files": ["model.tflite"]}), encoding="utf-8")
    refused(capsys, ["card", tmp_path], "conversion_report.json", "files[0]")


# --- cause 10: demo --text -------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "   "])
def test_demo_refuses_an_empty_text_before_any_stage(tmp_path, capsys, text):
    out = tmp_path / "demo"
    # --sample names no folder: on a build that checks --text late, this fails fast for the wrong reason.
    refused(capsys, ["demo", "--out", out, "--sample", tmp_path / "nowhere", "--text", "fine", "--text", text],
            "--text", "empty")
    assert not out.exists() or not any(out.iterdir())


# --- cause 11: predict QA-style pairs as arguments -------------------------------------------------

def test_a_tab_in_a_text_argument_separates_the_pair_as_on_stdin(converted, capsys, monkeypatch):
    import io

    model = converted / "model_fp32.tflite"
    assert main(["predict", str(model), "--json", "好的\t坏了"]) == 0
    from_argument = capsys.readouterr().out
    monkeypatch.setattr("sys.stdin", io.StringIO("好的\t坏了\n"))
    assert main(["predict", str(model), "--json"]) == 0
    assert capsys.readouterr().out == from_argument
    assert json.loads(from_argument)["text_b"] == "坏了"


def test_predict_refuses_input_without_end(converted, capsys, monkeypatch):
    import albert_edge.cli.predict_cmd as predict_cmd

    monkeypatch.setattr(predict_cmd, "MAX_INPUT_BYTES", 1024)
    refused(capsys, ["predict", converted / "model_fp32.tflite", "--file", "/dev/zero"], "/dev/zero", "MB of input")


# --- minor: repack ------------------------------------------------------------------------------

def test_repack_refuses_a_variant_tag_that_is_a_path(converted, tmp_path, capsys):
    model = converted / "model_fp32.tflite"
    refused(capsys, ["repack", model, "--from", model, "--out", tmp_path / "r.tflite", "--variant", "../../evil"],
            "--variant", "not a path")
    assert not (tmp_path / "r.tflite").exists()


def test_repack_refuses_a_model_under_the_other_formats_name(converted, tmp_path, capsys):
    model = converted / "model_fp32.tflite"
    refused(capsys, ["repack", model, "--from", model, "--out", tmp_path / "r.onnx"], "tflite", ".onnx")
    assert not (tmp_path / "r.onnx").exists()


def test_the_too_few_rows_line_spells_plurals():
    from albert_edge.quantize.auto import Budget
    from albert_edge.tasks.metrics import too_few_rows

    budget = Budget(0.5, 0.99, None, 0.95)
    assert "215 entities cannot show" in too_few_rows(budget, 1.0, 215, "entity")
    assert "3 rows cannot show" in too_few_rows(budget, 1.0, 3)
