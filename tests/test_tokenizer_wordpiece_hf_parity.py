"""WordPieceTokenizer + Preprocessor against Hugging Face BertTokenizer, slow and fast.

transformers 5.x: ``BertTokenizer`` is the Rust ``tokenizers`` backend (v4's BertTokenizerFast,
which is now an alias) and the pure-Python v4 ``BertTokenizer`` lives on as
``tokenization_bert_legacy.BertTokenizerLegacy``. Both judge every text of the corpus
(tests/data/tokenizer_corpus.jsonl plus a seeded fuzz set). Both are run with
``split_special_tokens=True``: we treat a literal "[SEP]" in user text as text, not as a
control token (an app must not let input forge segment boundaries).

We equal the Python judge (Google BERT's algorithm plus Hugging Face's NFC step)
everywhere. The Rust judge differs in four documented places, asserted as such below
rather than skipped silently:
  * with ``do_lower_case=False`` it skips the Python judge's NFC, so compatibility
    ideographs (U+F900) and decomposed accents stay as typed;
  * it lower-cases character by character, so a word-final capital sigma becomes "σ"
    where Python's ``str.lower`` gives "ς";
  * its Unicode tables are newer than this Python's ``unicodedata``, so code points
    unassigned in Python (dropped as category Cn) may be kept as [UNK] by Rust;
  * longest-first pair truncation: when both segments are cut to near-equal length,
    Rust gives the odd token to the second segment, the token-at-a-time rule (Python
    judge, and the contract) gives it to the first.
"""

from __future__ import annotations

import random
import unicodedata
from pathlib import Path

import numpy as np
import pytest

from albert_edge.tokenizer import Preprocessor

transformers = pytest.importorskip("transformers")

legacy = pytest.importorskip("transformers.models.bert.tokenization_bert_legacy")

from tests.support.wordpiece_judges import (  # noqa: E402 - needs transformers: after the importorskips
    Judges,
    fuzz_texts,
    generated_vocab,
    load_corpus,
    rust_divergence,
)

ROOT = Path(__file__).resolve().parents[1]
REAL_VOCAB = ROOT / "examples" / "albert_tiny_zh_sentiment" / "vocab.txt"


def without_rust_divergences(text: str, do_lower_case: bool) -> str:
    """``text`` with each documented cause removed: then the Rust judge must agree too."""
    text = "".join(c for c in text if unicodedata.category(c) != "Cn").replace("\u03a3", "\u03c3")
    return text if do_lower_case else unicodedata.normalize("NFC", text)


def corpus_texts() -> list[str]:
    texts = []
    for a, b in load_corpus():
        texts.append(a)
        if b is not None:
            texts.append(b)
    return texts + fuzz_texts()


@pytest.fixture(scope="module", params=[True, False], ids=["lower", "cased"])
def judges(request, tmp_path_factory) -> Judges:
    tmp = tmp_path_factory.mktemp("vocab")
    vocab_file = tmp / "generated_vocab.txt"
    vocab_file.write_text("\n".join(generated_vocab(corpus_texts())) + "\n", encoding="utf-8")
    return Judges(vocab_file, tmp, request.param)


@pytest.fixture(scope="module")
def real_judges(tmp_path_factory) -> Judges:
    if not REAL_VOCAB.is_file():
        pytest.skip(f"real bert-base-chinese vocab not present at {REAL_VOCAB}")
    return Judges(REAL_VOCAB, tmp_path_factory.mktemp("real"), True)


def test_corpus_covers_the_hard_cases():
    text = "".join(corpus_texts())
    for cp in (0x3400, 0x20000, 0xF900, 0x2F800, 0x200B, 0x200D, 0xFEFF, 0x0, 0x7F, 0x1F602, 0xFF01, 0x3002):
        assert chr(cp) in text, hex(cp)
    singles = [a for a, b in load_corpus() if b is None]
    assert "" in singles and any(len(w) > 100 for t in singles for w in t.split())
    assert sum(b is not None for _, b in load_corpus()) >= 10


def check_tokens(j: Judges, texts: list[str]) -> tuple[int, int]:
    """Assert token and id parity on every text; return (compared with Rust, Rust divergences)."""
    rust_compared = rust_diverged = 0
    for text in texts:
        ours = j.ours.tokenize(text)
        assert ours == j.slow_tokens(text), repr(text)
        assert j.ours.convert_tokens_to_ids(ours) == j.slow.convert_tokens_to_ids(ours), repr(text)
        fast_ids = j.fast(text, add_special_tokens=False)["input_ids"]
        if j.ours.convert_tokens_to_ids(ours) == fast_ids:
            rust_compared += 1
        else:
            assert rust_divergence(text, j.ours.do_lower_case) is not None, repr(text)
            neutral = without_rust_divergences(text, j.ours.do_lower_case)
            neutral_ids = j.ours.convert_tokens_to_ids(j.ours.tokenize(neutral))
            assert neutral_ids == j.fast(neutral, add_special_tokens=False)["input_ids"], repr(text)
            rust_diverged += 1
    return rust_compared, rust_diverged


def test_tokens_and_ids_equal_hf_on_corpus_and_fuzz(judges):
    texts = corpus_texts()
    compared, diverged = check_tokens(judges, texts)
    # The Rust comparison must not be vacuous: most texts carry no documented divergence.
    clean = sum(rust_divergence(t, judges.ours.do_lower_case) is None for t in texts)
    assert compared + diverged == len(texts) and clean > 0.6 * len(texts)


def test_known_rust_divergences_are_real(judges):
    # Keeps the documented exceptions honest: each one must actually occur.
    assert judges.ours.tokenize("ΑΣ Β") == judges.slow_tokens("ΑΣ Β")
    if judges.ours.do_lower_case:
        assert judges.fast.tokenize("ΑΣ Β") != judges.ours.tokenize("ΑΣ Β")


def hf_segment_lengths(ids: list[int], sep_id: int) -> tuple[int, int]:
    first = ids.index(sep_id)
    return first - 1, len(ids) - first - 2


@pytest.mark.parametrize("max_len", [6, 9, 16, 64, 128])
def test_pair_and_single_encodings_equal_hf(judges, max_len):
    pre = Preprocessor(judges.ours, max_len)
    for a, b in load_corpus():
        if not judges.ours.tokenize(a) or (b is not None and not judges.ours.tokenize(b)):
            continue
        ours = pre.encode(a, b)
        slow = judges.slow_encode(a, b, max_len)
        assert ours.input_ids == slow["input_ids"], (a, b)
        assert ours.token_type_ids == slow["token_type_ids"], (a, b)
        assert ours.attention_mask == slow["attention_mask"], (a, b)
        full = judges.slow_encode(a, b, None)["input_ids"]
        assert ours.truncated == (len(full) > max_len)
        fast = judges.fast(a, b, truncation="longest_first", max_length=max_len)["input_ids"]
        if fast != ours.input_ids and rust_divergence(a + (b or ""), judges.ours.do_lower_case) is None:
            # Only the documented tie rule may differ: the same two lengths, swapped.
            assert b is not None and ours.truncated
            la, lb = hf_segment_lengths(ours.input_ids, judges.ours.sep_id)
            assert hf_segment_lengths(fast, judges.ours.sep_id) == (lb, la) and abs(la - lb) == 1


def test_padded_batch_equals_hf_max_length_padding(judges):
    texts = [a for a, b in load_corpus() if b is None and judges.ours.tokenize(a)][:40]
    ours = Preprocessor(judges.ours, 32).encode_batch(texts, padding="max_length")
    hf = [judges.slow_encode(t, None, 32, padding="max_length") for t in texts]
    for key in ("input_ids", "attention_mask", "token_type_ids"):
        np.testing.assert_array_equal(getattr(ours, key), np.array([h[key] for h in hf], dtype=np.int32))


def test_real_bert_base_chinese_vocab_equals_hf(real_judges):
    compared, diverged = check_tokens(real_judges, corpus_texts())
    assert compared > 0.9 * (compared + diverged)


def test_real_vocab_sentences_built_from_its_own_entries_equal_hf(real_judges):
    # Random sequences of real vocab entries (words, ## pieces, CJK) stress greedy matching on 21k entries.
    rng = random.Random(7)
    entries = [t for t in real_judges.ours.vocab if not t.startswith("[")]
    texts = ["".join(rng.choice(entries).replace("##", "") + rng.choice(["", "", " ", "，"]) for _ in range(30))
             for _ in range(300)]
    compared, diverged = check_tokens(real_judges, texts)
    assert compared == len(texts) - diverged and compared > 0.9 * len(texts)


def real_sentences() -> list[str]:
    path = REAL_VOCAB.parent / "dev.tsv"
    if not path.is_file():
        pytest.skip(f"real Chinese sentences not present at {path}")
    rows = [line.split("\t", 1) for line in path.read_text(encoding="utf-8").split("\n") if "\t" in line]
    return [text for _, text in rows]


def test_real_chinese_review_sentences_equal_hf(real_judges):
    texts = real_sentences()
    compared, diverged = check_tokens(real_judges, texts)
    assert compared + diverged == len(texts) > 1000


def test_real_chinese_pairs_truncate_like_hf(real_judges):
    texts = real_sentences()[:600]
    pre = Preprocessor(real_judges.ours, 64)
    for a, b in zip(texts[::2], texts[1::2]):
        ours = pre.encode(a, b)
        slow = real_judges.slow_encode(a, b, 64)
        assert (ours.input_ids, ours.token_type_ids) == (slow["input_ids"], slow["token_type_ids"]), (a, b)
