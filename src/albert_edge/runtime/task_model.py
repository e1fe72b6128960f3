"""TaskModel: any packed model, run as its task says, with no task-specific runtime code.

The task runtimes (TextClassifier, TextEmbedder, TokenClassifier, QuestionAnswerer) add what
their heads need beyond one run per text: batching by length, windows over long texts, answer
spans. A task without such needs is served by this class alone: the pack's tokenizer encodes a
text (or pair) at its real length, the checked backend runs it, and the task's ``interpret``
turns the outputs into a result. That is what lets a new task ship as one task module: ``predict``
and apps get a runtime for it the moment the pack names it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from albert_edge.errors import ModelFileError, TokenizerError
from albert_edge.runtime.classifier import open_checked
from albert_edge.runtime.pack import ModelPack, map_model_file, read_pack_bytes
from albert_edge.tasks import Task
from albert_edge.tokenizer import Encoding, Preprocessor, batch_one


class TaskModel:
    """A packed .tflite/.onnx model of any task: ``outputs`` for raw values, ``predict`` for results."""

    def __init__(self, data: bytes, source: str = "<bytes>", num_threads: int | None = None, backend: str = "auto",
                 pool_size: int = 1, xnnpack: bool = True) -> None:
        self.source = source
        self.pack: ModelPack = read_pack_bytes(data, source)
        self.task: Task = self.pack.task_object(source).bind_labels(self.pack.labels)
        self.labels = self.pack.labels
        self.tokenizer, self._pool = open_checked(data, source, self.pack, backend, num_threads, xnnpack, pool_size)
        self.preprocessor = Preprocessor(self.tokenizer, self.pack.max_seq_len)
        missing = [name for name in self.task.outputs() if name not in self._pool.first.output_names]
        if missing:
            raise ModelFileError(f"{source}: the graph has no output {missing[0]!r} "
                                 f"(it has {list(self._pool.first.output_names)})")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], num_threads: int | None = None, backend: str = "auto",
                  pool_size: int = 1, xnnpack: bool = True) -> TaskModel:
        """Load a packed ``.tflite`` or ``.onnx`` (kind detected from the bytes, not the suffix)."""
        return cls(map_model_file(path), str(path), num_threads, backend, pool_size, xnnpack)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>", num_threads: int | None = None, backend: str = "auto",
                   pool_size: int = 1, xnnpack: bool = True) -> TaskModel:
        """Load a packed model already in memory (e.g. read from an app bundle)."""
        return cls(bytes(data), source, num_threads, backend, pool_size, xnnpack)

    def encode(self, text: str, text_b: str | None = None, what: str = "text") -> Encoding:
        """One text (or pair) at its own length, truncated to the pack's max_seq_len."""
        for name, value in ((what, text), (f"{what} (second)", text_b)):
            if value is not None and not isinstance(value, str):
                raise TokenizerError(f"{name}: expected a string, got {type(value).__name__}")
        if not text.strip():
            raise TokenizerError(f"{what}: text is empty")
        return self.preprocessor.encode(text, text_b)

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The task's outputs for already-encoded int32 [B, S] inputs."""
        outputs = self._pool.run(inputs)
        values = {name: np.asarray(outputs[name]) for name in self.task.outputs()}
        batch = inputs["input_ids"].shape[0]
        for name, value in values.items():
            if value.shape[:1] != (batch,) or not np.all(np.isfinite(value)):
                raise ModelFileError(f"{self.source}: output {name!r} has shape {list(value.shape)} or non-finite "
                                     f"values, expected a finite batch of {batch}")
        return values

    def outputs(self, text: str, text_b: str | None = None) -> dict[str, np.ndarray]:
        """The task's outputs for one text, batch 1 at its real length (padding never fed)."""
        return self.run(batch_one(self.encode(text, text_b)))

    def predict(self, text: str, text_b: str | None = None) -> dict[str, Any]:
        """The task's result for one text (or pair): ``Task.interpret`` of its outputs."""
        return self.task.interpret(self.outputs(text, text_b), self.labels)

    def __repr__(self) -> str:
        first = self._pool.first
        return (f"TaskModel({self.source!r}, task={self.task.name!r}, backend={first.name!r}, "
                f"threads={first.num_threads}, max_seq_len={self.pack.max_seq_len}, variant={self.pack.variant!r})")
