"""Whether a tokenizer belongs to an embedding table: one rule for convert, quantize, finetune and the runtime.

A vocab with more tokens than the table has rows indexes past it. One with fewer is either padding
(checkpoints round the table up to a multiple of 8..128 for faster matmuls; ids never reach the
extra rows) or another model's vocab, where every id would name a different word than in training
and the model would still convert, pass parity and run. The rule lives here, below convert and the
runtime, so that a file convert accepts is never one the runtime refuses.
"""

from __future__ import annotations

#: Checkpoints may pad the embedding table to a multiple of one of these for faster matmuls
#: (Megatron BERT: 30522 tokens -> 30592 rows; fairseq/HF models: multiples of 8).
PADDING_MULTIPLES = (8, 16, 32, 64, 128)


def padded_sizes(tokens: int) -> set[int]:
    """Row counts a table for ``tokens`` tokens may have: exactly ``tokens``, or it rounded up to a multiple."""
    return {tokens} | {-(-tokens // multiple) * multiple for multiple in PADDING_MULTIPLES}


def vocab_fits(tokens: int, embedding_rows: int) -> bool:
    """True when a ``tokens``-token vocab belongs to a table of ``embedding_rows`` rows (equal, or padding)."""
    return embedding_rows in padded_sizes(tokens)
