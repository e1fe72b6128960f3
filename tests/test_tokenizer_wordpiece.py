"""WordPieceTokenizer behaviours, one per test, on small vocabs written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer import WordPieceTokenizer, load_tokenizer

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["un", "##aff", "##able", "hello", "world", "cafe", "##s", "a", "##a", "中", "国", "人", ",", ".", "!", "？",
         "豈", "\u8c48", "㐀", "\U00020000", "丽", "\u4e3d", "x"]


def make(words=WORDS, do_lower_case: bool = True) -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab_text("\n".join(SPECIALS + list(words)) + "\n", do_lower_case=do_lower_case)


def test_greedy_longest_match_uses_double_hash_continuations():
    assert make().tokenize("unaffable") == ["un", "##aff", "##able"]


def test_word_with_uncoverable_suffix_becomes_single_unk():
    assert make().tokenize("unaffablez") == ["[UNK]"]


def test_word_over_100_chars_is_unk_even_if_coverable():
    tok = make()
    assert tok.tokenize("a" * 100) == ["a"] + ["##a"] * 99
    assert tok.tokenize("a" * 101) == ["[UNK]"]


def test_every_cjk_ideograph_is_its_own_word():
    assert make().tokenize("中国人") == ["中", "国", "人"]


def test_cjk_extension_a_and_b_are_split_per_character():
    assert make().tokenize("x㐀\U00020000x") == ["x", "㐀", "\U00020000", "x"]


def test_compatibility_ideographs_are_split_then_nfd_mapped_when_lower_casing():
    # U+F900 and U+2F800 have canonical decompositions (U+8C48, U+4E3D); accent stripping applies NFD.
    assert make().tokenize("x豈\U0002f800") == ["x", "\u8c48", "\u4e3d"]
    assert make(do_lower_case=False).tokenize("豈") == ["\u8c48"]  # NFC maps it too (Hugging Face)


def test_punctuation_is_split_off_including_full_width():
    assert make().tokenize("hello,world！") == ["hello", ",", "world", "[UNK]"]
    assert make().tokenize("中？") == ["中", "？"]


def test_lower_casing_strips_accents():
    assert make().tokenize("CAFÉS") == ["cafe", "##s"]


def test_cased_mode_keeps_case_and_accents():
    assert make(do_lower_case=False).tokenize("Cafe café") == ["[UNK]", "[UNK]"]


def test_control_and_zero_width_characters_are_removed():
    assert make().tokenize("hel\u200blo\x00 wor\ufeffld\x07") == ["hello", "world"]


def test_whitespace_variants_separate_words():
    assert make().tokenize("hello\u3000world\thello\u00a0world") == ["hello", "world", "hello", "world"]


def test_empty_and_whitespace_only_text_give_no_tokens():
    assert make().tokenize("") == []
    assert make().tokenize(" \t\n\u3000") == []


def test_utf8_bytes_are_accepted():
    assert make().tokenize("中国".encode("utf-8")) == ["中", "国"]


def test_invalid_utf8_bytes_raise_with_offset():
    with pytest.raises(TokenizerError, match="not valid UTF-8.*offset 1"):
        make().tokenize(b"a\xff")


def test_none_text_raises():
    with pytest.raises(TokenizerError, match="got None"):
        make().tokenize(None)


def test_unknown_tokens_convert_to_unk_id():
    tok = make()
    assert tok.convert_tokens_to_ids(["hello", "nope"]) == [len(SPECIALS) + WORDS.index("hello"), 1]
    assert tok.unk_id == 1


def test_ids_are_line_numbers_and_round_trip():
    tok = make()
    ids = tok.convert_tokens_to_ids(["[CLS]", "hello", "[SEP]"])
    assert ids == [2, len(SPECIALS) + WORDS.index("hello"), 3]
    assert tok.convert_ids_to_tokens(ids) == ["[CLS]", "hello", "[SEP]"]
    assert (tok.cls_id, tok.sep_id, tok.pad_id, tok.vocab_size) == (2, 3, 0, len(SPECIALS) + len(WORDS))


def test_out_of_range_id_raises():
    with pytest.raises(TokenizerError, match="token id -1 outside"):
        make().convert_ids_to_tokens([-1])


def test_crlf_vocab_gives_same_tokens_as_lf():
    text = "\n".join(SPECIALS + WORDS)
    lf = WordPieceTokenizer.from_vocab_text(text)
    crlf = WordPieceTokenizer.from_vocab_text(text.replace("\n", "\r\n"))
    assert crlf.vocab == lf.vocab


def test_vocab_lines_split_only_on_newline():
    # U+2028 is a real bert-base-chinese vocab entry (line 343); splitlines() would break on it.
    tok = WordPieceTokenizer.from_vocab_text("\n".join(SPECIALS + ["\u2028", "x"]))
    assert tok.vocab_size == len(SPECIALS) + 2
    assert tok.vocab["x"] == len(SPECIALS) + 1


@pytest.mark.parametrize("missing", ["[CLS]", "[SEP]", "[UNK]"])
def test_vocab_without_required_special_raises_naming_source(missing):
    words = [t for t in SPECIALS if t != missing] + WORDS
    with pytest.raises(TokenizerError, match=rf"my\.vocab: vocab has no \{missing[0]}"):
        WordPieceTokenizer.from_vocab_text("\n".join(words), source="my.vocab")


def test_non_utf8_vocab_file_raises_naming_file(tmp_path: Path):
    path = tmp_path / "vocab.txt"
    path.write_bytes("\n".join(SPECIALS).encode() + b"\n\xc3\x28\n")
    with pytest.raises(TokenizerError, match=r"vocab\.txt: vocab is not valid UTF-8"):
        WordPieceTokenizer.from_vocab_file(path)


def test_missing_vocab_file_raises_naming_file(tmp_path: Path):
    with pytest.raises(TokenizerError, match="nothere.txt: cannot read vocab file"):
        WordPieceTokenizer.from_vocab_file(tmp_path / "nothere.txt")


def test_load_tokenizer_builds_wordpiece_from_pack_bytes():
    tok = load_tokenizer("wordpiece", "\n".join(SPECIALS + WORDS).encode(), do_lower_case=True, source="m.tflite")
    assert isinstance(tok, WordPieceTokenizer) and tok.kind == "wordpiece"
    assert tok.tokenize("Hello") == ["hello"]


def test_load_tokenizer_rejects_unknown_kind_naming_source():
    with pytest.raises(TokenizerError, match="m.onnx: unknown tokenizer type 'bpe'"):
        load_tokenizer("bpe", b"", do_lower_case=True, source="m.onnx")


def test_error_messages_are_one_line():
    with pytest.raises(TokenizerError) as info:
        WordPieceTokenizer.from_vocab_text("a\nb\n", source="x\nvocab")
    assert "\n" not in str(info.value)


def test_empty_vocab_raises_naming_source():
    with pytest.raises(TokenizerError, match="empty.txt: vocab is empty"):
        WordPieceTokenizer.from_vocab_text("", source="empty.txt")


def test_word_memo_overflow_does_not_change_results(monkeypatch):
    import albert_edge.tokenizer.wordpiece as wordpiece

    text = "hello 中国 unaffable cafés world 人 hello"
    expected = make().tokenize(text)
    monkeypatch.setattr(wordpiece, "_CACHE_LIMIT", 2)
    tok = make()
    assert [tok.tokenize(text) for _ in range(3)] == [expected] * 3
    assert len(tok._word_cache) <= 2


def test_character_table_stops_growing_at_its_limit_without_changing_results(monkeypatch):
    import albert_edge.tokenizer._text as text_mod

    rare = "".join(chr(cp) for cp in range(0x1E900, 0x1E95F)) + " 中\u200b国 hello"  # Adlam: unlikely seen before
    expected = make().tokenize(rare)
    monkeypatch.setattr(text_mod, "_CLEAN_TABLE_LIMIT", 0)
    before = len(text_mod.CLEAN_TABLE)
    assert make().tokenize(rare + " \U000104b0\U000104b1") == expected + ["[UNK]"]  # Osage letters
    assert len(text_mod.CLEAN_TABLE) == before


def test_a_unified_ideograph_skips_the_normalisation_it_would_not_change():
    """_tokenize_word answers a single unified ideograph without NFC, lower case, accent stripping and the
    punctuation split: for every such character, in both cases, that is what the full normalisation gives."""
    import unicodedata

    from albert_edge.tokenizer._text import split_on_punctuation, strip_accents_nfd

    for lower in (True, False):
        tok = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "好"], do_lower_case=lower)
        for cp in [*range(0x3400, 0x4DC0), *range(0x4E00, 0xA000)]:
            ch = chr(cp)
            word = unicodedata.normalize("NFC", ch)
            word = strip_accents_nfd(word.lower()) if lower else word
            assert [p for sub in word.split() for p in split_on_punctuation(sub)] == [ch], hex(cp)
        assert tok._tokenize_word("好") == ("好",) and tok._tokenize_word("坏") == ("[UNK]",)
        assert tok._tokenize_word("\uf900") == tok._tokenize_word("\u8c48")   # a compatibility one still composes
