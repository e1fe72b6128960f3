"""WordPiece character offsets against Hugging Face's ``BertTokenizerFast(return_offsets_mapping=True)``.

The judge is transformers' Rust BertTokenizer (v5's BertTokenizerFast). On the tokenizer corpus
and the seeded fuzz set (the same texts and generated vocab as test_tokenizer_wordpiece_hf_parity),
every (token, start, end) triple must equal Hugging Face's, except on texts where the TOKENS
already differ for the documented reasons of that module (``rust_divergence``), and one offsets-only
corner: combining marks typed out of canonical order (ccc decreasing). NFC reorders them and the
Rust aligner then credits the surviving mark to a different one of the two original code points;
both answers cover the same characters' cluster, ours keeps each mark's own position.
Measured: lower-cased 477 of 478 texts identical (the 1 is the mark-order case), cased 318 of 318.
Runtime: about 3 s.
"""

from __future__ import annotations

import tempfile
import unicodedata
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from tests.support.wordpiece_judges import (  # noqa: E402 - needs transformers: after the importorskip
    Judges,
    fuzz_texts,
    generated_vocab,
    load_corpus,
    rust_divergence,
)


def marks_out_of_canonical_order(text: str) -> bool:
    """True when two adjacent combining marks are not in canonical (ccc) order, so NFC reorders them."""
    ccc = [unicodedata.combining(c) for c in text]
    return any(a > b > 0 for a, b in zip(ccc, ccc[1:]))


def all_texts() -> list[str]:
    rows = load_corpus()
    return [a for a, _ in rows] + [b for _, b in rows if b] + fuzz_texts()


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_offsets_equal_hf_fast_on_corpus_and_fuzz(do_lower_case):
    texts = all_texts()
    with tempfile.TemporaryDirectory() as tmp:
        vocab = Path(tmp) / "v.txt"
        vocab.write_text("\n".join(generated_vocab(texts)) + "\n", encoding="utf-8")
        judges = Judges(vocab, Path(tmp), do_lower_case)
        compared = reordered = 0
        for text in texts:
            if rust_divergence(text, do_lower_case):
                continue
            enc = judges.fast(text, add_special_tokens=False, return_offsets_mapping=True)
            hf = [(tok, a, b) for tok, (a, b) in zip(judges.fast.convert_ids_to_tokens(enc["input_ids"]),
                                                     enc["offset_mapping"])]
            ours = judges.ours.tokenize_with_offsets(text)
            assert [t for t, _, _ in ours] == judges.ours.tokenize(text)
            if marks_out_of_canonical_order(text) and hf != ours:
                reordered += 1
                assert [t for t, _, _ in hf] == [t for t, _, _ in ours]
                continue
            assert ours == hf, text
            compared += 1
        assert compared >= 300 and reordered <= 2


def test_offsets_cut_the_original_text_including_case_accents_and_cjk():
    from albert_edge.tokenizer import WordPieceTokenizer

    tok = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "paris", "##ian", "cafe", "北", "京", ","], True)
    # A stripped accent vanishes from the span (as in Hugging Face), its base letter stays.
    text = "  Parisian Cafe\u0301,北京 Zürich"
    got = tok.tokenize_with_offsets(text)
    assert [(t, text[a:b]) for t, a, b in got] == [
        ("paris", "Paris"), ("##ian", "ian"), ("cafe", "Cafe"), (",", ","), ("北", "北"), ("京", "京"),
        ("[UNK]", "Zürich")]
    assert tok.tokenize_with_offsets(b"\xe5\x8c\x97") == [("北", 0, 1)] and tok.tokenize_with_offsets("") == []


# ---------------------------------------------------------------------------------------- SentencePiece
#
# Judge: transformers v5's Rust AlbertTokenizer (``return_offsets_mapping=True``) with a SentencePiece
# model trained in test_tokenizer_sentencepiece. Compared on texts where its PIECES equal ours (it
# differs on some for the reasons that module lists: v5_divergence). There, every (piece, start, end)
# equals Hugging Face's except a `` or '' pair normalised to one '"': we span both original
# characters, Hugging Face only the second. Measured: lower-cased 75 of 78 piece-equal texts
# identical (the 3 are quote pairs), 24 corpus texts have different pieces. Runtime: about 3 s.

def quote_pair(text: str) -> bool:
    return "``" in text or "''" in text


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_sentencepiece_offsets_equal_hf_albert_where_pieces_agree(do_lower_case, tmp_path):
    import io

    import sentencepiece as spm

    from albert_edge.tokenizer.spiece import SentencePieceTokenizer
    from tests.support.sentencepiece_corpus import albert_layout, corpus_texts, hf_albert, training_sentences

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_sentences()), model_writer=buf, vocab_size=600, model_type="unigram",
        character_coverage=0.9995, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, minloglevel=2, num_threads=1)
    model = albert_layout(buf.getvalue())
    hf = hf_albert(model, tmp_path, do_lower_case)
    ours = SentencePieceTokenizer.from_model_bytes(model, do_lower_case)
    compared = quotes = 0
    for text in corpus_texts():
        mine = ours.tokenize_with_offsets(text)
        assert [p for p, _, _ in mine] == ours.tokenize(text), text
        assert all(0 <= a <= b <= len(text) for _, a, b in mine)
        enc = hf(text, add_special_tokens=False, return_offsets_mapping=True)
        theirs = [(p, a, b) for p, (a, b) in zip(hf.convert_ids_to_tokens(enc["input_ids"]), enc["offset_mapping"])]
        if [p for p, _, _ in theirs] != [p for p, _, _ in mine]:
            continue
        if quote_pair(text) and theirs != mine:
            quotes += 1
            continue
        assert mine == theirs, text
        compared += 1
    assert compared >= 60 and quotes <= 4


def test_sentencepiece_offsets_cut_words_out_of_the_original_text():
    import io

    import sentencepiece as spm

    from albert_edge.tokenizer.spiece import SentencePieceTokenizer
    from tests.support.sentencepiece_corpus import albert_layout, training_sentences

    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_sentences()), model_writer=buf, vocab_size=600, model_type="unigram",
        character_coverage=0.9995, control_symbols=["[CLS]", "[SEP]", "[MASK]"],
        pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, minloglevel=2, num_threads=1)
    tok = SentencePieceTokenizer.from_model_bytes(albert_layout(buf.getvalue()), True)
    text = "  The  QUICK café\tsaid ``hello''"
    got = tok.tokenize_with_offsets(text)
    # Every visible character is covered once, in order (a bare "▁" borrows the next character's
    # span, as in Hugging Face, so it is left out here); whitespace never starts a span.
    covered = "".join(text[a:b] for piece, a, b in got if piece != "\u2581")
    assert covered.replace("`", "").replace("'", "") == "".join(text.split()).replace("`", "").replace("'", "")
    assert all(not text[a:b][:1].isspace() for _, a, b in got)
    assert tok.tokenize_with_offsets("") == [] and tok.tokenize_with_offsets("   ") == []
