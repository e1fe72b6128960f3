"""Floor 1: text -> model inputs for Chinese (WordPiece) and Google (SentencePiece) ALBERT.

One role per class: a tokenizer maps text to tokens and ids, the :class:`Preprocessor`
maps ids to encoder inputs (``[CLS] a [SEP] b [SEP]``, segment ids, truncation, padding).
Both tokenizers reproduce the reference implementations the checkpoints were trained with
(Google BERT / ALBERT ``tokenization.py``, equal to Hugging Face's BertTokenizer and
AlbertTokenizer); the tests prove it on a corpus of awkward text.
"""

from albert_edge.tokenizer.loader import load_tokenizer
from albert_edge.tokenizer.preprocessor import BatchEncoding, Encoding, Preprocessor, batch_one, longest_first_lengths
from albert_edge.tokenizer.spiece import SentencePieceTokenizer
from albert_edge.tokenizer.wordpiece import WordPieceTokenizer

__all__ = [
    "BatchEncoding",
    "Encoding",
    "Preprocessor",
    "SentencePieceTokenizer",
    "WordPieceTokenizer",
    "batch_one",
    "load_tokenizer",
    "longest_first_lengths",
]
