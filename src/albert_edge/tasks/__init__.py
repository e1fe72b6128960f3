"""Tasks as objects: the registry from a pack's ``task`` string to the Task class that knows it.

The converter, quantizer, bench and runtime look tasks up here and ask the object; adding a task
is one module in this package plus one line in ``_REGISTRY``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from albert_edge.errors import ConversionError, ModelFileError
from albert_edge.tasks.base import ENCODER_PREFIXES, PARITY_KEYS, Task, TaskDrift
from albert_edge.tasks.feature_extraction import EmbeddingDrift, FeatureExtraction
from albert_edge.tasks.question_answering import QADrift, QuestionAnswering
from albert_edge.tasks.sequence_classification import ClassificationDrift, SequenceClassification
from albert_edge.tasks.sequence_regression import SequenceRegression
from albert_edge.tasks.token_classification import TokenClassification, TokenDrift, declares_token_classification

#: In detection order: the first task whose ``detect`` accepts the weights is the default (a span
#: head means question answering; a classifier without a pooler is a token classifier before it
#: could be a sentence classifier).
_REGISTRY: dict[str, type[Task]] = {cls.name: cls for cls in (QuestionAnswering, TokenClassification,
                                                              SequenceRegression, SequenceClassification,
                                                              FeatureExtraction)}
TASK_NAMES: tuple[str, ...] = tuple(_REGISTRY)
#: The Hugging Face pipeline / Optimum task names a user coming from them types, and ours they mean.
HF_TASK_NAMES: dict[str, str] = {
    "text-classification": SequenceClassification.name,
    "sentiment-analysis": SequenceClassification.name,
    "token-classification": TokenClassification.name,
    "ner": TokenClassification.name,
    "question-answering": QuestionAnswering.name,
    "feature-extraction": FeatureExtraction.name,
    "sentence-similarity": FeatureExtraction.name,
}

__all__ = ["ENCODER_PREFIXES", "HF_TASK_NAMES", "PARITY_KEYS", "TASK_NAMES", "ClassificationDrift", "EmbeddingDrift",
           "FeatureExtraction", "QADrift", "QuestionAnswering", "SequenceClassification", "Task", "TaskDrift",
           "TokenClassification", "TokenDrift",
           "canonical_task_name", "detect_task", "get_task",
           "task_class", "task_classes", "task_of_pack"]


def task_classes() -> tuple[type[Task], ...]:
    """Every registered Task class, in detection order."""
    return tuple(_REGISTRY.values())


def canonical_task_name(name: str) -> str:
    """Our task name for ``name``, which may be a Hugging Face task name (``token-classification``);
    unknown names are returned as they are, for the caller's own "expected one of" error."""
    return HF_TASK_NAMES.get(name, name)


def task_class(name: str, error: type[Exception] = ConversionError, source: str = "task") -> type[Task]:
    """The Task class registered as ``name`` (or its Hugging Face name); ``error`` names ``source`` when there is none."""
    name = canonical_task_name(name)
    if name not in _REGISTRY:
        raise error(f"{source} {name!r}: expected one of {', '.join(TASK_NAMES)}")
    return _REGISTRY[name]


def get_task(task: Task | str | None, weights: Any = None, checkpoint: str | os.PathLike[str] | None = None) -> Task:
    """A Task object from a Task, a task name, or None (detected from ``weights`` and ``checkpoint``)."""
    if isinstance(task, Task):
        return task
    if task is None:
        if weights is None:
            raise ConversionError("no task given and no weights to detect it from")
        return detect_task(weights, checkpoint)
    cls = task_class(task)
    if cls is FeatureExtraction and checkpoint is not None:
        return _feature_extraction_for(checkpoint)
    return cls()


def detect_task(weights: Any, checkpoint: str | os.PathLike[str] | None = None) -> Task:
    """The first registered task whose head ``weights`` carry; a sentence-transformers folder's
    pooling and normalisation configure feature extraction; a config.json whose ``architectures``
    names a ``*ForTokenClassification`` makes a classifier head a token classifier."""
    if "classifier.kernel" in weights.tensors and declares_token_classification(checkpoint):
        return TokenClassification()
    for cls in _REGISTRY.values():
        if cls.detect(weights):
            if cls is FeatureExtraction and checkpoint is not None:
                return _feature_extraction_for(checkpoint)
            return cls()
    raise ConversionError(f"{weights.source}: no task recognises this checkpoint's head")


def _feature_extraction_for(checkpoint: str | os.PathLike[str]) -> FeatureExtraction:
    from albert_edge.model.sentence_transformers import read_pooling

    pooling = read_pooling(checkpoint)
    return FeatureExtraction() if pooling is None else FeatureExtraction(pooling.mode, pooling.normalize)


def task_of_pack(name: str, settings: Mapping[str, Any] | None, source: str) -> Task:
    """The Task a pack describes (its ``task`` string and ``task_config`` object); ModelFileError otherwise."""
    return task_class(name, ModelFileError, f"{source}: pack task is").from_settings(settings, source)
