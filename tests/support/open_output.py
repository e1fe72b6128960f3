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


#: The word table of ``short_classifier``: special tokens and ten common characters.
SHORT_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"好坏的了是在我有他这"]


def short_classifier(root: Path, seed: int) -> tuple[Path, Path]:
    """A random two-label classifier checkpoint whose position table has 32 rows, and enough calibration
    texts for every mode: (checkpoint folder, calib.txt) under ``root``. Short positions on purpose:
    every command must fit the pack's max_seq_len to them (issue #37)."""
    from albert_edge.model import AlbertConfig, random_weights
    from albert_edge.model.hf import write_hf_checkpoint
    from albert_edge.quantize.calibration import MIN_CALIBRATION_TEXTS

    config = AlbertConfig(vocab_size=len(SHORT_VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=1,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=32)
    ckpt = write_hf_checkpoint(random_weights(config, num_labels=2, seed=seed), root / "ckpt")
    (ckpt / "vocab.txt").write_text("\n".join(SHORT_VOCAB) + "\n", encoding="utf-8")
    calib = root / "calib.txt"
    calib.write_text("\n".join("好的了是在我" * (1 + i % 3) for i in range(MIN_CALIBRATION_TEXTS + 4)) + "\n",
                     encoding="utf-8")
    return ckpt, calib
