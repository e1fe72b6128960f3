"""Files an outside tool rewrote: one line naming what is missing and the repack command, and ``repack``.

litert-quantizer writes a new flatbuffer without the ZIP we append (keeping the ``TFLITE_METADATA`` entry
that names its files); ONNX tools may write ``metadata_props`` anew. Here the stripping is done by hand
(the flatbuffer cut at the ZIP, the ONNX entries deleted with onnx), so these tests need no outside tool;
tests/test_repack_litert_quantizer.py runs litert-quantizer itself.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tensorflow")

from albert_edge.cli import main
from albert_edge.errors import MissingPackError, ModelFileError, StrippedPackError
from albert_edge.runtime.pack import read_pack, strip_tflite_pack
from tests.support.tiny_hf import save_with_vocab, tiny_hf_model

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(55)]
TEXTS = ["w1 w2 w3", "w7 w40 w41 w9 w12", "w54", "w3 w3 w3 w20 w21 w22 w23"]


def _convert(root, head_kwargs, words=WORDS, labels="neg,pos"):
    ckpt = root / "ckpt"
    save_with_vocab(tiny_hf_model("bert", "SequenceClassification", **head_kwargs), ckpt, words)
    out = root / "out"
    assert main(["convert", str(ckpt), "--out", str(out), "--labels", labels, "--max-seq-len", "32",
                 "--no-progress"]) == 0
    return ckpt, out


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    """A converted classifier: (checkpoint, fp32 .tflite, fp32 .onnx)."""
    ckpt, out = _convert(tmp_path_factory.mktemp("repack"), {"num_labels": 2})
    return ckpt, out / "model_fp32.tflite", out / "model_fp32.onnx"


def _stripped_tflite(src, dst):
    dst.write_bytes(strip_tflite_pack(src.read_bytes()))
    return dst


def _stripped_onnx(src, dst):
    import onnx

    model = onnx.load(str(src))
    del model.metadata_props[:]
    onnx.save(model, str(dst))
    return dst


def _predict(path, capsys):
    assert main(["predict", str(path), *TEXTS, "--json", "--no-progress"]) == 0
    return capsys.readouterr().out


def _one_error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_a_stripped_tflite_names_the_missing_files_and_the_repack_command(packed, tmp_path, capsys):
    from albert_edge.runtime import TextClassifier

    stripped = _stripped_tflite(packed[1], tmp_path / "q.tflite")
    with pytest.raises(StrippedPackError, match="names vocab.txt, labels.txt, albert_edge.json") as caught:
        read_pack(stripped)
    assert not isinstance(caught.value, MissingPackError)  # bench must not time it as a bare graph
    assert f"albert-edge repack {stripped} --from ORIGINAL --out {tmp_path / 'q.packed.tflite'}" in str(caught.value)
    with pytest.raises(StrippedPackError):
        TextClassifier.from_file(stripped)
    for argv in (["predict", str(stripped), "w1"], ["bench", str(stripped), "--out", str(tmp_path / "b")],
                 ["android-assets", str(stripped), str(tmp_path / "assets")]):
        assert main([*argv, "--no-progress"]) == 2
        line = _one_error_line(capsys)
        assert "the ZIP archive that held them is gone" in line and "albert-edge repack" in line, line
        assert "Traceback" not in line
    assert not (tmp_path / "b").exists() and not (tmp_path / "assets").exists()
    assert main(["inspect", str(stripped), "--no-progress"]) == 1  # inspect reports, exit 1 on any disagreement
    disagrees = [line for line in capsys.readouterr().out.splitlines() if line.startswith("DISAGREES")]
    assert len(disagrees) == 1 and "albert-edge repack" in disagrees[0]


def test_a_bare_graph_and_a_bare_onnx_name_the_repack_command(packed, tmp_path):
    from albert_edge.runtime.pack import read_pack_bytes

    bare = strip_tflite_pack(packed[1].read_bytes())
    # A flatbuffer with no TFLITE_METADATA at all: the entry's name is what the reader looks for.
    bare = bare.replace(b"TFLITE_METADATA", b"XFLITE_METADATA")
    with pytest.raises(MissingPackError, match="no ZIP archive after the flatbuffer.*albert-edge repack m.tflite"):
        read_pack_bytes(bare, "m.tflite")
    onnx_file = _stripped_onnx(packed[2], tmp_path / "m.onnx")
    with pytest.raises(MissingPackError, match="metadata_props.*albert-edge repack"):
        read_pack(onnx_file)


@pytest.mark.parametrize("kind", ["tflite", "onnx"])
def test_repack_from_the_packed_original_restores_the_file(packed, tmp_path, capsys, kind):
    original = packed[1] if kind == "tflite" else packed[2]
    strip = _stripped_tflite if kind == "tflite" else _stripped_onnx
    stripped = strip(original, tmp_path / f"q.{kind}")
    out = tmp_path / "fixed" / f"q.{kind}"
    assert main(["repack", str(stripped), "--from", str(original), "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed and "variant fp32" in printed  # weights untouched: the original's tag
    before, after = read_pack(original), read_pack(out)
    assert after.tokenizer_asset == before.tokenizer_asset and after.labels == before.labels
    assert after.max_seq_len == before.max_seq_len and after.task == before.task
    assert after.source["repacked_from"] == original.name
    assert _predict(out, capsys) == _predict(original, capsys)
    if kind == "tflite":
        # Standard metadata rebuilt: what MediaPipe reads names the same files as the original's.
        assert main(["inspect", str(out), "--no-progress"]) == 0
        assert "consistent: metadata, settings and graph agree" in capsys.readouterr().out


def test_repack_from_the_checkpoint_builds_the_pack_convert_would(packed, tmp_path, capsys):
    ckpt, original, _ = packed
    stripped = _stripped_tflite(original, tmp_path / "q.tflite")
    out = tmp_path / "q_packed.tflite"
    assert main(["repack", str(stripped), "--from", str(ckpt), "--labels", "neg,pos", "--out", str(out)]) == 0
    capsys.readouterr()
    pack, want = read_pack(out), read_pack(original)
    # The fixed input length of the stripped file's metadata (32) is the pack's max_seq_len.
    assert (pack.tokenizer_asset, pack.labels, pack.max_seq_len, pack.outputs) == (
        want.tokenizer_asset, want.labels, 32, want.outputs)
    assert pack.variant == "fp32_external"  # a checkpoint says nothing of the file's weight types
    assert _predict(out, capsys) == _predict(original, capsys)


def test_repack_refuses_a_graph_of_another_model_and_writes_nothing(packed, tmp_path, capsys):
    _, other_out = _convert(tmp_path / "other", {"num_labels": 3}, labels="a,b,c")
    capsys.readouterr()
    stripped = _stripped_tflite(other_out / "model_fp32.tflite", tmp_path / "q.tflite")
    out = tmp_path / "fixed" / "q.tflite"
    assert main(["repack", str(stripped), "--from", str(packed[1]), "--out", str(out)]) == 2
    line = _one_error_line(capsys)
    assert line.startswith(f"albert-edge repack: error: {stripped}: not the model of the pack") and "[1, 3]" in line and "has [1, 2]" in line   # batch-one graphs (record 0291)
    assert not out.exists()
    longer = WORDS + [f"x{i}" for i in range(40)]
    _, wide_out = _convert(tmp_path / "wide", {"num_labels": 2, "vocab_size": len(longer)}, words=longer)
    capsys.readouterr()
    stripped = _stripped_onnx(wide_out / "model_fp32.onnx", tmp_path / "w.onnx")
    assert main(["repack", str(stripped), "--from", str(packed[2]), "--out", str(out.with_suffix(".onnx"))]) == 2
    assert "word embedding table has 100 rows, packed model" in _one_error_line(capsys)
    assert not out.parent.exists() or not any(out.parent.iterdir())


def test_repack_never_replaces_a_file_it_did_not_write(packed, tmp_path, capsys):
    stripped = _stripped_tflite(packed[1], tmp_path / "q.tflite")
    kept = stripped.read_bytes()
    assert main(["repack", str(stripped), "--from", str(packed[1]), "--out", str(stripped)]) == 2
    assert "albert-edge did not write" in _one_error_line(capsys)
    assert stripped.read_bytes() == kept
    # Twice into the same --out: the second run replaces the first one's file.
    out = tmp_path / "o" / "q.tflite"
    for _ in range(2):
        assert main(["repack", str(stripped), "--from", str(packed[1]), "--out", str(out)]) == 0
    shutil.rmtree(tmp_path / "o")
    capsys.readouterr()


def test_the_embedding_lookup_form_is_exact_and_reads_like_the_gather_form(packed, tmp_path, capsys):
    from albert_edge.convert.tflite_lookup import gathers_as_embedding_lookups
    from albert_edge.runtime.flatbuffer import read_tflite_graph

    ckpt = packed[0]
    out = tmp_path / "lookup"
    assert main(["convert", str(ckpt), "--out", str(out), "--labels", "neg,pos", "--max-seq-len", "32",
                 "--formats", "tflite", "--embedding-lookup", "--no-progress"]) == 0
    capsys.readouterr()
    model = out / "model_fp32.tflite"
    ops = [op.name for op in read_tflite_graph(strip_tflite_pack(model.read_bytes())).ops]
    assert "EMBEDDING_LOOKUP" in ops and "GATHER" not in ops
    assert _predict(model, capsys) == _predict(packed[1], capsys)
    # Idempotent: nothing left to swap.
    assert gathers_as_embedding_lookups(strip_tflite_pack(model.read_bytes()))[1] == 0


def test_logits_of_both_forms_agree_exactly(packed, tmp_path):
    from albert_edge.runtime import TextClassifier

    lookup = tmp_path / "lookup"
    assert main(["convert", str(packed[0]), "--out", str(lookup), "--labels", "neg,pos", "--max-seq-len", "32",
                 "--formats", "tflite", "--embedding-lookup", "--no-progress"]) == 0
    a = TextClassifier.from_file(packed[1]).predict_batch(TEXTS)
    b = TextClassifier.from_file(lookup / "model_fp32.tflite").predict_batch(TEXTS)
    assert np.array_equal(np.array([p.logits for p in a]), np.array([p.logits for p in b]))


def test_checkpoint_flags_with_a_packed_original_are_refused(packed, tmp_path, capsys):
    stripped = _stripped_tflite(packed[1], tmp_path / "q.tflite")
    assert main(["repack", str(stripped), "--from", str(packed[1]), "--labels", "a,b", "--out",
                 str(tmp_path / "o.tflite")]) == 2
    assert "--labels: only for a checkpoint ORIGINAL" in _one_error_line(capsys)
    assert not (tmp_path / "o.tflite").exists()


def test_repack_reports_a_non_model_file(tmp_path, capsys, packed):
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"not a model at all")
    assert main(["repack", str(junk), "--from", str(packed[1]), "--out", str(tmp_path / "o.tflite")]) == 2
    assert "junk.tflite" in _one_error_line(capsys)
    with pytest.raises(ModelFileError):
        read_pack(junk)
