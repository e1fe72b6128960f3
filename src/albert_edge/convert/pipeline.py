"""``convert_checkpoint``: checkpoint -> packed, parity-checked .tflite/.onnx files + a report.

Order matters for the no-partial-files promise: every argument is validated before any model
is built, every model is built and parity-checked in memory, and only when all of them pass are
the files written (atomically) together with ``conversion_report.json``. A failure at any step
raises one AlbertEdgeError line and leaves no model file behind.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from albert_edge import __version__
from albert_edge.outputs.atomic import ensure_writable_dir
from albert_edge.convert.assets import TokenizerAsset
from albert_edge.convert.census import census_onnx, census_tflite
from albert_edge.convert.source import ModelSource
from albert_edge.convert.parity import (
    ParityResult,
    ParitySamples,
    check_parity,
    default_cases,
    make_samples,
)
from albert_edge.convert.tf_graph import (
    GraphOptions,
    activation_kind,
)
from albert_edge.errors import ConfigError, ConversionError
from albert_edge.inputs.option_ranges import MODEL_SEQ_LEN, check_optional
from albert_edge.outputs.output_set import OutputSet
from albert_edge.runtime.consistency import checked_pack
from albert_edge.tasks import SequenceClassification, Task, get_task

if TYPE_CHECKING:
    from albert_edge.model.weights import AlbertWeights

FORMATS = ("tflite", "onnx")
REPORT_NAME = "conversion_report.json"


@dataclass
class ExportedFile:
    """One written model file and its judgement."""

    file: str
    format: str
    variant: str
    size_bytes: int
    ops: dict[str, int]
    parity: ParityResult

    def to_dict(self) -> dict[str, Any]:
        p = self.parity
        return {"file": self.file, "format": self.format, "variant": self.variant, "size_bytes": self.size_bytes,
                "ops": self.ops, "max_abs_logit": p.max_abs_logit, "max_abs_hidden": p.max_abs_hidden,
                "max_abs_pooled": p.max_abs_pooled, "max_abs": p.max_abs, "tolerance": p.tolerance, "passed": p.passed,
                "threads": list(p.threads), "cases": p.cases}


@dataclass
class ConversionReport:
    """What ``conversion_report.json`` holds."""

    checkpoint: str
    scheme: str
    task: str
    task_config: dict[str, Any]
    labels: list[str] | None
    max_seq_len: int
    num_parameters: int
    tokenizer: dict[str, Any]
    config: dict[str, Any]
    graph: dict[str, Any]
    files: list[ExportedFile] = field(default_factory=list)
    report_path: str | None = None
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in asdict(self).items() if k not in ("files", "report_path")}
        out["albert_edge_version"] = __version__
        out["reference"] = "albert_edge.model.reference.reference_forward (float64)"
        out["files"] = [f.to_dict() for f in self.files]
        return out

    def table(self) -> str:
        """The printed summary: one row per file; the judged output is the task's first required one."""
        header = (f"{'file':<22} {'size MB':>8} {'ops':>5} {'judged':>9} {'max|d|':>9} {'tol':>9} "
                  f"{'max|dhidden|':>13}  result")
        rows = [header, "-" * len(header)]
        for f in self.files:
            p = f.parity
            key = p.required[0] if p.required else "logits"
            value = p.max_abs.get(key, p.max_abs_logit if key == "logits" else None)
            rows.append(f"{f.file:<22} {f.size_bytes / 1e6:>8.2f} {sum(f.ops.values()):>5} {key:>9} {_num(value):>9} "
                        f"{_num(p.tolerance.get(key, p.tolerance.get('hidden'))):>9} {_num(p.max_abs_hidden):>13}  "
                        f"{'pass' if p.passed else 'FAIL'}")
        return "\n".join(rows)


def parse_formats(formats: str | Iterable[str]) -> tuple[str, ...]:
    """"tflite,onnx" or an iterable -> validated, de-duplicated tuple in the given order."""
    items = [f.strip().lower() for f in (formats.split(",") if isinstance(formats, str) else formats)]
    items = [f for f in items if f]
    unknown = [f for f in items if f not in FORMATS]
    if unknown or not items:
        raise ConversionError(f"--formats {','.join(items) or '(empty)'}: unknown format "
                              f"{unknown[0] if unknown else '(none)'}, expected a comma list of {', '.join(FORMATS)}")
    return tuple(dict.fromkeys(items))


def model_file_name(fmt: str, variant: str) -> str:
    """``model_fp32.tflite``, ``model_fp16.onnx``, ...; quantize writes ``model.tflite`` (its choice) and
    ``variants/<variant>.<format>``, so the two never share a name."""
    return f"model_{variant}.{fmt}"


def resolve_labels(weights: Any, labels: Sequence[str] | None, task: Task | str) -> list[str] | None:
    """Labels for the pack (tasks that need them); their count must equal the classifier width."""
    resolved = get_task(task, weights)
    if not resolved.needs_labels:
        if labels:
            # A regressor has a (one-output) classifier head: say which task takes no labels, not "no head".
            raise ConversionError(f"{weights.source}: --labels given, but a {resolved.name} model has no class names")
        return None
    width = SequenceClassification.num_labels(weights)
    if labels is None:
        return [f"LABEL_{i}" for i in range(width)]
    labels = [str(label).strip() for label in labels]
    if len(labels) != width:
        raise ConversionError(f"--labels has {len(labels)} names ({','.join(labels)}) but the classifier in "
                              f"{weights.source} has {width} outputs")
    if any(not label for label in labels) or len(set(labels)) != len(labels):
        raise ConversionError(f"--labels {','.join(labels)}: labels must be non-empty and distinct")
    return labels


def placeholder_labels(labels: Sequence[str] | None) -> bool:
    """True when ``labels`` are Hugging Face's ``LABEL_0, LABEL_1, ...`` defaults (names nobody chose)."""
    return bool(labels) and list(labels) == [f"LABEL_{i}" for i in range(len(labels))]


def placeholder_labels_warning(labels: Sequence[str] | None, command: str = "convert") -> str | None:
    """The one warning line ``convert`` / ``quantize`` print when the pack records placeholder labels, else None.

    The pack keeps them (a classifier needs one name per output), but an app would show "LABEL_1" to
    its users, so the line says where real names come from (both commands read config.json's id2label
    and a labels.txt beside the checkpoint).
    """
    if not placeholder_labels(labels):
        return None
    assert labels is not None
    shown = ",".join(labels) if len(labels) <= 3 else f"{labels[0]},...,{labels[-1]}"
    found = "no labels.txt, no real config.json id2label"
    hint = f"`albert-edge {command} ... --labels NAME0,NAME1,...`"
    return (f"warning: the {len(labels)} class labels {shown} are placeholders ({found}); the files record "
            f"them as they are; pass real names in class-id order with {hint}")


def build_pack(weights: Any, asset: TokenizerAsset, task: Task | str, labels: list[str] | None, max_seq_len: int,
               variant: str = "fp32"):
    """The runtime ModelPack carried by every exported file."""
    from albert_edge.runtime.pack import ModelPack

    task = get_task(task, weights)
    return ModelPack(tokenizer_type=asset.kind, tokenizer_asset=asset.data, do_lower_case=asset.do_lower_case,
                     max_seq_len=max_seq_len, labels=tuple(labels) if labels is not None else None, task=task.name,
                     task_config=task.settings(), outputs=task.outputs(), variant=variant,
                     source={"scheme": weights.scheme, "checkpoint": os.path.basename(str(weights.source).rstrip("/"))})


@dataclass(frozen=True)
class ConvertOptions:
    """What ``convert_checkpoint`` exports and how; checked when made (``ConversionError`` /
    ``ConfigError``, one line naming the flag) so a bad value is refused before anything is read.

    ``formats``: "tflite,onnx" or an iterable (normalised to a tuple); ``max_seq_len``: the pack's
    tokenizer length and the longest parity sample (None: 128, or max_position_embeddings if
    smaller); ``labels``: class names (default: the Hugging Face ``id2label`` beside the checkpoint,
    else ``LABEL_0..``); ``fp16``: also write fp16-weight files; ``vocab`` / ``do_lower_case``: the
    tokenizer asset and its casing (default: found beside the checkpoint); ``task``: a Task, a task
    name, or None to detect it from the weights; ``graph_options``: the TFLite graph's shape
    (by default batch-one: a [1, seq] file with no dynamic tensors, faster at real lengths and
    smaller in memory; the runtime runs batches through it row by row; ``batch_one=False`` for
    [batch, seq]); the ONNX graph is unaffected.
    """

    formats: str | Iterable[str] = FORMATS
    max_seq_len: int | None = None
    labels: Sequence[str] | None = None
    fp16: bool = False
    vocab: str | os.PathLike[str] | None = None
    do_lower_case: bool | None = None
    task: Task | str | None = None
    graph_options: GraphOptions = field(default_factory=GraphOptions)

    def __post_init__(self) -> None:
        """Refuse what no checkpoint could be converted with; the weights' own limits are checked later."""
        object.__setattr__(self, "formats", parse_formats(self.formats))
        if self.max_seq_len is not None and (not isinstance(self.max_seq_len, int) or self.max_seq_len < 3):
            raise ConfigError(f"--max-seq-len {self.max_seq_len}: expected an integer >= 3")
        check_optional("--max-seq-len", self.max_seq_len, MODEL_SEQ_LEN, ConfigError)  # the CLI's range too
        if self.graph_options is None:  # None reads as "the default graph", as it always has
            object.__setattr__(self, "graph_options", GraphOptions())

    @property
    def variants(self) -> tuple[str, ...]:
        """The weight precisions written per format: fp32, and fp16 when asked."""
        return ("fp32", "fp16") if self.fp16 else ("fp32",)


@dataclass
class _Model:
    """What the export steps share: the source, its task and labels, the pack's length and tokenizer."""

    source: ModelSource
    task: Task
    labels: list[str] | None
    max_seq_len: int
    asset: TokenizerAsset

    @property
    def weights(self) -> AlbertWeights:
        return self.source.weights


def convert_checkpoint(
    checkpoint: ModelSource | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    options: ConvertOptions | None = None,
    *,
    progress: Callable[[str], None] | None = None,
) -> ConversionReport:
    """Export ``checkpoint`` in each format in fp32 (and fp16), check parity, write the files and the report.

    ``checkpoint``: a ModelSource (read once by the caller; ``ModelSource.load(path, config)`` takes
    a config override), or a path, read here. ``options`` (a ConvertOptions, default: every format,
    fp32 only, everything detected) says what to export. ``task`` detection: a classifier head
    means classification; a sentence-transformers folder's modules.json sets the embedding pooling.
    Raises an AlbertEdgeError subclass (CheckpointError, ConfigError, TokenizerError, ConversionError,
    OutputError) with a one-line message; in that case no model file is written.
    ``progress`` receives one line per stage (each format x precision exported and checked, writing).
    """
    started = time.perf_counter()
    options = options or ConvertOptions()
    say = progress or (lambda _line: None)
    # TensorFlow (TF1 reader, converter) would otherwise print pages of C++ INFO logs around the table.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    out = ensure_writable_dir(out_dir)
    model = _resolve_model(ModelSource.of(checkpoint), options)
    say("numpy reference outputs for the parity samples")
    samples = make_samples(model.weights, default_cases(model.max_seq_len))
    built = _export_all(model, options, samples, say)
    say("write files")
    report = _conversion_report(model, options, samples)
    # Staged beside the previous run's files and swapped in together: a failure keeps those intact.
    with OutputSet(out, writer="convert") as staged:
        for exported, data in built:
            staged.write_bytes(exported.file, data)
            report.files.append(exported)
        report.seconds = round(time.perf_counter() - started, 2)
        report.report_path = str(staged.write_text(REPORT_NAME, json.dumps(report.to_dict(), indent=1) + "\n"))
    return report


def resolve_model(source: ModelSource, options: ConvertOptions) -> _Model:
    """The task, labels, sequence length and tokenizer asset ``convert`` settles for ``source``
    (``repack`` builds the same pack from a checkpoint)."""
    return _resolve_model(source, options)


def _resolve_model(source: ModelSource, options: ConvertOptions) -> _Model:
    """Settle the task, labels, sequence length and tokenizer asset of ``source`` under ``options``."""
    weights, checkpoint = source.weights, source.checkpoint
    max_seq_len = source.max_seq_len(options.max_seq_len)
    task = source.task(options.task)
    labels = options.labels
    if labels is None and task.needs_labels:
        found = source.checkpoint_labels(task.num_labels(weights))
        labels = found[0] if found else None
    resolved = resolve_labels(weights, labels, task)
    return _Model(source, task, resolved, max_seq_len, source.tokenizer_asset(options.vocab, options.do_lower_case))


def _export_all(model: _Model, options: ConvertOptions, samples: ParitySamples,
                say: Callable[[str], None]) -> list[tuple[ExportedFile, bytes]]:
    """Every format x precision, built in memory and parity-checked; the first failure raises."""
    built: list[tuple[ExportedFile, bytes]] = []
    for fmt in options.formats:
        for variant in options.variants:
            say(f"export and check {fmt} {variant}")
            pack = build_pack(model.weights, model.asset, model.task, model.labels, model.max_seq_len, variant)
            name = model_file_name(fmt, variant)
            data = _export_bytes(fmt, model.weights, pack, variant == "fp16", model.task, options.graph_options)
            checked_pack(data, name, pack)  # a written file is a read file: the runtime's own load-time check
            parity = check_parity(data, model.weights, variant=variant, task=model.task, samples=samples, name=name)
            if not parity.passed:
                raise ConversionError(parity.failure_line() + "; no model file written")
            ops = census_tflite(data) if fmt == "tflite" else census_onnx(data)
            built.append((ExportedFile(name, fmt, variant, len(data), ops, parity), data))
    return built


def _conversion_report(model: _Model, options: ConvertOptions, samples: ParitySamples) -> ConversionReport:
    """The report's header (files are added as they are written)."""
    weights, task, asset, config = model.weights, model.task, model.asset, model.weights.config
    return ConversionReport(
        checkpoint=str(model.source.checkpoint), scheme=weights.scheme, task=task.name, task_config=task.settings(),
        labels=model.labels, max_seq_len=model.max_seq_len, num_parameters=weights.num_parameters(),
        tokenizer={"type": asset.kind, "file": asset.path.name, "do_lower_case": asset.do_lower_case,
                   "vocab_size": asset.vocab_size},
        config=_config_dict(config),
        graph={"tflite": {**asdict(options.graph_options),
                          "activation": activation_kind(config, options.graph_options)},
               "onnx": {"opset": 17, "form": "standard ops (ORT-fusable)"},
               "gelu_exact_vs_tanh_drift": gelu_drift(weights, samples)},
    )


def gelu_drift(weights: Any, samples: Any) -> dict[str, Any] | None:
    """What the other GELU form would cost: reference drift if the checkpoint's GELU were swapped.

    The graph keeps the checkpoint's own form (TFLite's builtin GELU runs both); this records,
    in the report, how far the exact and tanh forms are apart for these weights.
    """
    from dataclasses import replace

    from albert_edge.model.reference import reference_forward

    act = weights.config.hidden_act
    if act not in ("gelu_tanh", "gelu_exact"):
        return None
    other = "gelu_exact" if act == "gelu_tanh" else "gelu_tanh"
    swapped = replace(weights, config=weights.config.with_changes(hidden_act=other))
    logit, hidden = 0.0, 0.0
    short = [(x, ref) for x, ref in zip(samples.inputs, samples.expected) if x["input_ids"].shape[1] <= 64]
    for inputs, ref in short:
        out = reference_forward(swapped, **inputs)
        hidden = max(hidden, float(abs(out.last_hidden_state - ref.last_hidden_state).max()))
        if ref.logits is not None:
            logit = max(logit, float(abs(out.logits - ref.logits).max()))
    return {"graph_form": act, "other_form": other, "max_abs_logit": logit, "max_abs_hidden": hidden}


def _export_bytes(fmt: str, weights: Any, pack: Any, fp16: bool, task: Task, options: GraphOptions) -> bytes:
    if fmt == "tflite":
        from albert_edge.convert.child_process import call_in_child
        from albert_edge.convert.tflite_export import tflite_model_bytes

        # In the child process: the converter holds the GIL for seconds, the progress heartbeat must go on.
        return call_in_child(tflite_model_bytes, weights, pack, fp16=fp16, task=task, options=options)
    from albert_edge.convert.onnx_export import onnx_model_bytes

    return onnx_model_bytes(weights, pack, fp16=fp16, task=task)


def _config_dict(config: Any) -> dict[str, Any]:
    return config.to_dict() if hasattr(config, "to_dict") else dict(vars(config))


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2e}"
