"""litert-quantizer itself on our files: what it keeps, the one-line error, ``repack``, the word table.

A small BERT classifier is converted, quantized with litert-quantizer's documented API
(``recipe.dynamic_wi8_afp32()``), refused by our commands with one line naming the repack command,
repacked, and then run through our runtime: the repacked file must give exactly the logits of
litert-quantizer's raw output run by the same interpreter. With ``convert --embedding-lookup`` the
quantizer also quantizes the word table (a GATHER's stays float).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tensorflow")
pytest.importorskip("litert_quantizer")

from albert_edge.cli import main
from albert_edge.runtime.flatbuffer import read_tflite_graph
from albert_edge.runtime.pack import read_pack, strip_tflite_pack
from tests.support.litert_quantizer import quantize_dynamic_int8
from tests.support.tiny_hf import save_with_vocab, tiny_hf_model

# 4000 x 32 float rows (512 KB): litert-quantizer stores weights past 256 KiB after the flatbuffer
# (``Buffer.offset``), so the GATHER form's output has that layout and the int8 EMBEDDING_LOOKUP form's
# (about 128 KB) the inline one; repack must read and rewrite both.
# Two conversions of a 4000-word model and litert-quantizer in child processes: about two minutes on a
# loaded 2-core machine. CI runs it; the quick tier (-m "not slow") keeps tests/test_repack.py.
pytestmark = pytest.mark.slow

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(3995)]
TEXTS = ["w1 w2 w3", "w7 w40 w41 w9 w12 w150 w151", "w54", "w3 w3 w3 w20 w21 w22 w23 w1900 w3994", "w100 w7"]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """(checkpoint, GATHER-form fp32 .tflite, EMBEDDING_LOOKUP-form fp32 .tflite)."""
    root = tmp_path_factory.mktemp("lq")
    ckpt = root / "ckpt"
    save_with_vocab(tiny_hf_model("bert", "SequenceClassification", num_labels=2, vocab_size=len(WORDS)), ckpt, WORDS)
    files = []
    for name, flags in (("gather", []), ("lookup", ["--embedding-lookup"])):
        assert main(["convert", str(ckpt), "--out", str(root / name), "--labels", "neg,pos", "--max-seq-len", "32",
                     "--formats", "tflite", "--no-progress", *flags]) == 0
        files.append(root / name / "model_fp32.tflite")
    return ckpt, files[0], files[1]


def _word_table(path):
    """(dtype, rows) of the tensor the ids index, and the op reading it."""
    graph = read_tflite_graph(strip_tflite_pack(path.read_bytes()), str(path))
    tensors = {t.index: t for t in graph.tensors}
    for op in graph.ops:
        if op.name in ("GATHER", "EMBEDDING_LOOKUP"):
            table = tensors[op.inputs[0] if op.name == "GATHER" else op.inputs[1]]
            if table.constant and table.shape and table.shape[0] == len(WORDS):
                return op.name, table.dtype
    raise AssertionError(f"{path}: no word-table lookup")


def _buffers(path):
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(path.read_bytes(), 0))
    return model.buffers


def _raw_logits(raw_path, classifier):
    """litert-quantizer's own file, run by our interpreter backend on our tokenizer's inputs."""
    from albert_edge.runtime.backends import open_backend
    from albert_edge.tokenizer import batch_one

    backend = open_backend(raw_path.read_bytes(), str(raw_path), "litert")
    return np.array([backend.run(batch_one(classifier.encode(t)))["logits"][0] for t in TEXTS])


@pytest.mark.parametrize("form", ["gather", "lookup"])
def test_litert_quantizer_output_is_refused_then_repacked_and_predicts_like_its_raw_output(
        converted, tmp_path, capsys, form):
    from albert_edge.runtime import TextClassifier

    ckpt, gather, lookup = converted
    original = gather if form == "gather" else lookup
    raw = quantize_dynamic_int8(original, tmp_path / "q.tflite")
    external = any(b.offset > 1 for b in _buffers(raw))
    assert external == (form == "gather"), "the two buffer layouts are what this test covers"
    assert main(["predict", str(raw), "w1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "vocab.txt, labels.txt, albert_edge.json" in err[0], err
    assert f"albert-edge repack {raw} --from ORIGINAL" in err[0]

    out = tmp_path / "fixed" / "q.tflite"
    assert main(["repack", str(raw), "--from", str(original), "--out", str(out), "--no-progress"]) == 0
    assert "variant int8_external" in capsys.readouterr().out
    assert read_pack(out).labels == ("neg", "pos")
    classifier = TextClassifier.from_file(out)
    repacked = np.array([p.logits for p in classifier.predict_batch(TEXTS, batch_size=1)])
    np.testing.assert_array_equal(repacked, _raw_logits(raw, classifier))
    # The int8 file stays close to fp32 (dynamic int8 of a tiny random model).
    fp32 = np.array([p.logits for p in TextClassifier.from_file(original).predict_batch(TEXTS, batch_size=1)])
    assert np.max(np.abs(repacked - fp32)) < 0.1
    # What MediaPipe reads is back: inspect finds metadata, settings and graph consistent.
    assert main(["inspect", str(out), "--no-progress"]) == 0
    capsys.readouterr()
    # From the checkpoint as well.
    assert main(["repack", str(raw), "--from", str(ckpt), "--labels", "neg,pos", "--out",
                 str(tmp_path / "fixed" / "q_ckpt.tflite"), "--no-progress"]) == 0
    capsys.readouterr()
    again = TextClassifier.from_file(tmp_path / "fixed" / "q_ckpt.tflite")
    np.testing.assert_array_equal(np.array([p.logits for p in again.predict_batch(TEXTS, batch_size=1)]), repacked)


def test_litert_quantizer_quantizes_the_word_table_only_in_the_embedding_lookup_form(converted, tmp_path):
    _, gather, lookup = converted
    assert _word_table(gather) == ("GATHER", "float32")
    assert _word_table(lookup) == ("EMBEDDING_LOOKUP", "float32")
    assert _word_table(quantize_dynamic_int8(gather, tmp_path / "g.tflite")) == ("GATHER", "float32")
    assert _word_table(quantize_dynamic_int8(lookup, tmp_path / "l.tflite")) == ("EMBEDDING_LOOKUP", "int8")
    assert (tmp_path / "l.tflite").stat().st_size < (tmp_path / "g.tflite").stat().st_size


def test_int4_weights_and_word_table_repack_as_int4_external(converted, tmp_path, capsys):
    from albert_edge.runtime import TextClassifier

    _, _, lookup = converted
    raw = quantize_dynamic_int8(lookup, tmp_path / "q4.tflite", recipe="dynamic_wi4_afp32")
    assert _word_table(raw) == ("EMBEDDING_LOOKUP", "int4")
    out = tmp_path / "fixed" / "q4.tflite"
    assert main(["repack", str(raw), "--from", str(lookup), "--out", str(out), "--no-progress"]) == 0
    assert "variant int4_external" in capsys.readouterr().out
    classifier = TextClassifier.from_file(out)
    repacked = np.array([p.logits for p in classifier.predict_batch(TEXTS, batch_size=1)])
    np.testing.assert_array_equal(repacked, _raw_logits(raw, classifier))
