"""XLM-R's tokenizer trained in the test: a SentencePiece unigram model saved as fairseq's
``sentencepiece.bpe.model`` (SentencePiece's own id layout, <unk> <s> </s> first), with Hugging Face's
``XLMRobertaTokenizer`` loaded from that folder as the judge of the ids.
"""

from __future__ import annotations

import io
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


def save_family_tokenizer(folder: Path, family: str, sentences: list[str]):
    """Save ``family``'s tokenizer files into ``folder``; the Hugging Face tokenizer read back from them."""
    if family != "xlm-roberta":
        raise ValueError(f"no test tokenizer for {family}")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sentencepiece.bpe.model").write_bytes(train_fairseq_spm(sentences))
    tokenizer = transformers.XLMRobertaTokenizer.from_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return tokenizer
