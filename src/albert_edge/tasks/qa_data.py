"""The question-answering eval file: SQuAD-style JSONL, one question per line.

    {"question": str, "context": str, "answers": [{"text": str, "answer_start": int}, ...], "id": ...}

``answers`` may also be Hugging Face datasets' column form ``{"text": [...], "answer_start": [...]}``
(a ``squad`` row written with ``to_json``); ``start`` is accepted for ``answer_start``. Each answer
must be found at its offset in the context (``context[start:start + len(text)] == text``), as in
SQuAD v1.1. A file is labelled (every line has answers: EM/F1 against gold) or unlabelled (no
line has any: EM/F1 against fp32's answers); a mix, like SQuAD v2's unanswerable questions, is
refused rather than scored half one way.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from albert_edge.errors import DataError
from albert_edge.tasks.jsonl import iter_jsonl_rows

#: What a question-answering ``.jsonl`` file holds (predict's input and bench's eval file name it).
QA_JSONL_KIND = 'SQuAD-style questions ({"question", "context", "answers"} per line)'


#: Bounds a hostile file before anything is tokenized.
MAX_LINE_CHARS = 1 << 20


@dataclass(frozen=True)
class QAExample:
    """One question over one context, with its gold answers ((text, start) pairs; empty if unlabelled)."""

    question: str
    context: str
    answers: tuple[tuple[str, int], ...]
    id: str
    line: int


def _answers(value: Any, context: str, where: str) -> tuple[tuple[str, int], ...]:
    if value is None:
        return ()
    if isinstance(value, dict):  # HF datasets column form
        texts, starts = value.get("text"), value.get("answer_start", value.get("start"))
        if not isinstance(texts, list) or not isinstance(starts, list) or len(texts) != len(starts):
            raise DataError(f'{where}: "answers" as an object needs equal-length "text" and "answer_start" lists')
        items = [{"text": t, "answer_start": s} for t, s in zip(texts, starts)]
    elif isinstance(value, list):
        items = value
    else:
        raise DataError(f'{where}: "answers" must be a list of {{"text", "answer_start"}} objects')
    out = []
    for item in items:
        text = item.get("text") if isinstance(item, dict) else None
        start = item.get("answer_start", item.get("start")) if isinstance(item, dict) else None
        if not isinstance(text, str) or not text.strip() or not isinstance(start, int) or isinstance(start, bool):
            raise DataError(f'{where}: answer {item!r}: expected {{"text": non-empty str, "answer_start": int}}')
        if start < 0 or context[start:start + len(text)] != text:  # a negative start slices from the end
            raise DataError(f"{where}: answer {text!r} is not at offset {start} of the context "
                            f"(found {context[start:start + len(text)]!r})")
        out.append((text, start))
    return tuple(out)


def read_qa_jsonl(path: str | os.PathLike[str]) -> list[QAExample]:
    """The examples of a SQuAD-style JSONL file; DataError naming the file and line otherwise."""
    path = Path(path)
    out: list[QAExample] = []
    for number, where, row in iter_jsonl_rows(path, "question file", MAX_LINE_CHARS):
        question = row.get("question") if isinstance(row, dict) else None
        context = row.get("context") if isinstance(row, dict) else None
        if not isinstance(question, str) or not isinstance(context, str) or not question.strip() \
                or not context.strip():
            raise DataError(f'{where}: expected {{"question": non-empty str, "context": non-empty str, '
                            '"answers": [...]}')
        answers = _answers(row.get("answers"), context, where)
        out.append(QAExample(question, context, answers, str(row.get("id", number)), number))
    if not out:
        raise DataError(f"{path}: no questions")
    labelled = [bool(e.answers) for e in out]
    if any(labelled) and not all(labelled):
        first = out[labelled.index(False)]
        raise DataError(f"{path}:{first.line}: question without answers in a labelled file (unanswerable "
                        "SQuAD v2 questions are not supported; give every line answers, or none)")
    return out
