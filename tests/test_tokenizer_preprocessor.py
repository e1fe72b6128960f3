"""Preprocessor behaviours: special tokens, segment ids, truncation, padding, batches, bad input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from albert_edge.errors import TokenizerError
from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer, longest_first_lengths

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
CHARS = list("一二三四五六七八九十甲乙")


@pytest.fixture(scope="module")
def tok() -> WordPieceTokenizer:
    return WordPieceTokenizer.from_vocab_text("\n".join(SPECIALS + CHARS))


def ids_of(text: str) -> list[int]:
    return [len(SPECIALS) + CHARS.index(c) for c in text]


def test_single_text_is_cls_text_sep_with_segment_zero(tok):
    enc = Preprocessor(tok, 16).encode("一二三")
    assert enc.input_ids == [2, *ids_of("一二三"), 3]
    assert enc.token_type_ids == [0] * 5
    assert enc.attention_mask == [1] * 5
    assert (enc.length, enc.truncated) == (5, False)
    assert enc.tokens == ["[CLS]", "一", "二", "三", "[SEP]"]


def test_pair_puts_second_segment_and_its_sep_in_segment_one(tok):
    enc = Preprocessor(tok, 16).encode("一二", "三四五")
    assert enc.input_ids == [2, *ids_of("一二"), 3, *ids_of("三四五"), 3]
    assert enc.token_type_ids == [0, 0, 0, 0, 1, 1, 1, 1]


def test_single_text_is_truncated_from_the_end_to_max_seq_len(tok):
    enc = Preprocessor(tok, 5).encode("一二三四五六")
    assert enc.input_ids == [2, *ids_of("一二三"), 3]
    assert enc.truncated and enc.length == 5


def test_text_that_fits_exactly_is_not_truncated(tok):
    enc = Preprocessor(tok, 5).encode("一二三")
    assert not enc.truncated and enc.length == 5


def test_pair_truncation_takes_from_the_longer_segment_first(tok):
    enc = Preprocessor(tok, 9).encode("一二三四五六七八", "甲乙")
    assert enc.tokens == ["[CLS]", "一", "二", "三", "四", "[SEP]", "甲", "乙", "[SEP]"]
    assert enc.truncated


def test_pair_truncation_on_a_tie_takes_from_the_second_segment(tok):
    enc = Preprocessor(tok, 8).encode("一二三", "四五六")  # budget 5 of 6
    assert enc.tokens == ["[CLS]", "一", "二", "三", "[SEP]", "四", "五", "[SEP]"]


def test_closed_form_equals_one_token_at_a_time_loop():
    for len_a in range(0, 14):
        for len_b in range(0, 14):
            for budget in range(0, 30):
                a, b = len_a, len_b
                while a + b > budget:
                    if a > b:
                        a -= 1
                    else:
                        b -= 1
                assert longest_first_lengths(len_a, len_b, budget) == (a, b), (len_a, len_b, budget)


def test_pad_to_fills_with_pad_id_and_zero_mask(tok):
    enc = Preprocessor(tok, 16).encode("一", pad_to=6)
    assert enc.input_ids == [2, ids_of("一")[0], 3, 0, 0, 0]
    assert enc.attention_mask == [1, 1, 1, 0, 0, 0]
    assert enc.token_type_ids == [0] * 6
    assert enc.length == 3


def test_pad_to_shorter_than_encoding_raises(tok):
    with pytest.raises(TokenizerError, match="pad_to: 2 is shorter"):
        Preprocessor(tok, 16).encode("一二", pad_to=2)


def test_batch_pads_to_longest_as_int32(tok):
    batch = Preprocessor(tok, 16).encode_batch(["一", "一二三"])
    assert batch.input_ids.dtype == np.int32 and batch.input_ids.shape == (2, 5)
    assert batch.input_ids.tolist() == [[2, *ids_of("一"), 3, 0, 0], [2, *ids_of("一二三"), 3]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 0, 0], [1] * 5]
    assert batch.lengths == [3, 5] and batch.truncated == [False, False]


def test_batch_max_length_padding_uses_max_seq_len(tok):
    batch = Preprocessor(tok, 10).encode_batch(["一"], padding="max_length")
    assert batch.input_ids.shape == (1, 10)
    assert set(batch.as_dict()) == {"input_ids", "attention_mask", "token_type_ids"}


def test_batch_pairs_set_segment_ids_and_truncated_flags(tok):
    batch = Preprocessor(tok, 6).encode_batch(["一", "一二三四"], pairs=["二", "五六七"])
    assert batch.token_type_ids.tolist() == [[0, 0, 0, 1, 1, 0], [0, 0, 0, 0, 1, 1]]
    assert batch.truncated == [False, True]


def test_batch_rows_equal_single_encodings(tok):
    pre = Preprocessor(tok, 7)
    texts = ["一二三四五六七八", "九", "十甲乙"]
    batch = pre.encode_batch(texts)
    for row, text in enumerate(texts):
        enc = pre.encode(text, pad_to=batch.input_ids.shape[1])
        assert batch.input_ids[row].tolist() == enc.input_ids
        assert batch.attention_mask[row].tolist() == enc.attention_mask


def test_empty_text_raises(tok):
    with pytest.raises(TokenizerError, match="text_a: text '' has no tokens"):
        Preprocessor(tok).encode("")


def test_whitespace_only_second_text_raises(tok):
    with pytest.raises(TokenizerError, match="text_b: .* has no tokens"):
        Preprocessor(tok).encode("一", "  \u3000 ")


def test_none_in_batch_raises_naming_its_index(tok):
    with pytest.raises(TokenizerError, match=r"texts\[1\]: expected a string, got None"):
        Preprocessor(tok).encode_batch(["一", None])


def test_non_utf8_bytes_in_batch_raise_naming_index(tok):
    with pytest.raises(TokenizerError, match=r"pairs\[0\]: not valid UTF-8"):
        Preprocessor(tok).encode_batch(["一"], pairs=[b"\xfe"])


def test_empty_batch_raises(tok):
    with pytest.raises(TokenizerError, match="batch is empty"):
        Preprocessor(tok).encode_batch([])


def test_a_bare_string_is_not_a_batch(tok):
    with pytest.raises(TokenizerError, match="expected a list of strings"):
        Preprocessor(tok).encode_batch("一二三")


def test_pairs_must_match_texts_in_length(tok):
    with pytest.raises(TokenizerError, match="pairs: expected a list of 2"):
        Preprocessor(tok).encode_batch(["一", "二"], pairs=["三"])


def test_unknown_padding_mode_raises(tok):
    with pytest.raises(TokenizerError, match="padding: expected"):
        Preprocessor(tok).encode_batch(["一"], padding="right")


@pytest.mark.parametrize("bad", [1, 0, "128", True])
def test_bad_max_seq_len_raises(tok, bad):
    with pytest.raises(TokenizerError, match="max_seq_len"):
        Preprocessor(tok, bad)


def test_max_seq_len_too_small_for_a_pair_raises(tok):
    with pytest.raises(TokenizerError, match="no room for a pair"):
        Preprocessor(tok, 4).encode("一", "二")


def test_importing_the_tokenizer_pulls_in_no_heavy_framework():
    # The runtime embeds this package on device: no TensorFlow/torch/transformers, and
    # sentencepiece only once a SentencePiece model is actually loaded.
    code = (
        "import sys, albert_edge.tokenizer as t; "
        "heavy = [m for m in ('tensorflow', 'torch', 'transformers', 'tokenizers', 'sentencepiece') if m in sys.modules]; "
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
