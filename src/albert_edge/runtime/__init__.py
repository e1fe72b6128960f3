"""What an app embeds: model packs, interpreter backends, the task runtimes and the generic ``TaskModel``.

Imports only numpy, floor 1 (tokenizer, errors) and whichever interpreter is installed --
never TensorFlow or onnx (a test proves it). Names are resolved lazily so that
``albert_edge.runtime.pack`` can be used by the converter without loading any interpreter.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from albert_edge.lazy import lazy_getattr

if TYPE_CHECKING:
    # The same names for type checkers, which do not see the lazy __getattr__ below.
    from albert_edge.runtime.backends import Backend, available_backends, open_backend
    from albert_edge.runtime.classifier import Prediction, TextClassifier
    from albert_edge.runtime.embedder import TextEmbedder
    from albert_edge.runtime.pack import (
        ModelPack,
        attach_tflite_pack,
        pack_from_metadata_props,
        pack_to_metadata_props,
        read_pack,
        read_pack_bytes,
        read_tflite_pack,
        strip_tflite_pack,
    )
    from albert_edge.runtime.question_answerer import Answer, QuestionAnswerer
    from albert_edge.runtime.task_model import TaskModel
    from albert_edge.runtime.token_classifier import Entity, TokenClassifier

_EXPORTS = {
    "ModelPack": "albert_edge.runtime.pack",
    "attach_tflite_pack": "albert_edge.runtime.pack",
    "read_tflite_pack": "albert_edge.runtime.pack",
    "strip_tflite_pack": "albert_edge.runtime.pack",
    "pack_to_metadata_props": "albert_edge.runtime.pack",
    "pack_from_metadata_props": "albert_edge.runtime.pack",
    "read_pack": "albert_edge.runtime.pack",
    "read_pack_bytes": "albert_edge.runtime.pack",
    "Backend": "albert_edge.runtime.backends",
    "open_backend": "albert_edge.runtime.backends",
    "available_backends": "albert_edge.runtime.backends",
    "TextClassifier": "albert_edge.runtime.classifier",
    "Prediction": "albert_edge.runtime.classifier",
    "TextEmbedder": "albert_edge.runtime.embedder",
    "TokenClassifier": "albert_edge.runtime.token_classifier",
    "Entity": "albert_edge.runtime.token_classifier",
    "QuestionAnswerer": "albert_edge.runtime.question_answerer",
    "Answer": "albert_edge.runtime.question_answerer",
    "TaskModel": "albert_edge.runtime.task_model",
}

__all__ = list(_EXPORTS)

if not TYPE_CHECKING:
    # Hidden from type checkers, so that a misspelt name is an error there rather than Any.
    __getattr__ = lazy_getattr(__name__, _EXPORTS, globals())
