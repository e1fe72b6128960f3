"""SentencePieceTokenizer: ALBERT preprocessing, the digit-comma re-split, and parity.

Judges: the ``sentencepiece`` processor itself, and Hugging Face ``AlbertTokenizer``
(transformers 5.x: a Rust ``tokenizers`` Unigram built from the spiece.model; the pure
Python v4 AlbertTokenizer is gone). Models: one trained here from in-memory sentences
(always available), and the real unigram models shipped in the ``sentencepiece==0.2.3``
sdist under ``test/`` (fetched once with ``pip download`` into ~/.cache/albert-edge/,
skipped with a reason when that is impossible).

We implement Google ALBERT's ``tokenization.py`` (= v4 Python AlbertTokenizer). The v5
judge differs in documented places, asserted below rather than skipped:
  * it does not re-split digit-comma pieces ("▁12," stays one piece; v4's fast
    converter only approximated the rule with a score penalty);
  * its StripAccents removes every Mn character, ALBERT removes characters with a
    non-zero combining class (Devanagari vowel sign U+0941 is Mn with class 0);
  * it lower-cases per character (no final sigma "ς");
  * its Unigram may choose <unk> over a rare single-character piece and fuses runs of
    unknown characters into one <unk>; sentencepiece (and we) do neither;
  * where two segmentations score exactly the same, it may break the tie the other way;
  * cased, its Unigram matches a literal "[CLS]" in the text against the control
    piece, which sentencepiece never emits from text;
  * it normalises before splitting on whitespace, ALBERT splits first: a vertical tab
    (U+000B) separates words for ALBERT, and vanishes for HF.
Against sentencepiece itself we are exact on every text without a digit-comma piece.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import tempfile
import unicodedata
from pathlib import Path

import pytest

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer import Preprocessor, SentencePieceTokenizer, load_tokenizer

spm = pytest.importorskip("sentencepiece")
model_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")

from tests.support.sentencepiece_corpus import (  # noqa: E402 - needs sentencepiece: after the importorskips
    ENGLISH,
    albert_layout,
    corpus_texts,
    digit_sentences,
    hf_albert,
    training_sentences,
)

SP_VERSION = "0.2.3"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "albert-edge" / f"sentencepiece-{SP_VERSION}-test"
REAL_MODELS = ("botchan_en_unigram_1000.model", "kyoto_ja_unigram_8000.model")
REAL_FILES = (*REAL_MODELS, "botchan.txt")


@pytest.fixture(scope="module")
def trained_model() -> bytes:
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_sentences()), model_writer=buf, vocab_size=600, model_type="unigram",
        character_coverage=0.9995, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, minloglevel=2, num_threads=1,
    )
    return buf.getvalue()


def real_model_dir() -> Path | None:
    """The sdist's test/ dir, downloaded and extracted once into the cache; None if impossible."""
    if all((CACHE / name).is_file() for name in REAL_FILES):
        return CACHE
    with tempfile.TemporaryDirectory() as tmp:
        try:
            subprocess.run(
                # --no-build-isolation: pip still prepares the sdist's metadata, but without first
                # installing build tools into a fresh environment (minutes instead of seconds).
                [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--no-build-isolation", "--quiet",
                 f"sentencepiece=={SP_VERSION}", "-d", tmp],
                check=True, timeout=90, capture_output=True,
            )
            (sdist,) = Path(tmp).glob("sentencepiece-*.tar.gz")
            CACHE.mkdir(parents=True, exist_ok=True)
            with tarfile.open(sdist) as tar:
                for member in tar.getmembers():
                    name = member.name.rsplit("/", 1)[-1]
                    if member.isfile() and "/test/" in member.name and name in REAL_FILES:
                        (CACHE / name).write_bytes(tar.extractfile(member).read())
        except (OSError, subprocess.SubprocessError, ValueError, tarfile.TarError):
            return None
    return CACHE if all((CACHE / name).is_file() for name in REAL_FILES) else None


@pytest.fixture(scope="session")
def real_models() -> Path:
    found = real_model_dir()
    if found is None:
        pytest.skip(f"sentencepiece=={SP_VERSION} sdist test models unavailable (no cache at {CACHE}, pip download failed)")
    return found


def raw_pieces(tok: SentencePieceTokenizer, text: str) -> list[str]:
    """What sentencepiece alone returns for the preprocessed text."""
    pre = tok.preprocess(text)
    return tok._sp.encode(pre, out_type=str) if pre else []


def is_digit_comma(piece: str) -> bool:
    return len(piece) > 1 and piece[-1] == "," and piece[-2].isdigit()


def v5_divergence(tok: SentencePieceTokenizer, text: str, hf_ids: list[int]) -> str | None:
    """Why HF v5 AlbertTokenizer may legitimately differ on ``text`` (module docstring), or None."""
    if any(is_digit_comma(p) for p in raw_pieces(tok, text)):
        return "digit-comma re-split"
    decomposed = unicodedata.normalize("NFKD", text)
    if any(unicodedata.category(c) == "Mn" and not unicodedata.combining(c) for c in decomposed):
        return "Mn with combining class 0"
    if "\u03a3" in text:
        return "final sigma"
    if any(c in "\x0b\x0c\x1c\x1d\x1e\x1f\x85" for c in text):
        return "control char that Python splits on but SentencePiece's normalizer deletes first"
    if any(name in tok.preprocess(text) for name in ("[CLS]", "[SEP]", "[MASK]", "<pad>", "<unk>")):
        return "Rust Unigram matches control pieces written literally in the text"
    if tok.unk_id in hf_ids:
        return "Rust Unigram prefers <unk> over rare pieces and fuses unknown runs"
    ours = tok.convert_tokens_to_ids(raw_pieces(tok, text))
    if abs(sum(map(tok._sp.get_score, ours)) - sum(map(tok._sp.get_score, hf_ids))) < 1e-4:
        return "equal-score segmentations, tie broken differently"
    return None


def assert_parity(tok: SentencePieceTokenizer, hf, texts: list[str]) -> int:
    """Ours vs sentencepiece and vs HF on every text; returns how many HF compared exactly."""
    exact = 0
    for text in texts:
        ours = tok.tokenize(text)
        raw = raw_pieces(tok, text)
        if not any(is_digit_comma(p) for p in raw):
            assert ours == raw, repr(text)
        ids = tok.convert_tokens_to_ids(ours)
        hf_ids = hf(text, add_special_tokens=False)["input_ids"]
        if ids == hf_ids:
            exact += 1
        else:
            assert v5_divergence(tok, text, hf_ids) is not None, (text, ours, hf.convert_ids_to_tokens(hf_ids))
    return exact


def test_trained_model_equals_sentencepiece_and_hf_albert(trained_model, tmp_path):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    texts = corpus_texts()
    exact = assert_parity(tok, hf_albert(trained_model, tmp_path), texts)
    assert exact > 0.7 * len(texts)


def test_cased_model_equals_hf_albert_cased(trained_model, tmp_path):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model, do_lower_case=False)
    assert tok.tokenize("Hello") != SentencePieceTokenizer.from_model_bytes(trained_model).tokenize("Hello")
    assert_parity(tok, hf_albert(trained_model, tmp_path, do_lower_case=False), corpus_texts())


def test_real_english_model_equals_hf_on_botchan(real_models, tmp_path):
    model = albert_layout((real_models / "botchan_en_unigram_1000.model").read_bytes())
    tok = SentencePieceTokenizer.from_model_bytes(model, source="botchan_en_unigram_1000.model")
    lines = [line for line in (real_models / "botchan.txt").read_text("utf-8").split("\n") if line.strip()]
    texts = lines[::3] + corpus_texts()
    exact = assert_parity(tok, hf_albert(model, tmp_path), texts)
    assert exact > 0.9 * len(texts)


def test_real_japanese_model_equals_hf(real_models, tmp_path):
    model = albert_layout((real_models / "kyoto_ja_unigram_8000.model").read_bytes())
    tok = SentencePieceTokenizer.from_model_bytes(model, source="kyoto_ja_unigram_8000.model")
    texts = corpus_texts() + ["日本語の文章です。", "東京都は日本の首都であり、人口は約1400万人です。", "ガギグゲゴ パピプペポ ｶﾞｷﾞ"]
    exact = assert_parity(tok, hf_albert(model, tmp_path), texts)
    assert exact > 0.8 * len(texts)


def test_real_model_without_cls_raises_naming_it(real_models):
    path = real_models / "botchan_en_unigram_1000.model"
    with pytest.raises(TokenizerError, match=r"botchan_en_unigram_1000\.model: SentencePiece model has no \[CLS\], \[SEP\] piece"):
        SentencePieceTokenizer.from_model_file(path)


def test_trained_model_produces_digit_comma_pieces(trained_model):
    # Precondition for the re-split tests below: raw SentencePiece does emit such pieces.
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    assert any(is_digit_comma(p) for p in raw_pieces(tok, "on day 12, we counted 5,000 items, then 3,"))


def test_no_piece_ends_in_digit_then_comma(trained_model):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    for text in digit_sentences():
        assert not any(is_digit_comma(p) for p in tok.tokenize(text)), text


def test_resplit_keeps_the_text_of_every_piece(trained_model):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    for text in digit_sentences():
        assert "".join(tok.tokenize(text)) == "".join(raw_pieces(tok, text)), text


def test_word_initial_digit_comma_piece_becomes_reencoded_digits_plus_comma(trained_model):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    raw = raw_pieces(tok, "day 5, then")
    pos = next(i for i, p in enumerate(raw) if is_digit_comma(p))
    assert raw[pos].startswith("\u2581")
    expected = raw[:pos] + tok._sp.encode(raw[pos][1:-1], out_type=str) + [","] + raw[pos + 1:]
    assert tok.tokenize("day 5, then") == expected


def test_mid_word_digit_comma_piece_drops_the_added_boundary_marker(trained_model):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    for text in digit_sentences():
        raw = raw_pieces(tok, text)
        pos = next((i for i, p in enumerate(raw) if is_digit_comma(p)), None)
        if pos is None or raw[pos].startswith("\u2581"):
            continue
        digits = tok._sp.encode(raw[pos][:-1], out_type=str)
        # Re-encoding "000" yields "▁000" or "▁", "000": the marker was not in the text, so it goes.
        digits = digits[1:] if digits[0] == "\u2581" else [digits[0][1:], *digits[1:]]
        out = tok.tokenize(text)
        assert out[:pos] == raw[:pos]
        assert out[pos : pos + len(digits) + 1] == [*digits, ","]
        return
    pytest.fail("no text whose first digit-comma piece is mid-word")


def test_preprocess_collapses_spaces_normalises_quotes_strips_accents_lowercases(trained_model):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    assert tok.preprocess("  A  ``B''\tCafé  ") == 'a "b" cafe'


def test_keep_accents_keeps_them(trained_model):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model, keep_accents=True)
    assert tok.preprocess("Café") == "café"


def test_pair_encoding_equals_hf_albert(trained_model, tmp_path):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    hf = hf_albert(trained_model, tmp_path)
    pre = Preprocessor(tok, 96)
    for a, b in [("The quick brown fox.", "A lazy dog sleeps."), ("short", ENGLISH[1]), (ENGLISH[1], ENGLISH[2])]:
        ours = pre.encode(a, b)
        theirs = hf(a, b, truncation="longest_first", max_length=96, return_token_type_ids=True)
        assert not ours.truncated
        assert ours.input_ids == theirs["input_ids"]
        assert ours.token_type_ids == theirs["token_type_ids"]
        assert ours.attention_mask == theirs["attention_mask"]


def test_special_ids_come_from_the_model(trained_model):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    sp = spm.SentencePieceProcessor(model_proto=trained_model)
    assert (tok.pad_id, tok.unk_id) == (0, 1)
    assert (tok.cls_id, tok.sep_id) == (sp.piece_to_id("[CLS]"), sp.piece_to_id("[SEP]"))
    assert tok.vocab_size == sp.get_piece_size() and tok.kind == "sentencepiece"


def test_unknown_piece_maps_to_unk_id(trained_model):
    tok = SentencePieceTokenizer.from_model_bytes(trained_model)
    assert tok.convert_tokens_to_ids(["no-such-piece-xyz"]) == [tok.unk_id]


def test_empty_text_gives_no_pieces(trained_model):
    assert SentencePieceTokenizer.from_model_bytes(trained_model).tokenize("   ") == []


def test_load_tokenizer_builds_sentencepiece_from_pack_bytes(trained_model):
    tok = load_tokenizer("sentencepiece", trained_model, do_lower_case=False, source="m.tflite")
    assert isinstance(tok, SentencePieceTokenizer) and not tok.do_lower_case
    assert tok.tokenize("The Fox") == SentencePieceTokenizer.from_model_bytes(trained_model, False).tokenize("The Fox")


def test_garbage_model_bytes_raise_naming_source():
    with pytest.raises(TokenizerError, match="bad.model: not a valid SentencePiece model"):
        SentencePieceTokenizer.from_model_bytes(b"\x00not a model\xff", source="bad.model")


def test_missing_model_file_raises_naming_it(tmp_path):
    with pytest.raises(TokenizerError, match="nope.model: cannot read SentencePiece model"):
        SentencePieceTokenizer.from_model_file(tmp_path / "nope.model")


def test_invalid_utf8_text_raises(trained_model):
    with pytest.raises(TokenizerError, match="not valid UTF-8"):
        SentencePieceTokenizer.from_model_bytes(trained_model).tokenize(b"\x80abc")
