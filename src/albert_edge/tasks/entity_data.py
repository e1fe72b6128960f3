"""The labelled NER file: JSONL, one ``{"text": str, "entities": [[start, end, label], ...]}`` per line.

``start``/``end`` are character offsets into ``text`` (end exclusive, Python slicing), ``label``
the entity type without a prefix ("PER", not "B-PER"). This is what quantize and bench judge
entity F1 on. Gold spans become per-token tags through the tokenizer's offsets in the model's own
scheme (BIOES when its labels have S-/E- tags, else BIO): a token belongs to an entity when its
characters overlap the span.
"""

from __future__ import annotations

import os
from itertools import pairwise
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from albert_edge.errors import DataError
from albert_edge.tasks.jsonl import iter_jsonl_rows

Example = tuple[str, list[tuple[int, int, str]]]


def read_entity_jsonl(path: str | os.PathLike[str]) -> list[Example]:
    """(text, [(start, end, type), ...]) per line; DataError naming the file and line otherwise."""
    path = Path(path)
    out: list[Example] = []
    for _, where, row in iter_jsonl_rows(path, "labelled entity file"):
        text = row.get("text") if isinstance(row, dict) else None
        entities = row.get("entities", []) if isinstance(row, dict) else None
        if not isinstance(text, str) or not isinstance(entities, list):
            raise DataError(f'{where}: expected {{"text": str, "entities": [[start, end, label], ...]}}')
        spans = []
        for entity in entities:
            ok = (isinstance(entity, list) and len(entity) == 3 and all(isinstance(v, int) and not isinstance(v, bool)
                                                                       for v in entity[:2])
                  and isinstance(entity[2], str) and entity[2] and 0 <= entity[0] < entity[1] <= len(text))
            if not ok:
                raise DataError(f"{where}: entity {entity!r}: expected [start, end, label] with "
                                f"0 <= start < end <= {len(text)}")
            spans.append((entity[0], entity[1], entity[2]))
        _refuse_overlaps(spans, where)
        out.append((text, spans))
    if not out:
        raise DataError(f"{path}: no labelled texts")
    return out


def _refuse_overlaps(spans: Sequence[tuple[int, int, str]], where: str) -> None:
    """BIO tags give each character one entity: of two overlapping gold spans, one was silently lost."""
    ordered = sorted(spans)
    for before, after in pairwise(ordered):
        if after[0] < before[1]:
            raise DataError(f"{where}: entities {list(before)!r} and {list(after)!r} overlap; BIO tags give each "
                            "character at most one entity")


def check_entity_types(examples: Sequence[Example], labels: Sequence[str], source: str) -> None:
    """DataError when a gold entity's type has no tag among the model's ``labels`` (quantize refuses such a
    file while encoding it; a judge that only compares spans must refuse it too, or F1 silently drops)."""
    known = {label.split("-", 1)[1] for label in labels if "-" in label}
    for number, (_, entities) in enumerate(examples, start=1):
        unknown = sorted({kind for _, _, kind in entities} - known)
        if unknown:
            raise DataError(f"{source}: text {number}: entity type {unknown[0]!r} is not one of the model's labels "
                            f"({', '.join(labels)})")


def gold_tags(tokens: Sequence[tuple[str, int, int]], entities: Sequence[tuple[int, int, str]],
              bioes: bool) -> list[str]:
    """One tag per token for the gold ``entities`` (character spans)."""
    tags = ["O"] * len(tokens)
    for start, end, kind in entities:
        inside = [i for i, (_, a, b) in enumerate(tokens) if a < end and b > start]
        for k, i in enumerate(inside):
            if bioes and len(inside) == 1:
                prefix = "S"
            elif k == 0:
                prefix = "B"
            elif bioes and k == len(inside) - 1:
                prefix = "E"
            else:
                prefix = "I"
            tags[i] = f"{prefix}-{kind}"
    return tags


def encode_labelled(examples: Sequence[Example], tokenizer, max_seq_len: int, labels: Sequence[str],
                    source: str) -> tuple[list[dict[str, np.ndarray]], np.ndarray]:
    """Batch-1 samples ([CLS] tokens [SEP], truncated to ``max_seq_len``) and one gold label id per
    real position (-100 for [CLS]/[SEP]), in the row order of ``TokenClassification.judged_values``."""
    bioes = any(label.startswith(("S-", "E-")) for label in labels)
    index = {label: i for i, label in enumerate(labels)}
    samples, gold = [], []
    for number, (text, entities) in enumerate(examples, start=1):
        tokens = tokenizer.tokenize_with_offsets(text)[: max_seq_len - 2]
        if not tokens:
            raise DataError(f"{source}: text {number} has no tokens")
        tags = gold_tags(tokens, entities, bioes)
        missing = sorted({t for t in tags if t not in index})
        if missing:
            raise DataError(f"{source}: text {number}: tag {missing[0]} is not one of the model's labels "
                            f"({', '.join(labels)})")
        ids = [tokenizer.cls_id, *tokenizer.convert_tokens_to_ids([t for t, _, _ in tokens]), tokenizer.sep_id]
        row = np.asarray([ids], np.int32)
        samples.append({"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.zeros_like(row)})
        gold += [-100, *(index[t] for t in tags), -100]
    return samples, np.asarray(gold, dtype=np.int64)
