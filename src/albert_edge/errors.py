"""One exception family for every failure a user can cause.

The CLI prints ``str(error)`` as a single line and exits non-zero, so every message must
name the file (or variable, or argument) and say what was expected. Nothing deep inside
TensorFlow or ONNX Runtime should reach the user as a traceback.
"""

from __future__ import annotations


class AlbertEdgeError(Exception):
    """Base class: a problem with the user's input or environment, explained in one line."""

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


class ConfigError(AlbertEdgeError):
    """A model config is missing, unreadable or inconsistent (e.g. hidden % heads != 0)."""


class CheckpointError(AlbertEdgeError):
    """A checkpoint is unreadable, truncated, of unknown format, or its variables do not map."""


class TokenizerError(AlbertEdgeError):
    """A vocab or SentencePiece model is unusable, or a text cannot be encoded (empty, not UTF-8)."""


class ModelFileError(AlbertEdgeError):
    """A .tflite/.onnx file is corrupt, truncated, not a model, or carries no valid pack."""


class MissingPackError(ModelFileError):
    """A model file that carries no albert-edge pack at all (a bare graph), as opposed to a broken one.

    The bench times bare graphs; every other reader refuses them. Only this subclass may be
    taken as "no pack": a pack that is present but disagrees with itself or its graph is a
    plain ModelFileError and is never treated as absent.
    """


class StrippedPackError(ModelFileError):
    """A .tflite whose standard metadata names pack files (vocab, labels, albert_edge.json) that are gone.

    Tools that rewrite the flatbuffer (litert-quantizer, other converters) keep the ``TFLITE_METADATA``
    entry but drop the ZIP appended after it. Not a MissingPackError: the file was an albert-edge model,
    so no reader (bench included) may take it for a bare graph; ``albert-edge repack`` restores it.
    """


class BackendError(AlbertEdgeError):
    """An interpreter is missing or cannot run this model (e.g. an op version it predates)."""


class ConversionError(AlbertEdgeError):
    """Export failed or the exported file does not match the numpy reference."""


class QuantizationError(AlbertEdgeError):
    """Calibration data is unusable, the model is already quantized, or no variant meets the budget."""


class BudgetNotMetError(QuantizationError):
    """Quantize ran, but no variant met the budget: the report and the best effort (named
    ``over_budget_*``) are written into ``--out/over_budget/`` (the previous run's files are kept),
    and the message says what to relax. Exit 3, not 2: the input
    was fine, the model is what it is."""

    exit_code = 3


class DataError(AlbertEdgeError):
    """A data file (TSV, calibration text) is empty, mis-encoded, or has bad columns or labels."""


class OutputError(AlbertEdgeError):
    """An output path cannot be written."""
