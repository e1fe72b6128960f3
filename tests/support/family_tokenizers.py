"""RoBERTa's and XLM-R's tokenizers trained in the test. RoBERTa: a byte-level BPE trained by
``tokenizers``, saved by ``RobertaTokenizer`` (``vocab.json``, ``merges.txt``, ``tokenizer.json``). XLM-R: a SentencePiece unigram model saved as fairseq's
``sentencepiece.bpe.model`` (SentencePiece's own id layout, <unk> <s> </s> first), with Hugging Face's
``XLMRobertaTokenizer`` loaded from that folder as the judge of the ids.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import transformers


def train_fairseq_spm(sentences: list[str], vocab_size: int = 90) -> bytes:
    """A tiny unigram SentencePiece model in SentencePiece's default layout (what fairseq ships)."""
    import sentencepiece

    out = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(sentences * 4), model_writer=out,
                                             vocab_size=vocab_size, model_type="unigram", character_coverage=1.0,
                                             minloglevel=2, hard_vocab_limit=False)
    return out.getvalue()


def train_bytelevel_bpe(sentences: list[str], vocab_size: int = 400) -> tuple[dict[str, int], list[str]]:
    """(vocab, merges) of a byte-level BPE trained by ``tokenizers`` as RoBERTa's was (all 256 byte
    symbols, RoBERTa's specials first)."""
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(sentences, vocab_size=vocab_size, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    model = json.loads(tok.to_str())["model"]
    return model["vocab"], [m if isinstance(m, str) else " ".join(m) for m in model["merges"]]


def save_family_tokenizer(folder: Path, family: str, sentences: list[str]):
    """Save ``family``'s tokenizer files into ``folder``; the Hugging Face tokenizer read back from them."""
    if family == "roberta":
        folder.mkdir(parents=True, exist_ok=True)
        vocab, merges = train_bytelevel_bpe(sentences)
        tokenizer = transformers.RobertaTokenizer(vocab=vocab, merges=[tuple(m.split(" ")) for m in merges])
        tokenizer.save_pretrained(str(folder))
        return tokenizer
    if family != "xlm-roberta":
        raise ValueError(f"no test tokenizer for {family}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sentencepiece.bpe.model").write_bytes(train_fairseq_spm(sentences))
    tokenizer = transformers.XLMRobertaTokenizer.from_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return tokenizer
