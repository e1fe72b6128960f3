"""Open a file a command wrote the way its user would: a model through the runtime class of its task
(the pack checked against the graph at load, then one input run), a report as JSON, a card as text.

Issue #37: "every file any command writes in the test suite is opened by the runtime in that test".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SAMPLE_TEXT = "好的了是在我"


def open_model(path: Path, text: str = SAMPLE_TEXT) -> Any:
    """Load ``path`` with the runtime class its pack's task names and run ``text`` through it; the result."""
    from albert_edge.runtime import QuestionAnswerer, TaskModel, TextClassifier, TextEmbedder, TokenClassifier
    from albert_edge.runtime.pack import read_pack

    task = read_pack(path).task
    if task == "sequence_classification":
        return TextClassifier.from_file(path, num_threads=1).predict(text)
    if task == "token_classification":
        return TokenClassifier.from_file(path, num_threads=1).predict(text)
    if task == "question_answering":
        return QuestionAnswerer.from_file(path, num_threads=1).answer(text, text + text)
    if task == "feature_extraction":
        return TextEmbedder.from_file(path, num_threads=1).embed(text)
    return TaskModel.from_file(path, num_threads=1).predict(text)


def open_written(path: Path) -> Any:
    """Open one written file by its kind; raises whatever a user would meet."""
    suffix = path.suffix
    if suffix in (".tflite", ".onnx"):
        return open_model(path)
    if suffix in (".json",):
        return json.loads(path.read_text(encoding="utf-8"))
    if suffix in (".jsonl",):
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if suffix == ".png":
        data = path.read_bytes()
        assert data.startswith(b"\x89PNG"), path
        return data
    return path.read_text(encoding="utf-8")  # .md, .txt, .tsv, vocab, checkpoint index text


def written_files(directory: Path) -> dict[str, Path]:
    """Every non-hidden file under ``directory`` by relative POSIX path."""
    return {p.relative_to(directory).as_posix(): p for p in sorted(directory.rglob("*"))
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(directory).parts)}
