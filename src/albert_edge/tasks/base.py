"""What every task says about itself, so that the machinery never compares task strings.

A task is the head on top of the shared encoder (KerasHub's cut: backbone / preprocessor / task).
The converter asks it which weights the graph captures and which outputs the head adds (in the
TF graph for TFLite and in the ONNX builder), the parity check asks it what to compare against the
numpy reference and how closely, quantize and bench ask it for the values they judge drift on and
for its drift metrics, and the runtime pack asks it whether a pack's settings make sense.

This is floor 1: a task imports numpy, errors, the tokenizer and the model only. What the higher
floors do with a task is theirs, keyed by the task's name with a generic default, so a new task
still needs no line outside its module: serving ``predict`` (``runtime/serving.py``), the bench's
drift tables (``bench_latency/task_drift.py``), MediaPipe's outputs and the metadata title
(``convert/tflite_metadata.py``). How a task reads a labelled eval file is one object it holds
(``eval_format``, ``tasks/eval_format.py``).

A new task is one module in this package with a ``Task`` subclass, registered in ``__init__``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from albert_edge.errors import ConversionError
from albert_edge.tasks.eval_format import EvalFormat
from albert_edge.tasks.metrics import Budget

#: Weights of the shared encoder (embeddings and transformer layers); everything else is a head.
ENCODER_PREFIXES = ("embeddings.", "encoder.")


@dataclass(frozen=True)
class Column:
    """One column of a drift table: its header, the key of the entry it shows, and how.

    Tasks declare their tables as data (quantize's console table, the bench report's drift table)
    so the machinery renders any task's drift without knowing its metrics. ``key`` may name a
    nested value with dots (``reference.mean_cosine``); ``percent`` shows a share as a percentage.
    """

    header: str
    key: str
    spec: str = ".4f"
    percent: bool = False

    def value(self, entry: Mapping[str, Any]) -> Any:
        value: Any = entry
        for part in self.key.split("."):
            value = value.get(part) if isinstance(value, Mapping) else None
        return value

    def cell(self, entry: Mapping[str, Any], missing: str = "-") -> str:
        """The formatted value, ``missing`` when the entry has none."""
        value = self.value(entry)
        if value is None:
            return missing
        if isinstance(value, (bool, str)) or not isinstance(value, (int, float)):
            return str(value)
        return f"{100 * value:{self.spec}}%" if self.percent else f"{value:{self.spec}}"


def scalar_columns(entries: Sequence[Mapping[str, Any]], skip: Sequence[str] = ("variant", "task")) -> tuple[Column, ...]:
    """One column per number-valued key of ``entries`` (first-seen order): the table of a task
    that declares none."""
    keys: dict[str, None] = {}
    for entry in entries:
        for key, value in entry.items():
            if key not in skip and isinstance(value, (int, float)) and not isinstance(value, bool):
                keys.setdefault(key)
    return tuple(Column(key.replace("_", " "), key, "d" if all(isinstance(e.get(key), int) for e in entries
                                                              if e.get(key) is not None) else ".4g")
                 for key in keys)


class TaskDrift(ABC):
    """Drift of a variant against its baseline on the same inputs, in the task's own metrics."""

    examples: int
    #: Columns of quantize's console table (keys of ``to_dict``); empty: every number in it.
    columns: ClassVar[tuple[Column, ...]] = ()

    def table_columns(self) -> tuple[Column, ...]:
        """The columns quantize prints for this drift."""
        return self.columns or scalar_columns([self.to_dict()])

    def relax_hints(self, budget: Budget) -> list[str]:
        """Budget flags (``--max-drop 0.8``) that would accept this drift; empty when none can be named."""
        return []

    def shortfall(self, budget: Budget) -> float:
        """How far this drift is from passing ``budget``, >= 0 in the task's own units (0: it passes).

        Comparable across the variants of one task, so ``quantize``'s best effort can name the
        closest miss and ``choose`` can break speed ties by accuracy (the shortfall against
        ``metrics.PERFECT``). Every task must say it: 0 here would make the fastest variant the
        "closest" however far it is, so the base refuses.
        """
        raise NotImplementedError(f"{type(self).__name__} does not define shortfall(budget)")

    @abstractmethod
    def to_dict(self) -> dict[str, Any]:
        """The report's ``drift`` object."""

    @abstractmethod
    def budget_failures(self, budget: Budget) -> list[str]:
        """Why this drift misses ``budget``; empty when it fits."""

    def unjudged(self, budget: Budget) -> str | None:
        """Why the judged rows cannot decide ``budget`` (too few to show the agreement it asks), or None.

        A variant whose only failures are ones its rows could not have passed is "not judged", not
        rejected: quantize never chooses it and says why. None (the default): the figures decide.
        """
        return None

    def decided(self, budget: Budget) -> bool:
        """Whether these rows, a seeded subsample of the judge set, already decide ``budget`` the way
        all rows would (``quantize.sequential_judge``); False (the default): only all rows decide."""
        return False

    @abstractmethod
    def summary(self) -> str:
        """A few words for a decision log line (e.g. "drop 0.06 pt, agreement 99.8%")."""


class Task(ABC):
    """One head: its weights, outputs, graph ops, parity, drift metrics and interpretation."""

    #: The pack's ``task`` string.
    name: ClassVar[str]
    #: The Hugging Face Hub pipeline tag a model card gives a model of this task (None: no tag).
    pipeline_tag: ClassVar[str | None] = None
    #: Head weight prefixes (canonical names) the graph needs on top of the encoder.
    head_prefixes: ClassVar[tuple[str, ...]] = ()
    #: Canonical head weights that must be present (``check_weights``).
    required_weights: ClassVar[tuple[str, ...]] = ()
    #: Whether a pack of this task must carry labels.
    needs_labels: ClassVar[bool] = False
    #: Max |difference| against the float64 reference per variant, keyed by parity key
    #: ("logits", "hidden", "pooled", "embedding": see ``PARITY_KEYS``).
    tolerances: ClassVar[dict[str, dict[str, float]]] = {}
    #: Label names bound by ``bind_labels``; None when unknown or unused by the task.
    labels: tuple[str, ...] | None = None
    #: How the task reads an eval file in its own labelled format (quantize and bench judge on it).
    eval_format: ClassVar[EvalFormat] = EvalFormat()
    #: Title and columns of the bench report's drift table when the bench judges this task's drift
    #: as quantize does (``bench_latency.drift.measure_judged_drift``: entries hold ``drift``'s
    #: ``to_dict``); ``{key}`` in the title takes a value of the first entry; no columns: every number.
    drift_title: ClassVar[str] = "Drift against the baseline"
    drift_columns: ClassVar[tuple[Column, ...]] = ()

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

    # ------------------------------------------------------------------ weights and outputs
    @abstractmethod
    def outputs(self) -> tuple[str, ...]:
        """Names of the serving signature's outputs (the pack's ``outputs`` list), in order."""

    @abstractmethod
    def output_shapes(self, config: Any, weights: Any) -> dict[str, list[str | int]]:
        """Output name -> shape with symbolic dims ("batch", "sequence")."""

    def check_weights(self, weights: Any) -> None:
        """Raise ConversionError naming the checkpoint when the head's weights are missing."""
        missing = [p for p in self.required_weights if p not in weights.tensors]
        if missing:
            raise ConversionError(f"{weights.source}: task {self.name} needs {', '.join(missing)}, "
                                  "the checkpoint has none")

    # ------------------------------------------------------------------ the head
    @abstractmethod
    def head(self, ops: Any, sequence: Any, attention_mask: Any) -> dict[str, Any]:
        """The head on the encoder output, written once in ``ops`` (an ``EncoderOps`` of
        ``albert_edge.model.skeleton``: the TF graph for TFLite, the ONNX builder, the training
        model): ``sequence`` [batch, seq, H], ``attention_mask`` int [batch, seq] -> {output name:
        tensor} for every name of ``outputs()``, each made a graph output by an op given its name
        (``named``, ``split``, ``tanh(..., name=)``) or the encoder's own ``last_hidden_state``."""

    # ------------------------------------------------------------------ judging
    @abstractmethod
    def parity_expected(self, reference: Any, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
        """Parity key -> float64 reference value for one sample batch (a ReferenceOutput)."""

    @property
    @abstractmethod
    def parity_required(self) -> tuple[str, ...]:
        """Parity keys that must have been measured for a file to pass."""

    @abstractmethod
    def judged_values(self, outputs: Mapping[str, np.ndarray], attention_mask: np.ndarray) -> np.ndarray:
        """The values drift is judged on, [batch, D] float64, from one run's outputs."""

    @abstractmethod
    def drift(self, values: np.ndarray, baseline: np.ndarray, labels: np.ndarray | None = None) -> TaskDrift:
        """Drift of ``values`` [N, D] against ``baseline`` [N, D] (both from ``judged_values``)."""

    # ------------------------------------------------------------------ interpretation
    def interpret(self, outputs: Mapping[str, np.ndarray], labels: Sequence[str] | None) -> dict[str, Any]:
        """One row's result for an app or ``predict``, from a batch-1 run's outputs (what the generic
        runtime ``TaskModel`` returns): by default each output as a list, padding positions dropped."""
        return {name: np.asarray(value)[0].tolist() for name, value in outputs.items()}


#: Graph output name -> parity key (how the parity report names each compared value); an output not
#: listed here is its own parity key.
PARITY_KEYS = {"logits": "logits", "last_hidden_state": "hidden", "pooled_output": "pooled",
               "sentence_embedding": "embedding"}


class ClassifierHeadTask(Task):
    """A task whose head ends in the linear ``classifier.*`` layer: its width is the number of labels."""

    needs_labels: ClassVar[bool] = True

    def __init__(self, labels: Sequence[str] | None = None) -> None:
        # Label names are not settings (the pack stores them in labels.txt); a metric that decodes
        # them (entity F1) or a labelled eval TSV that names its classes needs them, so quantize and
        # bench bind them once they know them.
        self.labels = tuple(labels) if labels is not None else None

    def bind_labels(self, labels: Sequence[str] | None) -> ClassifierHeadTask:
        import copy

        bound = copy.copy(self)
        bound.labels = tuple(labels) if labels is not None else None
        return bound

    def check_weights(self, weights: Any) -> None:
        if "classifier.kernel" not in weights.tensors:
            raise ConversionError(f"{weights.source}: task {self.name} needs a classifier head "
                                  "(HF classifier.weight or TF1 output_weights), the checkpoint has none")
        super().check_weights(weights)

    @staticmethod
    def num_labels(weights: Any) -> int:
        """Width of the classifier (the number of labels)."""
        return int(np.asarray(weights.tensors["classifier.bias"]).shape[0])


def uses_weight(task: Task, name: str) -> bool:
    """Whether ``task``'s graph captures the canonical weight ``name`` (encoder weights always)."""
    return name.startswith(ENCODER_PREFIXES) or name.startswith(task.head_prefixes)


def head_weight_names(weights: Any, task: Task) -> list[str]:
    """The canonical head weights of ``weights`` that ``task`` uses (for reports and inspect)."""
    return sorted(name for name in weights.tensors if uses_weight(task, name) and not name.startswith(ENCODER_PREFIXES))


def as_rows(value: np.ndarray) -> np.ndarray:
    """``value`` as float64 [N, D]."""
    array = np.asarray(value, dtype=np.float64)
    return array.reshape(array.shape[0], -1) if array.ndim != 2 else array


def check_same_shape(values: np.ndarray, baseline: np.ndarray, what: Sequence[str]) -> None:
    """Raise ValueError when the judged arrays disagree in shape (a bug, not user input)."""
    if values.shape != baseline.shape:
        raise ValueError(f"{what[0]} shape {values.shape} != {what[1]} shape {baseline.shape}")
