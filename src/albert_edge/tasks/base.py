"""What every task says about itself, so that the machinery never compares task strings.

A task is the head on top of the shared encoder (KerasHub's cut: backbone / preprocessor / task).
The converter asks it which weights the graph captures and which outputs the head adds (in the
TF graph for TFLite and in the ONNX builder), the parity check asks it what to compare against the
numpy reference and how closely, quantize and bench ask it for the values they judge drift on and
for its drift metrics, and the runtime pack asks it whether a pack's settings make sense.

A new task is one module in this package with a ``Task`` subclass, registered in ``__init__``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from albert_edge.errors import ConversionError

#: Weights of the shared encoder (embeddings and transformer layers); everything else is a head.
ENCODER_PREFIXES = ("embeddings.", "encoder.")


class TaskDrift(ABC):
    """Drift of a variant against its baseline on the same inputs, in the task's own metrics."""

    examples: int

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The report's ``drift`` object."""

    @abstractmethod
    def budget_failures(self, budget: Any) -> list[str]:
        """Why this drift misses ``budget`` (an ``albert_edge.quantize.auto.Budget``); empty when it fits."""

    @abstractmethod
    def summary(self) -> str:
        """A few words for a decision log line (e.g. "drop 0.06 pt, agreement 99.8%")."""


class Task(ABC):
    """One head: its weights, outputs, graph ops, post-processing, drift metrics and tolerances."""

    #: The pack's ``task`` string.
    name: ClassVar[str]
    #: Head weight prefixes (canonical names) the graph needs on top of the encoder.
    head_prefixes: ClassVar[tuple[str, ...]] = ()
    #: Whether a pack of this task must carry labels.
    needs_labels: ClassVar[bool] = False
    #: Max |difference| against the float64 reference per variant, keyed by parity key
    #: ("logits", "hidden", "pooled", "embedding": see ``PARITY_KEYS``).
    tolerances: ClassVar[dict[str, dict[str, float]]] = {}

    # ------------------------------------------------------------------ identity and settings
    @classmethod
    @abstractmethod
    def detect(cls, weights: Any) -> bool:
        """True when ``weights`` carry this task's head (used to pick the default task)."""

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None, source: str = "<task>") -> Task:
        """The task from a pack's ``task_config`` object (None or {} for packs that predate it)."""
        return cls()

    def settings(self) -> dict[str, Any]:
        """The pack's ``task_config`` object; empty when the task has no settings."""
        return {}

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.settings() == other.settings()  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash((self.name, tuple(sorted(self.settings().items()))))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.settings()})"

    def bind_labels(self, labels: Sequence[str] | None) -> Task:
        """This task with the pack's label names known (a metric that decodes them, like entity F1,
        needs them); tasks whose drift ignores names return themselves."""
        return self

    def labelled_samples(self, path: Any, tokenizer: Any, max_seq_len: int,
                         max_examples: int | None = None) -> tuple[list[dict[str, np.ndarray]], np.ndarray] | None:
        """Judge samples and gold values from a ``.jsonl`` eval file in the task's own labelled
        format, in ``judged_values`` row order; None when the task has no such format."""
        return None

    # ------------------------------------------------------------------ weights and outputs
    @abstractmethod
    def outputs(self) -> tuple[str, ...]:
        """Names of the serving signature's outputs (the pack's ``outputs`` list), in order."""

    @abstractmethod
    def output_shapes(self, config: Any, weights: Any) -> dict[str, list[str | int]]:
        """Output name -> shape with symbolic dims ("batch", "sequence")."""

    def uses_weight(self, name: str) -> bool:
        """Whether the graph captures the canonical weight ``name`` (encoder weights always)."""
        return name.startswith(ENCODER_PREFIXES) or name.startswith(self.head_prefixes)

    def check_weights(self, weights: Any) -> None:
        """Raise ConversionError naming the checkpoint when the head's weights are missing."""
        missing = [p for p in self.required_weights() if p not in weights.tensors]
        if missing:
            raise ConversionError(f"{weights.source}: task {self.name} needs {', '.join(missing)}, "
                                  "the checkpoint has none")

    def required_weights(self) -> tuple[str, ...]:
        """Canonical head weights that must be present."""
        return ()

    # ------------------------------------------------------------------ graph heads
    @abstractmethod
    def tf_head(self, tf: Any, params: Mapping[str, Any], sequence: Any, attention_mask: Any) -> dict[str, Any]:
        """TF ops on the encoder output: ``sequence`` [batch, seq, H] float32, ``attention_mask``
        int32 [batch, seq] -> {output name: tensor}. Ops must lower to TFLite builtins."""

    @abstractmethod
    def onnx_head(self, builder: Any, sequence: str, attention_mask: str) -> list[tuple[str, list[str | int]]]:
        """ONNX nodes on the encoder output (``builder`` is an OnnxGraphBuilder); returns (name, shape)
        per graph output, in ``outputs()`` order. Each output must be produced under its name."""

    # ------------------------------------------------------------------ judging
    @abstractmethod
    def parity_expected(self, reference: Any, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
        """Parity key -> float64 reference value for one sample batch (a ReferenceOutput)."""

    @abstractmethod
    def parity_required(self) -> tuple[str, ...]:
        """Parity keys that must have been measured for a file to pass."""

    @abstractmethod
    def judged_values(self, outputs: Mapping[str, np.ndarray], attention_mask: np.ndarray) -> np.ndarray:
        """The values drift is judged on, [batch, D] float64, from one run's outputs."""

    @abstractmethod
    def drift(self, values: np.ndarray, baseline: np.ndarray, labels: np.ndarray | None = None) -> TaskDrift:
        """Drift of ``values`` [N, D] against ``baseline`` [N, D] (both from ``judged_values``)."""


#: Graph output name -> parity key (how the parity report names each compared value); an output not
#: listed here is its own parity key.
PARITY_KEYS = {"logits": "logits", "last_hidden_state": "hidden", "pooled_output": "pooled",
               "sentence_embedding": "embedding"}


class ClassifierHeadTask(Task):
    """A task whose head ends in the linear ``classifier.*`` layer: its width is the number of labels."""

    needs_labels: ClassVar[bool] = True

    def check_weights(self, weights: Any) -> None:
        if "classifier.kernel" not in weights.tensors:
            raise ConversionError(f"{weights.source}: task {self.name} needs a classifier head "
                                  "(HF classifier.weight or TF1 output_weights), the checkpoint has none")
        super().check_weights(weights)

    @staticmethod
    def num_labels(weights: Any) -> int:
        """Width of the classifier (the number of labels)."""
        return int(np.asarray(weights.tensors["classifier.bias"]).shape[0])


def head_weight_names(weights: Any, task: Task) -> list[str]:
    """The canonical head weights of ``weights`` that ``task`` uses (for reports and inspect)."""
    return sorted(name for name in weights.tensors if task.uses_weight(name) and not name.startswith(ENCODER_PREFIXES))


def as_rows(value: np.ndarray) -> np.ndarray:
    """``value`` as float64 [N, D]."""
    array = np.asarray(value, dtype=np.float64)
    return array.reshape(array.shape[0], -1) if array.ndim != 2 else array


def check_same_shape(values: np.ndarray, baseline: np.ndarray, what: Sequence[str]) -> None:
    """Raise ValueError when the judged arrays disagree in shape (a bug, not user input)."""
    if values.shape != baseline.shape:
        raise ValueError(f"{what[0]} shape {values.shape} != {what[1]} shape {baseline.shape}")
