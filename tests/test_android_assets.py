"""``albert-edge android-assets``: the app gets the packed model and goldens true to that model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from albert_edge.android import goldens as android
from albert_edge.cli import main
from albert_edge.errors import ModelFileError
from albert_edge.outputs.claim import MANIFEST
from albert_edge.runtime.pack import (
    ModelPack,
    attach_tflite_pack,
    pack_to_metadata_props,
)
from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer

REPO = Path(__file__).resolve().parents[1]
VOCAB = REPO / android.TEST_RESOURCES / android.VOCAB_FILE
NUM_LABELS = 3
LABELS = ("neg", "neutral", "pos")


def _weights(vocab_size: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return (
        rng.standard_normal((vocab_size, NUM_LABELS)).astype(np.float32),
        rng.standard_normal((2, NUM_LABELS)).astype(np.float32),
    )


def _reference_logits(ids, types, mask, word, typ) -> np.ndarray:
    """Masked mean of per-token scores ``[num_labels]``: what the tiny model computes."""
    scores = word[np.asarray(ids)] + typ[np.asarray(types)]
    m = np.asarray(mask, dtype=np.float64)[:, None]
    return (scores * m).sum(0) / m.sum()


@pytest.fixture(scope="module")
def packed_model(tmp_path_factory) -> Path:
    """A real .tflite with the serving_default signature of albert-edge exports, and a pack."""
    tf = pytest.importorskip("tensorflow")
    vocab_text = VOCAB.read_text(encoding="utf-8")
    word, typ = _weights(WordPieceTokenizer.from_vocab_text(vocab_text).vocab_size)

    class Tiny(tf.Module):
        @tf.function(
            input_signature=[
                tf.TensorSpec([None, None], tf.int32, name="input_ids"),
                tf.TensorSpec([None, None], tf.int32, name="attention_mask"),
                tf.TensorSpec([None, None], tf.int32, name="token_type_ids"),
            ]
        )
        def serve(self, input_ids, attention_mask, token_type_ids):
            scores = tf.gather(tf.constant(word), input_ids) + tf.gather(tf.constant(typ), token_type_ids)
            m = tf.expand_dims(tf.cast(attention_mask, tf.float32), -1)
            return {"logits": tf.reduce_sum(scores * m, axis=1) / tf.reduce_sum(m, axis=1)}

    root = tmp_path_factory.mktemp("tiny")
    module = Tiny()
    tf.saved_model.save(module, str(root / "saved"), signatures={"serving_default": module.serve})
    flatbuffer = tf.lite.TFLiteConverter.from_saved_model(str(root / "saved")).convert()
    pack = ModelPack(
        tokenizer_type="wordpiece",
        tokenizer_asset=vocab_text.encode("utf-8"),
        max_seq_len=32,
        labels=LABELS,
    )
    path = root / "tiny.tflite"
    path.write_bytes(attach_tflite_pack(flatbuffer, pack))
    return path


def test_assets_hold_the_model_unchanged_and_goldens_for_its_vocab(packed_model, tmp_path):
    assert main(["android-assets", str(packed_model), str(tmp_path / "assets")]) == 0
    assets = tmp_path / "assets"
    assert (assets / android.ASSET_MODEL).read_bytes() == packed_model.read_bytes()
    records = [json.loads(line) for line in (assets / android.GOLDEN_TOKENIZATION).read_text(encoding="utf-8").splitlines()]
    tok = WordPieceTokenizer.from_vocab_file(VOCAB)
    first = Preprocessor(tok, 32).encode(android.DEFAULT_SENTENCES[0])
    assert records[0]["input_ids"] == first.input_ids
    assert all(r["max_seq_len"] == 32 for r in records)
    digests = json.loads((assets / android.GOLDEN_CODEPOINTS).read_text(encoding="utf-8"))
    committed = json.loads((REPO / android.TEST_RESOURCES / android.GOLDEN_CODEPOINTS).read_text(encoding="utf-8"))
    assert digests["lower"] == committed["lower"] and "cased" not in digests


def test_golden_logits_are_the_models_own_outputs(packed_model, tmp_path):
    android.write_android_assets(packed_model, tmp_path)
    word, typ = _weights(WordPieceTokenizer.from_vocab_file(VOCAB).vocab_size)
    pre = Preprocessor(WordPieceTokenizer.from_vocab_file(VOCAB), 32)
    lines = [json.loads(line) for line in (tmp_path / android.GOLDEN_LOGITS).read_text(encoding="utf-8").splitlines()]
    assert len(lines) > len(android.DEFAULT_SENTENCES)
    for line in lines:
        enc = pre.encode(line["text_a"], line["text_b"])
        want = _reference_logits(enc.input_ids, enc.token_type_ids, enc.attention_mask, word, typ)
        np.testing.assert_allclose(line["logits"], want, rtol=1e-5, atol=1e-5)
        assert line["label"] == LABELS[int(np.argmax(line["logits"]))]
        assert line["labels"] == list(LABELS)


def test_model_without_pack_is_refused(tmp_path):
    bare = tmp_path / "bare.tflite"
    bare.write_bytes(b"\x1c\x00\x00\x00TFL3" + b"\x00" * 64)
    with pytest.raises(ModelFileError, match="no albert-edge pack"):
        android.write_android_assets(bare, tmp_path / "assets")


def test_onnx_model_is_refused_with_a_reason(tmp_path):
    model = tmp_path / "m.onnx"
    model.write_bytes(b"\x08\x07")
    with pytest.raises(ModelFileError, match="runs .tflite models"):
        android.write_android_assets(model, tmp_path / "assets")


def test_sentencepiece_pack_with_a_broken_model_is_refused_naming_the_file(tmp_path):
    # SentencePiece packs are accepted (albert-core segments them in Java); a broken spiece.model
    # is refused before anything is written.
    from albert_edge.errors import TokenizerError

    pack = ModelPack(tokenizer_type="sentencepiece", tokenizer_asset=b"\x08\x01", labels=("a", "b"))
    model = tmp_path / "sp.tflite"
    model.write_bytes(attach_tflite_pack(b"\x1c\x00\x00\x00TFL3" + b"\x00" * 64, pack))
    with pytest.raises((ModelFileError, TokenizerError), match="sp.tflite"):
        android.write_android_assets(model, tmp_path / "assets")
    assert not (tmp_path / "assets" / android.ASSET_MODEL).exists()
    assert pack_to_metadata_props(pack)  # the same pack is fine for the desktop runtime


def test_cli_without_model_says_what_it_needs(capsys):
    assert main(["android-assets"]) != 0
    assert "expected MODEL and ASSETS_DIR" in capsys.readouterr().err


def _snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture()
def quick_digests(monkeypatch):
    """The code point digests walk all of Unicode (~10 s); these tests are about the files, not them."""
    monkeypatch.setattr(android, "codepoint_digests", lambda vocab_text, casings: {"casings": list(casings)})


def test_a_failed_golden_run_leaves_the_previous_assets_exactly(packed_model, tmp_path, capsys, monkeypatch,
                                                                quick_digests):
    assets = tmp_path / "assets"
    assert main(["android-assets", str(packed_model), str(assets)]) == 0
    before = _snapshot(assets)

    def interpreter_fails(data, pack, cases, source):
        raise ModelFileError(f"{source}: LiteRT cannot run this model")

    monkeypatch.setattr(android, "model_logits", interpreter_fails)
    capsys.readouterr()
    assert main(["android-assets", str(packed_model), str(assets), "--sentences", str(VOCAB)]) == 2
    assert "LiteRT cannot run" in capsys.readouterr().err
    assert _snapshot(assets) == before  # model, goldens and no staging folder or .partial left


def test_stale_golden_logits_of_a_previous_run_are_removed(packed_model, tmp_path, quick_digests):
    assets = tmp_path / "assets"
    android.write_android_assets(packed_model, assets)
    assert (assets / android.GOLDEN_LOGITS).exists()
    (assets / "app_icon.png").write_bytes(b"not ours")
    android.write_android_assets(packed_model, assets, with_logits=False)
    assert sorted(p.name for p in assets.iterdir()) == sorted(
        [android.ASSET_MODEL, android.GOLDEN_TOKENIZATION, android.GOLDEN_CODEPOINTS, "app_icon.png", MANIFEST])
