"""RoBERTa's byte-level BPE in Python (``tokenizer/bytelevel_bpe.py``) against Hugging Face's.

A byte-level BPE is trained by ``tokenizers`` on the tokenizer corpus (Chinese, accented, emoji,
control characters, digits, odd whitespace) and saved by transformers' ``RobertaTokenizer``; ours,
read from that ``tokenizer.json`` or from ``vocab.json`` + ``merges.txt``, must give the same ids for
every corpus text and pair (``<s> a </s></s> b </s>``) and the same character offsets.
"""

from __future__ import annotations

import json

import pytest

from albert_edge.convert.assets import find_tokenizer_asset
from albert_edge.errors import TokenizerError
from albert_edge.tokenizer import Preprocessor, load_tokenizer
from albert_edge.tokenizer.bytelevel_bpe import ByteLevelBPETokenizer, _pretokenize, bytes_to_unicode

transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from tests.support.family_tokenizers import save_family_tokenizer, train_bytelevel_bpe  # noqa: E402
from tests.support.sentencepiece_corpus import corpus_texts, training_sentences  # noqa: E402

EDGES = ["a  b", "  lead ,x", "tail  ", "x\n\ny z", "don't it's we're ''s !'s I'M", "A\u00a0B \u3000c", "tab\there",
         "naïve café 12,345.6", "emoji 😂😂 ok", "\u0085next line"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("roberta_tokenizer")
    save_family_tokenizer(path, "roberta", training_sentences())
    return path


def _texts():
    return [t for t in corpus_texts() + EDGES if t.strip()]


def test_ids_and_offsets_equal_hugging_face_on_the_corpus(folder):
    hf = transformers.RobertaTokenizer.from_pretrained(str(folder))
    asset = find_tokenizer_asset(folder)
    assert asset.kind == "bytelevel_bpe" and asset.do_lower_case is False and asset.vocab_size == len(hf)
    tokenizer = load_tokenizer(asset.kind, asset.data, source="bpe.json")
    ours = Preprocessor(tokenizer, 100_000)
    texts = _texts()
    assert len(texts) > 60
    for text in texts:
        theirs = hf(text, return_offsets_mapping=True)
        assert ours.encode(text).input_ids == theirs["input_ids"], text
        assert [(s, e) for _, s, e in tokenizer.tokenize_with_offsets(text)] == [
            tuple(o) for o in theirs["offset_mapping"][1:-1]], text
    for a, b in zip(texts[::2], texts[1::2]):
        assert ours.encode(a, b).input_ids == hf(a, b)["input_ids"], (a, b)


def test_vocab_json_and_merges_txt_pack_the_same_tokenizer(folder, tmp_path):
    vocab, merges = train_bytelevel_bpe(training_sentences())
    (tmp_path / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    from_files = find_tokenizer_asset(tmp_path)
    from_json = find_tokenizer_asset(folder)
    assert from_files.kind == "bytelevel_bpe" and from_files.path.name == "vocab.json"
    assert from_files.data == from_json.data  # one tokenizer, one byte string
    (tmp_path / "merges.txt").unlink()
    with pytest.raises(TokenizerError, match="vocab.json: byte-level BPE needs merges.txt beside it"):
        find_tokenizer_asset(tmp_path)


def test_the_spelled_out_steps():
    table = bytes_to_unicode()
    assert len(set(table.values())) == 256 and table[ord(" ")] == "Ġ" and table[ord("\n")] == "Ċ"
    spans = _pretokenize("I'm  here!\n\n ok")
    assert [("I'm  here!\n\n ok")[s:e] for s, e in spans] == ["I", "'m", " ", " here", "!", "\n\n", " ok"]
    vocab = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, "a": 4, "b": 5, "ab": 6, "Ġ": 7}
    tok = ByteLevelBPETokenizer(vocab, [("a", "b")])
    assert tok.tokenize("abab a") == ["ab", "ab", "Ġ", "a"]
    with pytest.raises(TokenizerError, match="no <unk>"):
        ByteLevelBPETokenizer({"<s>": 0, "<pad>": 1, "</s>": 2}, [])
    with pytest.raises(TokenizerError, match="not a byte-level BPE asset"):
        ByteLevelBPETokenizer.from_asset(b'{"type": "wordpiece"}', "x.json")
