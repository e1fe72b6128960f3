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
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from albert_edge.errors import ConversionError

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


def markdown_table(title: str, first: str, columns: Sequence[Column], entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """A report.md section: ``title``, then one row per entry (``first`` heads the variant column)."""
    return [f"## {title}", "", "| " + " | ".join([first, *(c.header for c in columns)]) + " |",
            "|---|" + "---:|" * len(columns),
            *("| " + " | ".join([str(e.get("variant")), *(c.cell(e, "–") for c in columns)]) + " |" for e in entries),
            ""]


#: One input of ``predict``: (where it came from, gold label or None, text, second text or None).
Row = tuple[str, str | None, str, str | None]


class TaskDrift(ABC):
    """Drift of a variant against its baseline on the same inputs, in the task's own metrics."""

    examples: int
    #: Columns of quantize's console table (keys of ``to_dict``); empty: every number in it.
    columns: ClassVar[tuple[Column, ...]] = ()

    def table_columns(self) -> tuple[Column, ...]:
        """The columns quantize prints for this drift."""
        return self.columns or scalar_columns([self.to_dict()])

    def relax_hints(self, budget: Any) -> list[str]:
        """Budget flags (``--max-drop 0.8``) that would accept this drift; empty when none can be named."""
        return []

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

    #: What quantize's report calls an eval file in the task's own labelled format, and the
    #: judge set when no eval file is given (texts judged against fp32 only).
    labelled_kind: ClassVar[str] = "labelled task file (.jsonl)"
    unlabelled_kind: ClassVar[str] = "unlabelled texts"

    def reads_labelled(self, path: Any) -> bool:
        """Whether an eval file at ``path`` is in the task's own labelled format (``labelled_samples``)
        rather than plain texts judged against fp32: a ``.jsonl`` unless the task says otherwise."""
        return str(path).lower().endswith(".jsonl")

    def labels_from_eval(self, path: Any) -> list[str] | None:
        """Label names an eval file defines (read early, so a bad file fails before any output);
        None when the task takes its names only from the checkpoint."""
        return None

    def labelled_samples(self, path: Any, tokenizer: Any, max_seq_len: int,
                         max_examples: int | None = None) -> tuple[list[dict[str, np.ndarray]], np.ndarray] | None:
        """Judge samples and gold values from an eval file in the task's own labelled format
        (``reads_labelled``), in ``judged_values`` row order; None when the task has no such format."""
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

    # ------------------------------------------------------------------ the standard clients
    @property
    def title(self) -> str:
        """A few words naming the model kind in its standard metadata ("text classifier")."""
        return self.name.replace("_", " ")

    def mediapipe_outputs(self, schema: Any, model: Any) -> bool:
        """Add, in place, the output the task's MediaPipe counterpart reads as head 0 to ``model`` (a
        TFLite ``ModelT``; ``schema`` its generated module); False when there is none (the default:
        MediaPipe has no task for this head)."""
        return False

    # ------------------------------------------------------------------ serving: predict and bench
    #: ``albert-edge predict`` options this task reads: flag -> argparse keywords (a ``dest`` is
    #: derived from the flag; a string ``type`` names a converter in ``cli/arg_types.py``). Flags
    #: of a task other than the model's are refused by predict.
    predict_flags: ClassVar[dict[str, dict[str, Any]]] = {}
    #: What a ``.jsonl`` ``--file`` holds for ``predict`` when the task reads one itself; None: no such input.
    predict_jsonl: ClassVar[str | None] = None
    #: Title of the bench report's drift table (``{key}`` takes a value of the first entry).
    drift_title: ClassVar[str] = "Drift against the baseline"
    #: Columns of the bench report's drift table (``bench_drift`` entries); empty: every number.
    drift_columns: ClassVar[tuple[Column, ...]] = ()

    def interpret(self, outputs: Mapping[str, np.ndarray], labels: Sequence[str] | None) -> dict[str, Any]:
        """One row's result for an app or ``predict``, from a batch-1 run's outputs (what the generic
        runtime ``TaskModel`` returns): by default each output as a list, padding positions dropped."""
        return {name: np.asarray(value)[0].tolist() for name, value in outputs.items()}

    def format_result(self, result: Mapping[str, Any]) -> list[str]:
        """``predict``'s plain-text lines for one ``interpret`` result (``--json`` prints the result)."""
        import json

        return [json.dumps(result, ensure_ascii=False)]

    def predict(self, data: bytes, source: str, options: Mapping[str, Any],
                read_rows: Callable[[], list[Row]]) -> Iterator[tuple[dict[str, Any], list[str]]]:
        """``albert-edge predict`` on a model of this task: (JSON record, plain-text lines) per input.

        ``read_rows`` gives the TEXT arguments, ``--file`` or stdin lines; ``options`` holds the
        command's options by ``dest`` (``threads``, ``backend``, ``batch_size`` and this task's
        ``predict_flags``). The default runs the generic runtime ``TaskModel`` and ``interpret``.
        """
        from albert_edge.errors import DataError, TokenizerError
        from albert_edge.runtime.task_model import TaskModel

        model = TaskModel.from_bytes(data, source, num_threads=options.get("threads"),
                                     backend=options.get("backend", "auto"))
        for where, gold, text_a, text_b in read_rows():
            try:
                result = model.predict(text_a, text_b)
            except TokenizerError as exc:
                raise DataError(f"{where}: {exc}") from None
            record = {"text": text_a, "text_b": text_b, **result}
            if gold is not None:
                record["gold"] = gold
            yield record, self.format_result(result)

    def bench_drift(self, variants: Sequence[tuple[str, Any]], baseline: str, eval_path: Any,
                    reference: Any = None, threads: int | None = None) -> list[dict[str, Any]]:
        """One report.json ``accuracy`` entry per variant (files of this task), in ``variants`` order.

        The default judges as quantize does: ``labelled_samples`` of a ``.jsonl`` (gold), else one
        sample per text of ``eval_path``, through ``judged_values`` and ``drift`` against the baseline.
        """
        from albert_edge.bench_latency.drift import measure_judged_drift

        return measure_judged_drift(self, variants, baseline, eval_path, threads)

    @classmethod
    def drift_markdown(cls, entries: Sequence[Mapping[str, Any]]) -> list[str]:
        """The bench report's drift section for ``entries`` (this task's ``bench_drift`` output)."""
        first = dict(entries[0]) if entries else {}
        title = cls.drift_title.format_map(_Blank(first))
        return markdown_table(title, "variant", cls.drift_columns or scalar_columns(entries), entries)


class _Blank(dict):
    """format_map mapping whose missing keys read as "-"."""

    def __missing__(self, key: str) -> str:
        return "-"


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

    def mediapipe_outputs(self, schema: Any, model: Any) -> bool:
        """A ``probabilities`` output (softmax of the logits), MediaPipe's classifier head 0."""
        from albert_edge.convert.tflite_metadata import add_probabilities

        return add_probabilities(schema, model)


def head_weight_names(weights: Any, task: Task) -> list[str]:
    """The canonical head weights of ``weights`` that ``task`` uses (for reports and inspect)."""
    return sorted(name for name in weights.tensors if task.uses_weight(name) and not name.startswith(ENCODER_PREFIXES))


def batch_one(encoding: Any) -> dict[str, np.ndarray]:
    """A batch-1 int32 sample at the encoding's real length (what quantize and bench judge on)."""
    n = encoding.length
    return {"input_ids": np.asarray([encoding.input_ids[:n]], np.int32),
            "attention_mask": np.ones((1, n), np.int32),
            "token_type_ids": np.asarray([encoding.token_type_ids[:n]], np.int32)}


def as_rows(value: np.ndarray) -> np.ndarray:
    """``value`` as float64 [N, D]."""
    array = np.asarray(value, dtype=np.float64)
    return array.reshape(array.shape[0], -1) if array.ndim != 2 else array


def check_same_shape(values: np.ndarray, baseline: np.ndarray, what: Sequence[str]) -> None:
    """Raise ValueError when the judged arrays disagree in shape (a bug, not user input)."""
    if values.shape != baseline.shape:
        raise ValueError(f"{what[0]} shape {values.shape} != {what[1]} shape {baseline.shape}")
