"""``quantize_checkpoint``: checkpoint + calibration text -> quantized, measured model files + report.

Order matters for the no-partial-files promise (as in ``convert_checkpoint``): arguments and data
files are validated first, every variant is built, run and timed in memory, and only then are the
files written atomically with ``quantize_report.json``. A failure raises one AlbertEdgeError line.

The drift judge is the fp32 TFLite model built from the same weights (itself parity-checked by
``albert-edge convert``): on the labelled ``--eval`` TSV when given (accuracy, agreement, logit
error), otherwise on a held-out quarter of the calibration texts (agreement and logit error only;
all of them when the run calibrates nothing: dynamic, fp16). Calibration texts are optional for
such runs (``calibration_uses``); without them and without ``--eval`` the variants are built and
timed but not judged. A variant whose rows are too few for the agreement asked is "not judged"
(``auto.not_judged``), never chosen, and says so.

A run is a sequence of steps over one ``QuantizeRun`` (the resolved model, the judge set and what
each step adds): open (inputs checked, model resolved, judge set made) -> build and judge ->
error tables -> fallback search -> time -> pack -> decide -> write. Each step reads what the
earlier ones left in the run and adds its own part, so each can be read (and tested) alone.
"""

from __future__ import annotations

import json
import os
import platform
import time
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from albert_edge.outputs.atomic import ensure_writable_dir
from albert_edge.convert.source import ModelSource
from albert_edge.errors import AlbertEdgeError, BudgetNotMetError, QuantizationError
from albert_edge.neighbours import CpuWindow, usable_cpus
from albert_edge.outputs.output_set import OutputSet
from albert_edge.quantize.auto import (SPEED_TIE_BAND, Budget, best_effort, budget_failures, choose,
                                      misses_only_size, not_judged)
from albert_edge.quantize.calibration import (
    MAX_CALIBRATION_TEXTS,
    CalibrationSet,
    encode_calibration,
    read_calibration_texts,
)
from albert_edge.quantize.measure import StopRule, interleaved_latency, latency_inputs, ratio_interval, variant_values
from albert_edge.quantize.sequential_judge import SequentialJudge
from albert_edge.quantize.options import FORMATS, MODES, QuantizeOptions, parse_formats
from albert_edge.quantize.report import (
    OVER_BUDGET_DIR,
    OVER_BUDGET_PREFIX,
    REPORT_MD,
    REPORT_NAME,
    QuantizeReport,
    VariantResult,
    fallback_line,
    held_back,
    held_back_line,
    min_rows,
    relax_sentence,
    shipped_name,
    variant_file_name,
)
from albert_edge.tasks import Task

if TYPE_CHECKING:
    from albert_edge.convert.assets import TokenizerAsset
    from albert_edge.model.weights import AlbertWeights
    from albert_edge.quantize.op_errors import ErrorTable

# Re-exported: callers and tests import these from the pipeline.
__all__ = ["FORMATS", "MODES", "OVER_BUDGET_DIR", "OVER_BUDGET_PREFIX", "REPORT_NAME", "QuantizeOptions", "QuantizeReport",
           "VariantResult", "calibration_uses", "parse_formats", "quantize_checkpoint", "reject_model_file"]

#: Calibration texts the per-op error tables run (both graphs keep every tensor: slow interpreters).
TABLE_TEXTS = 16
#: fp32 reference rows run per piece while quantize waits for the converter child (about a second each on
#: the sample): small enough that a converted variant waits at most that long to be judged.
REFERENCE_PIECE = 64
#: Interleaved rounds every variant is timed for, whether or not its speed can change the verdict.
MIN_TIMING_ROUNDS = 5
#: TFLite variants built per mode (fp32 is always built: it is the reference and the speed baseline).
#: Auto leaves out ``int8_full`` (still built by ``--mode int8`` and by name in ``--variants``): its int8
#: attention and LayerNorm fall out of XNNPACK, so it was 1.4-1.6x fp32's time on the sample and 0.91x with
#: -2.2 points on MiniLM (records 0009, 0121), never chosen, and it cost auto a calibrated conversion and an
#: all-rows judge (about a third of the run; record 0190).
TFLITE_MODE_VARIANTS = {
    "dynamic": ("dynamic_int8",),
    "int8": ("int8_fc", "int8_full"),
    "int16x8": ("int16x8",),
    "fp16": ("fp16",),
    "auto": ("dynamic_int8", "dynamic_int8_col", "int8_fc"),
}
#: What ``--mode dynamic`` builds in TFLite for these tasks instead: per-row activation int8 costs an
#: embedding's cosine floor and QA spans on pretrained BERTs (outlier channels), and ``dynamic_int8_col_sq``
#: (per-column tables, SmoothQuant MULs) meets the floor and 0.97 of fp32's spans at the same speed (decisions
#: 0200, 0201). Sentence classifiers and regressors, not measured with it, keep ``dynamic_int8``.
TFLITE_DYNAMIC_BY_TASK = {name: ("dynamic_int8_col_sq",)
                          for name in ("feature_extraction", "question_answering", "token_classification")}
#: Variants whose FCs read a SmoothQuant MUL's output: the float fallback cannot point them at fp32 kernels.
SMOOTHED_VARIANTS = ("dynamic_int8_col_sq",)
#: ONNX's dynamic default is ``dynamic_int8_block`` (int8 block weights, activations int8 per block of a
#: row): ORT's ``dynamic_int8`` scales each activation tensor once and loses the embedding floor on
#: pretrained BERTs; it stays by name and in auto's list, where it wins when it fits (it is ~2x faster on x86).
#: Auto leaves out ``qdq_int8`` (still built by ``--mode int8`` and ``--variants onnx_qdq_int8``): ORT's static
#: int8 was 12.97 MB and 0.78-0.81x fp32's time on the sample, against 4.8 MB and ~0.5x for ORT's dynamic
#: int8, never chosen for model.tflite or model.onnx, and it cost auto a calibrated build and an all-rows
#: judge, ~14 s of an idle 79 s run (record 0250).
ONNX_MODE_VARIANTS = {
    "dynamic": ("dynamic_int8_block",),
    "int8": ("qdq_int8",),
    "int16x8": (),
    "fp16": (),
    "auto": ("dynamic_int8", "dynamic_int8_block"),
}


@dataclass
class JudgeSet:
    """The rows every variant is judged on: encoded samples, the task's gold values (None: judged
    against fp32's own outputs only) and the report's ``judge`` section describing them."""

    samples: list[dict[str, np.ndarray]]
    gold: np.ndarray | None
    info: dict[str, Any]


@dataclass
class QuantizeRun:
    """One run's state: what ``_open_run`` resolved once (the model source, task, labels, tokenizer
    asset, calibration and judge sets, budget, output directory) and what the later steps add to it."""

    source: ModelSource
    calib: str | os.PathLike[str] | None
    options: QuantizeOptions
    task: Task
    labels: list[str] | None
    asset: TokenizerAsset
    calibration: CalibrationSet
    judge: JudgeSet
    budget: Budget
    out: Path
    say: Callable[[str], None]
    started: float
    results: list[VariantResult] = field(default_factory=list)
    tables: dict[str, ErrorTable] = field(default_factory=dict)
    fallback_log: list[dict[str, Any]] = field(default_factory=list)
    timing: dict[str, Any] = field(default_factory=dict)
    #: Each packed variant's runtime pack (``_pack_variants``); its file is packed again as it is written.
    packs: dict[str, Any] = field(default_factory=dict)
    judge_rows: SequentialJudge | None = None
    #: The converter child's preparation (``builds.prepare_child``), awaited before its first conversion.
    child_ready: Future[None] | None = None
    #: The variants the mode's list had but this run did not build, each with its report line
    #: (``builds.left_out_by_size``).
    left_out: dict[str, str] = field(default_factory=dict)
    #: The checkpoint path when this run read the weights from it unchanged (the converter's child may read it too).
    read_from: str | None = None

    @property
    def weights(self) -> AlbertWeights:
        return self.source.weights

    def judge_variant(self, r: VariantResult) -> None:
        """Judge ``r`` against the fp32 reference on the judge set (sets ``r.drift`` or ``r.error``): on the
        seeded rows that decide the budget (``sequential_judge``), all of them when needed."""
        assert self.judge_rows is not None, "the judge is made by _build_and_judge"
        _judge(r, self.judge_rows)


def variant_names(mode: str, variants: Sequence[str] | None, task: str | None = None) -> tuple[list[str], list[str]]:
    """(TFLite, ONNX) variant names a run builds besides fp32: the mode's (for ``task``, a task name), or the
    ``variants`` override (``onnx_``-prefixed names choose the ONNX list; without any, the mode's ONNX list)."""
    defaults = TFLITE_DYNAMIC_BY_TASK.get(task or "", TFLITE_MODE_VARIANTS[mode]) if mode == "dynamic" else \
        TFLITE_MODE_VARIANTS[mode]
    if mode == "auto":  # the faithful dynamic file is one more candidate for these tasks
        defaults = (*defaults, *(v for v in TFLITE_DYNAMIC_BY_TASK.get(task or "", ()) if v not in defaults))
    tflite = list(defaults) if variants is None else [v for v in variants if v != "fp32" and not v.startswith("onnx_")]
    onnx = [v[len("onnx_"):] for v in variants or () if v.startswith("onnx_")] or list(ONNX_MODE_VARIANTS[mode])
    return tflite, onnx


#: Variants that read calibration texts although they are not calibrated (SmoothQuant's activation scales).
_READS_CALIBRATION = ("dynamic_int8_col_smooth",)


def calibration_uses(options: QuantizeOptions, left_out: Sequence[str] = ()) -> list[str]:
    """What of ``options`` reads calibration texts; empty when ``--calib`` is optional (dynamic, fp16).
    ``left_out``: TFLite names the run did not build after all (``builds.left_out_by_size``), so the report
    does not say they read the texts.

    Static int8 and int16x8 variants set their activation ranges from them, and auto's fallback
    searches rank ops on them. A run that uses none of these reads ``--calib`` only as text to
    judge on (without ``--eval``) and for the per-op error tables.
    """
    from albert_edge.quantize.tflite_quant import VARIANTS

    tflite, onnx = variant_names(options.mode, options.variants)
    uses = [name for name in tflite if name not in left_out and (
        name in _READS_CALIBRATION or (name in VARIANTS and VARIANTS[name].calibrated))] if "tflite" in options.format_list else []
    if "onnx" in options.format_list:
        uses += [f"onnx_{name}" for name in onnx if name == "qdq_int8"]
    if options.mode == "auto":
        uses.append("the fallback searches")
    return uses


def _require_calibration(calib: str | os.PathLike[str] | None, options: QuantizeOptions) -> list[str]:
    """What reads calibration texts in this run; one line naming them when ``calib`` is missing."""
    uses = calibration_uses(options)
    if calib is None and uses:
        raise QuantizationError(f"--mode {options.mode} needs --calib FILE (calibration texts: .txt one per line, or "
                                f".tsv label<TAB>text): {', '.join(uses)} read them; --mode dynamic and --mode fp16 "
                                "need none")
    return uses


def reject_model_file(path: str | os.PathLike[str]) -> None:
    """A .tflite/.onnx input cannot be quantized again: say whether it already is, and what to pass."""
    from albert_edge.runtime.pack import model_kind, read_model_bytes

    p = Path(path)
    if not p.is_file() or p.suffix.lower() not in (".tflite", ".onnx"):
        return
    data = read_model_bytes(p)
    kind = model_kind(data)
    quantized = False
    if kind == "tflite":
        from albert_edge.quantize.census import is_quantized_tflite

        quantized = is_quantized_tflite(data)
    elif kind == "onnx":
        from albert_edge.quantize.census import census_onnx_variant

        c = census_onnx_variant(data)
        quantized = bool(c["quantize"] or c["dequantize"] or c["integer_matmuls"])
    if quantized:
        raise QuantizationError(f"{p}: model is already quantized; pass the float checkpoint it came from")
    raise QuantizationError(f"{p}: quantize rebuilds the graph from weights; pass the checkpoint (or its directory), "
                            "not an exported model file")


def _labels(source: ModelSource, weights: AlbertWeights, labels: Sequence[str] | None, task: Task,
            eval_labels: Sequence[str] | None, eval_path: Any) -> tuple[list[str], str]:
    """Class names in classifier order and where they came from: ``--labels``, config.json id2label,
    a labels.txt beside the checkpoint, the eval file's own names (``EvalFormat.labels_from_eval``), else
    ``LABEL_i``."""
    from albert_edge.convert.pipeline import resolve_labels

    width = task.num_labels(weights)
    if labels:
        return resolve_labels(weights, labels, task), "--labels"
    found = source.checkpoint_labels(width)
    if found is not None:
        return found
    if eval_labels is not None and len(eval_labels) == width:
        # The project's fine-tuning assigns class ids in sorted label order, as infer_labels does.
        return list(eval_labels), f"sorted labels of {eval_path}"
    return [f"LABEL_{i}" for i in range(width)], "default LABEL_i"


def quantize_checkpoint(
    checkpoint: ModelSource | str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    calib: str | os.PathLike[str] | None,
    options: QuantizeOptions | None = None,
    *,
    progress: Callable[[str], None] | None = None,
    **overrides: Any,
) -> QuantizeReport:
    """Build, judge and time the variants of ``options.mode``; write them and ``quantize_report.json``.

    ``checkpoint``: a ModelSource (read once by the caller, e.g. shared with ``convert_checkpoint``;
    its directory still provides the tokenizer asset and labels) or a path, read here.
    ``calib``: calibration texts; None for a run that calibrates nothing (``calibration_uses`` is
    empty: dynamic, fp16), whose variants are then judged on ``options.eval_tsv`` only, or, without
    it, built and timed but not judged.
    ``options`` (a QuantizeOptions; keyword ``overrides`` replace single fields, e.g. ``mode="dynamic"``)
    says what to build and the budget. In auto mode, when no variant fits the budget it raises
    QuantizationError (``exc.report`` holds the measurements) and writes nothing.
    ``progress`` receives one line per stage (build, each variant judged, fallback, timing).
    """
    options = replace(options or QuantizeOptions(), **overrides)  # replace() validates the overrides too
    started = time.perf_counter()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    run = _open_run(checkpoint, out_dir, calib, options, progress or (lambda _line: None), started)
    _build_and_judge(run)
    _error_tables(run)
    _fallback_searches(run)
    _weights_spent(run)
    _time_variants(run)
    _pack_variants(run)
    _confirm_chosen(run)
    _judge_reference(run)
    report = _decide(run)
    _write(run, report)
    if report.status == "over_budget":
        error = BudgetNotMetError(report.relax or "no quantized variant meets the budget")
        error.report = report
        raise error
    return report


def _open_run(checkpoint: ModelSource | str | os.PathLike[str], out_dir: str | os.PathLike[str],
              calib: str | os.PathLike[str] | None, options: QuantizeOptions, say: Callable[[str], None],
              started: float) -> QuantizeRun:
    """Check the inputs and resolve the model once: weights, task, label names, tokenizer, judge set.

    Everything that can refuse the inputs (a model file given as checkpoint, unreadable calibration
    or eval data, a task the weights do not fit) runs before the output directory is created.
    """
    uses = _require_calibration(calib, options)
    if not isinstance(checkpoint, ModelSource):
        reject_model_file(checkpoint)
    texts = read_calibration_texts(calib) if calib is not None else []
    source, child_ready = (checkpoint, None) if isinstance(checkpoint, ModelSource) else read_checkpoint(checkpoint)
    weights = source.weights
    # The same limit convert uses: a pack longer than the position table is a file no reader opens.
    options = replace(options, max_seq_len=source.max_seq_len(options.max_seq_len))
    try:
        task = source.task(options.task)
    except AlbertEdgeError as exc:
        raise QuantizationError(str(exc)) from None
    default_judge = default_judge_file(source.checkpoint, task) if options.eval_tsv is None else None
    if default_judge is not None:
        options = replace(options, eval_tsv=default_judge)
        say(f"judging on {default_judge} (the labelled split beside the checkpoint; no --eval given)")
    # The eval file is the task's own labelled format (``Task.eval_format``: a TSV for sentence
    # classification, a .jsonl for the others) or plain texts judged against fp32. Both are read
    # (and a bad one refused) before the output directory exists.
    eval_path = options.eval_tsv
    own_format = eval_path is not None and task.eval_format.reads_labelled(eval_path)
    eval_labels = task.eval_format.labels_from_eval(eval_path) if own_format else None
    eval_texts = read_calibration_texts(eval_path, min_texts=2) if eval_path is not None and not own_format else None
    out = ensure_writable_dir(out_dir)
    # Every task with a label head needs the names (the pack's labels.txt; entity F1 decodes them).
    names, labels_source = (_labels(source, weights, options.labels, task, eval_labels, eval_path)
                            if task.needs_labels else (None, None))
    if options.labels and not task.needs_labels:
        raise QuantizationError(f"{weights.source}: --labels given but the task is {task.name}")
    task = task.bind_labels(names)

    asset = source.tokenizer_asset(options.vocab)
    calibration, judge = _judge_set(texts, calib, eval_texts, own_format, options, task, asset, bool(uses))
    if task.needs_labels:  # what the pack records, whichever data judged the variants
        judge.info.setdefault("labels", names)
        judge.info.setdefault("labels_from", labels_source)
    judge.info.update({"task": task.name, "task_config": task.settings(), "baseline": "tflite:fp32"})
    if default_judge is not None:
        judge.info["default"] = "the labelled split beside the checkpoint (no --eval given)"
    # read_from: a path this run read itself (child_ready), and a local one (a Hub id would be resolved again).
    return QuantizeRun(source, calib, options, task, names, asset, calibration, judge, options.budget(), out, say,
                       started, child_ready=child_ready,
                       read_from=str(checkpoint) if child_ready is not None and Path(checkpoint).exists() else None)


def read_checkpoint(checkpoint: str | os.PathLike[str]) -> tuple[ModelSource, Future[None]]:
    """The checkpoint read here without TensorFlow, and the converter child started beside it.

    Why: TensorFlow's TF1 reader cost this process a TensorFlow import (5-13 s) for a read the bundle
    reader (``model/tensor_bundle.py``) does in under a second; the child imports TensorFlow for its
    conversions anyway, so it verifies the data checksums there while this process makes the judge set
    and builds ONNX (``builds.prepare_child``, record 0250). Its verdict is awaited before the first
    conversion's result: a damaged shard is still one line, before any file is written.
    """
    from albert_edge.convert.child_process import start_in_child
    from albert_edge.model import checkpoint_format, load_checkpoint
    from albert_edge.quantize.builds import prepare_child

    weights = load_checkpoint(checkpoint, verify_checksums=False)
    tf1 = checkpoint_format(checkpoint) == "tf1"
    return ModelSource(checkpoint, weights), start_in_child(prepare_child, str(checkpoint) if tf1 else None)


#: Labelled held-out splits looked for beside a checkpoint when no --eval is given (the sample's dev.tsv).
DEFAULT_JUDGE_FILES = ("dev.tsv", "dev.jsonl")


def default_judge_file(checkpoint: str | os.PathLike[str], task: Task) -> Path | None:
    """The judge set a run without ``--eval`` uses: a ``dev.tsv`` / ``dev.jsonl`` beside the checkpoint in the
    task's own labelled format, else None (then calibration texts are judged, as before).

    Why: calibration files are sized for calibration (the sample's 256 texts), too few to show 99 %
    agreement (268 rows); a checkpoint folder that carries its labelled dev split should be judged on
    it, in the task's metric, rather than have every variant marked "not judged". The report's
    ``judge.default`` and a progress line say when this happened; ``--eval`` always wins.
    """
    from albert_edge.convert.assets import checkpoint_dir

    for name in DEFAULT_JUDGE_FILES:
        path = checkpoint_dir(checkpoint) / name
        if path.is_file() and task.eval_format.reads_labelled(path):
            return path
    return None


def _judge_set(texts: list[str], calib: str | os.PathLike[str] | None, eval_texts: list[str] | None,
               own_format: bool, options: QuantizeOptions, task: Task, asset: TokenizerAsset,
               calibrates: bool) -> tuple[CalibrationSet, JudgeSet]:
    """The calibration set and the rows the variants are judged on, in the model's own tokenization.

    The judge is the eval file in the task's labelled format, else its plain texts, else the
    calibration texts: when the run ``calibrates`` (``calibration_uses``), their last quarter only
    (calibration then uses the first three quarters, so no variant is judged on text it was
    calibrated on); when it does not (dynamic, fp16), all of them, as nothing was fitted to them.
    Without any text the judge set is empty: the variants are built and timed, not judged.
    """
    from albert_edge.tokenizer import Preprocessor, load_tokenizer

    eval_path = options.eval_tsv
    calib_name = "(no --calib)" if calib is None else str(calib)
    tokenizer = load_tokenizer(asset.kind, asset.data, asset.do_lower_case, str(asset.path))
    preprocessor = Preprocessor(tokenizer, options.max_seq_len)
    own = (task.eval_format.labelled_samples(eval_path, tokenizer, options.max_seq_len, task.labels,
                                             options.max_eval_examples)
           if own_format else None)
    if own_format and own is None:
        raise QuantizationError(f"{eval_path}: task {task.name} has no labelled eval format")
    if own is not None:
        samples, gold = own
        return (encode_calibration(texts, preprocessor, calib_name),
                JudgeSet(samples, gold, {"data": str(eval_path), "examples": len(samples),
                                         "kind": task.eval_format.labelled_kind}))
    if eval_texts is not None:
        calibration = encode_calibration(texts, preprocessor, calib_name)
        samples = list(encode_calibration(eval_texts, preprocessor, str(eval_path), max_texts=len(eval_texts)).samples)
        return calibration, JudgeSet(samples, None, {"data": str(eval_path), "examples": len(samples),
                                                     "kind": "texts, one per line"})
    if not texts:
        return (CalibrationSet((), calib_name),
                JudgeSet([], None, {"data": None, "examples": 0, "kind": "none: no --eval and no --calib texts"}))
    if not calibrates:
        samples = list(encode_calibration(texts, preprocessor, calib_name, max_texts=len(texts)).samples)
        calibration = CalibrationSet(tuple(samples[:MAX_CALIBRATION_TEXTS]), calib_name)  # the error tables' texts
        return calibration, JudgeSet(samples, None, {"data": f"{calib} (all texts: --mode {options.mode} calibrates "
                                                             "nothing on them)", "examples": len(samples),
                                                     "kind": task.eval_format.unlabelled_kind})
    # Calibrate on the first three quarters, judge on the last quarter (never on calibration text).
    cut = max(1, (3 * len(texts)) // 4)
    calibration = encode_calibration(texts[:cut], preprocessor, str(calib))
    samples = list(encode_calibration(texts[cut:], preprocessor, str(calib), max_texts=len(texts)).samples)
    return calibration, JudgeSet(samples, None, {"data": f"{calib} (last quarter, not used for calibration)",
                                                 "examples": len(samples), "kind": task.eval_format.unlabelled_kind})


def _build_and_judge(run: QuantizeRun) -> None:
    """Build fp32 and the mode's variants, run fp32 on the judge set (the reference), judge every variant."""
    from albert_edge.quantize.builds import VariantBuilds, left_out_by_size

    o = run.options
    run.say(f"building variants ({o.mode}, {', '.join(o.format_list)})")
    # TFLite conversions queue in the child process; ONNX is built here, and each variant is judged as soon
    # as it is ready, so judging overlaps the child's conversions (quantize/builds.py).
    tflite, onnx = variant_names(o.mode, o.variants, run.task.name)
    tflite, run.left_out = left_out_by_size(tflite, run.weights, o.mode, o.variants is not None)
    for line in run.left_out.values():
        run.say(line)
    builds = VariantBuilds(run.weights, tflite, onnx, o.format_list, run.calibration, run.task, run.say,
                           ready=run.child_ready, checkpoint=run.read_from, graph=o.graph_options())
    builds.build_onnx()
    if not run.judge.samples:
        run.results = list(builds.in_order())
        run.say("no rows to judge on (no --eval, no --calib): the variants are built and timed, not judged")
        return
    task = run.task

    def run_values(model: bytes, rows: Sequence[dict[str, np.ndarray]]) -> np.ndarray:
        # One thread while the child converts on the other core: two would spin against it (ORT 2.0-2.5x,
        # XNNPACK 1.5x slower per row beside a busy core); the values are the same bytes (record 0250).
        return variant_values(model, rows, task, 1 if builds.converting() else o.num_threads)

    judge = run.judge_rows = SequentialJudge(run.judge.samples, run.judge.gold, None, run.budget, run_values,
                                             task.drift, subsample=o.judge_subsample)
    run.judge.info["subsample"] = {"seed": judge.seed, "stages": judge.sizes,
                                   "rule": "rows grow until the task's drift decides the budget (Wilson bounds)"}
    for r in builds.onnx:  # while the child still converts fp32, nothing else could run here
        if not r.error:
            run.say(f"running {r.key} on the first {judge.sizes[0]} judge rows while the converter works")
            judge.prefetch(r.data)
    judge.reference_model = builds.fp32.data
    builds.while_waiting = lambda: judge.extend_reference(REFERENCE_PIECE)
    run.results = []
    for k, r in enumerate(builds.in_order(), 1):
        run.results.append(r)
        if r is builds.fp32 and judge.subsample:
            # The baseline's own figures are on all rows (``_judge_reference``): the rest are run while the
            # child converts, or for the chosen variant's confirmation.
            run.say(f"judging {r.key} ({k}/{builds.total}) on the first {judge.sizes[0]} rows now (all "
                    f"{len(run.judge.samples)} while the converter works or at the end)")
            judge.extend_reference(judge.sizes[0])  # a task that cannot be subsampled stops subsampling here
            if judge.subsample:
                continue
        run.say(f"judging {r.key} ({k}/{builds.total}) on up to {len(run.judge.samples)} rows")
        run.judge_variant(r)


def _judge_reference(run: QuantizeRun) -> None:
    """fp32's own figures, on every row (the baseline every report line is read against): from the values
    the run already has when the converter left time for them or the chosen variant's confirmation needed
    them, else run now."""
    fp32 = run.results[0] if run.results else None
    if run.judge_rows is None or fp32 is None or fp32.drift is not None:
        return
    left = len(run.judge.samples) - run.judge_rows.reference_rows
    if left > 0:  # a stage of its own only when there are rows to run
        run.say(f"judging {fp32.key} on its last {left} of {len(run.judge.samples)} rows (the baseline)")
    run.judge_variant(fp32)
    _mark(fp32, run.budget)


def needs_error_table(r: VariantResult, budget: Budget, mode: str) -> bool:
    """Whether ``r`` gets a per-op error table: a quantized TFLite variant judged to miss the budget, the
    one kind a fallback (auto's search, or the user reading the worst ops) can act on. A variant that
    meets the budget, or was not judged (more rows, not floated ops, would decide it), gets none; nor
    does auto's ``dynamic_int8_col``, whose search ranks FCs by measured gain instead."""
    from albert_edge.quantize.dynamic_search import BASE_VARIANT as SEARCHED_BY_GAIN

    if r.format != "tflite" or r.name == "fp32" or r.error or r.drift is None:
        return False
    if mode == "auto" and r.name == SEARCHED_BY_GAIN:
        return False
    return bool(budget_failures(r, budget)) and not_judged(r, budget) is None


def _error_tables(run: QuantizeRun) -> None:
    """Per-op error tables of the variants that need a fallback (``needs_error_table``): what the
    fallback search ranks ops by. Each costs two keep-every-tensor interpreters, so none is built
    for a variant nothing will fall back."""
    if not run.options.error_tables or not len(run.calibration):
        return  # the tables run calibration texts; without --calib there are none
    from albert_edge.quantize.op_errors import error_table

    fp32 = run.results[0].data
    needed = [r for r in run.results if needs_error_table(r, run.budget, run.options.mode)]
    for k, r in enumerate(needed, 1):
        run.say(f"per-op error table of {r.key} ({k}/{len(needed)}) on "
                f"{min(TABLE_TEXTS, len(run.calibration))} calibration texts")
        try:
            run.tables[r.key] = error_table(r.name, r.data, fp32, run.calibration.samples, run.weights, TABLE_TEXTS)
        except (RuntimeError, ValueError) as exc:  # a graph LiteRT cannot run keeps its build error
            run.say(f"no error table for {r.key}: {' '.join(str(exc).split())[:200]}")


def _fallback_searches(run: QuantizeRun) -> None:
    """Auto mode: new variants with the worst ops back to float, while drift exceeds the budget."""
    o = run.options
    if o.mode != "auto":
        return
    run.say("fallback search (the ops the error tables rank worst back to float while drift exceeds the budget)")
    run.results += _fallback_search(run)
    from albert_edge.quantize.dynamic_search import dynamic_fallback_search

    run.say("dynamic int8 search (per-column tables, then the FCs that gain most back to float)")
    run.results += dynamic_fallback_search(run.results, run.calibration, run.budget, o.max_fallback_steps, run.task,
                                           o.num_threads, run.judge_variant, VariantResult, run.fallback_log,
                                           run.say)
    _size_search(run)
    if "onnx" in o.format_list:
        from albert_edge.quantize.onnx_search import onnx_fallback_search

        run.say("ONNX dynamic int8 search (the MatMul weights that gain most back to float)")
        run.results += onnx_fallback_search(run.results, run.calibration, run.budget, o.max_fallback_steps, run.task,
                                            o.num_threads, run.judge_variant, VariantResult, run.fallback_log, run.say)


def _size_search(run: QuantizeRun) -> None:
    """Auto with ``--max-size-mb`` under the int8 file's size: the int4 and mixed 4/8 candidates (``size_search``)."""
    from albert_edge.convert.child_process import call_in_child
    from albert_edge.quantize.size_search import size_search
    from albert_edge.quantize.tflite_quant import tflite_variant

    int8 = next((r for r in run.results if r.key == "tflite:dynamic_int8" and not r.error), None)
    if int8 is None or run.budget.max_size_bytes is None:
        return
    fp32 = run.results[0].data

    def build(name: str) -> bytes:
        return call_in_child(tflite_variant, run.weights, name, run.calibration, float_model=fp32, task=run.task,
                             built={"dynamic_int8": int8.data},  # the int4 recipes edit it: no second conversion
                             graph=run.options.graph_options())

    run.results += size_search(run.results, run.calibration, run.budget, run.options.max_fallback_steps, run.task,
                               run.options.num_threads, run.judge_variant, VariantResult, build,
                               len(_packed(run, int8)) - len(int8.data), run.fallback_log, run.say)


def _packed(run: QuantizeRun, r: VariantResult, pack: Any = None) -> bytes:
    """``r``'s model bytes with the runtime pack (``pack``, else built for ``r``) attached: the file the app ships."""
    from albert_edge.convert.pipeline import build_pack
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    pack = pack or build_pack(run.weights, run.asset, run.task, run.labels, run.options.max_seq_len, r.name)
    return attach_standard_metadata(r.data, pack) if r.format == "tflite" else _onnx_with_pack(r.data, pack)


def _weights_spent(run: QuantizeRun) -> None:
    """Empty the weights' tensors once every variant is built, when this run read them itself from a path and
    they are large (``builds.LARGE_WEIGHTS_BYTES``); hand the freed heap back in any case.

    Why: the steps after the searches (timing, packing, the chosen's confirmation, writing) read only the
    weights' config, scheme and source; on BERT-base their 390 MiB sat under the parent's packing peak, the
    run's largest (record 0280). A ModelSource the caller gave keeps its weights (the caller may use them).
    """
    import gc

    from albert_edge.neighbours.freed_memory import release_freed_memory
    from albert_edge.model.weights import weights_nbytes
    from albert_edge.quantize.builds import LARGE_WEIGHTS_BYTES

    if run.read_from is not None and weights_nbytes(run.weights) >= LARGE_WEIGHTS_BYTES:
        run.weights.tensors.clear()
    gc.collect()
    release_freed_memory()


def _time_variants(run: QuantizeRun) -> None:
    """Time every runnable variant interleaved with fp32 at full length; set latency and ratio to fp32."""
    o = run.options
    config = run.weights.config
    runnable = {r.key: r.data for r in run.results if not r.error}
    # Time at full length, but never past what the pack's tokenizer or the position table allows.
    seq_len = min(o.seq_len, o.max_seq_len, config.max_position_embeddings)
    # Only the variants within budget can be chosen, so only their speed must be known within the tie band.
    needed = frozenset(r.key for r in run.results if r.key in runnable and r.name != "fp32"
                       and r.drift is not None and not budget_failures(r, run.budget))
    stop = StopRule("tflite:fp32", needed, SPEED_TIE_BAND, min(o.rounds, MIN_TIMING_ROUNDS))
    run.say(f"timing {len(runnable)} variants, up to {o.rounds} interleaved rounds (until the {len(needed)} within "
            f"budget are known within {100 * SPEED_TIE_BAND:g}%)")
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    window = CpuWindow().start()
    latency = interleaved_latency(runnable, latency_inputs(seq_len, config.vocab_size), o.num_threads, o.rounds,
                                  stop=stop)
    held = window.stop()
    done = latency["tflite:fp32"]["rounds"]
    run.timing = {"threads": o.num_threads, "seq_len": seq_len, "batch": 1, "rounds": done, "max_rounds": o.rounds,
                  "stopped": "decided" if done < o.rounds else "max rounds", "interleaved": True,
                  "cpu": platform.processor() or platform.machine(), "baseline": "tflite:fp32",
                  "speed_tie_band": SPEED_TIE_BAND}
    run.timing["load_average"] = [load_before, os.getloadavg()[0] if hasattr(os, "getloadavg") else None]
    run.timing["logical_cores"] = os.cpu_count()  # what the verdict needs to say whether speed could be decided
    # The CPUs other processes held while timing (the load average counts this run's own threads).
    run.timing["neighbour_cores"] = None if held is None else round(held, 3)
    run.timing["usable_cpus"] = len(usable_cpus())
    rounds = {key: entry.pop("rounds_ms") for key, entry in latency.items()}
    base = latency["tflite:fp32"]["median_ms"]
    for r in run.results:
        if r.key in latency:
            r.latency = latency[r.key]
            r.ratio_vs_fp32 = r.latency["median_ms"] / base
            r.ratio_interval = ratio_interval(rounds[r.key], rounds["tflite:fp32"])


def _pack_variants(run: QuantizeRun) -> None:
    """Attach the runtime pack to every built variant; its shipped size decides the budget marks.

    Each packed file is checked and measured, then dropped: ``_write`` packs the kept ones again, one at a
    time, as it writes them. Holding every packed copy beside its unpacked bytes was BERT-base auto's peak
    (4.1 GB, record 0270); packing again costs ~2 CPU s for a 390 MiB file (record 0280)."""
    from albert_edge.neighbours.freed_memory import release_freed_memory
    from albert_edge.convert.pipeline import build_pack
    from albert_edge.runtime.consistency import checked_pack

    release_freed_memory()  # what the timing's interpreters freed: the packing copies go on top of what is left
    for r in run.results:
        if r.error:
            continue
        pack = run.packs[r.key] = build_pack(run.weights, run.asset, run.task, run.labels, run.options.max_seq_len,
                                             r.name)
        packed = _packed(run, r, pack)
        # A written file is a read file: the load-time check every runtime class makes, before any report.
        checked_pack(packed, f"{run.out} ({r.key})", pack)
        r.size_bytes = len(packed)  # what the app ships: graph + pack
        del packed
        _mark(r, run.budget)


def _mark(r: VariantResult, budget: Budget) -> None:
    """Set ``r``'s budget marks from its drift and shipped size: not judged, meets budget, the gate's rule."""
    r.not_judged = not_judged(r, budget)
    r.meets_budget = r.name != "fp32" and not r.not_judged and not budget_failures(r, budget)
    verdict = getattr(r.drift, "agreement_verdict", None)
    if verdict is not None and r.name != "fp32":
        r.gate = verdict(budget)[1]


def _confirm_chosen(run: QuantizeRun) -> None:
    """The variant ``choose`` picks is judged on every row before it is named: what ships carries the
    figures of the whole judge set, as before subsampling. Should all rows reject it (the subsample's
    verdict holds at the budget's confidence, not always), the choice is made again, each variant
    judged on all rows at most once."""
    if run.judge_rows is None:
        return
    rows = len(run.judge.samples)
    confirmed: set[str] = set()
    while True:
        chosen, _ = choose(run.results, run.budget, run.options.prefer)
        # ``examples`` counts what the task judges (texts, questions), which need not be the judge's rows
        # (QA and NER windows): each variant is judged on all rows at most once, so this always ends.
        if (chosen is None or chosen.drift is None or chosen.drift.examples >= rows
                or chosen.key in confirmed or not run.judge_rows.subsample):
            return
        confirmed.add(chosen.key)
        run.say(f"judging the chosen {chosen.key} on all {rows} rows")
        try:
            chosen.drift = run.judge_rows.judge_all(chosen.data)
        except (AlbertEdgeError, RuntimeError, ValueError) as exc:
            chosen.error = f"cannot run: {' '.join(str(exc).split())[:200]}"
        _mark(chosen, run.budget)


def _decide(run: QuantizeRun) -> QuantizeReport:
    """The report: the chosen variant (auto), or the closest miss when nothing fits, and each file's name."""
    o = run.options
    report = QuantizeReport(str(run.source.checkpoint), o.mode, run.budget,
                            {"data": None if run.calib is None else str(run.calib), "texts": len(run.calibration),
                             "used_by": calibration_uses(o, list(run.left_out)), "max_seq_len": o.max_seq_len,
                             # what a batch-one calibrated recipe (int8_fc) ran: the longest texts, padded (record 0295)
                             "batch_one_texts": len(run.calibration.padded_indices()[1]),
                             "tokenizer": run.asset.kind}, run.judge.info, run.timing, run.results,
                            error_tables=run.tables, fallback=run.fallback_log,
                            graph={"tflite": {"attention_head_groups": o.attention_head_groups}})
    chosen, log = choose(run.results, run.budget, o.prefer)
    report.held_back = held_back(run.fallback_log, run.results, run.budget)
    report.decision_log = (list(run.left_out.values()) + log + [fallback_line(entry) for entry in run.fallback_log]
                           + [held_back_line(item) for item in report.held_back])
    report.chosen = chosen.key if chosen else None
    keep = list(run.results)
    if o.mode == "auto" and chosen is None:
        # Nothing fits: write fp32 and the closest miss, the latter marked in its file name.
        closest = best_effort(run.results, run.budget)
        report.status = "over_budget"
        report.best_effort = closest.key if closest else None
        report.relax = relax_sentence(closest, run.budget, run.task)
        keep = [r for r in run.results if r.name == "fp32" or r is closest]
    elif o.mode == "auto":
        report.status = "chosen"
    keep = [r for r in keep if r.format in o.format_list]  # --formats onnx writes no .tflite, the reference neither
    _name_files(run.results, keep, report.status == "over_budget")
    if report.status != "over_budget":
        _ship(run, report)
    report.seconds = time.perf_counter() - run.started
    return report


def _name_files(results: Sequence[VariantResult], keep: Sequence[VariantResult], over_budget: bool) -> None:
    """Set each kept variant's file name; the others get none.

    Within budget every variant goes to ``variants/<variant>.<format>`` (the chosen one is also
    ``model.<format>``, ``_write``); over budget the closest miss keeps its ``over_budget_`` name
    beside fp32 in ``over_budget/``.
    """
    from albert_edge.convert.pipeline import model_file_name

    for r in results:
        r.file = None
        if r.error or r not in keep:
            continue
        if not over_budget:
            r.file = variant_file_name(r.format, r.name)
        else:
            plain = model_file_name(r.format, r.name)
            r.file = plain if r.name == "fp32" else OVER_BUDGET_PREFIX + plain


def _ship(run: QuantizeRun, report: QuantizeReport) -> None:
    """``report.shipped``: per format, the variant written as ``model.<format>`` (the one ``choose``
    picks among that format's variants), with what it costs; a format with none is absent."""
    for fmt in run.options.format_list:
        pick, _ = choose([r for r in run.results if r.format == fmt], run.budget, run.options.prefer)
        if pick is not None and pick.file:
            report.shipped[shipped_name(fmt)] = {
                "variant": pick.name, "key": pick.key, "copy_of": pick.file, "size_bytes": pick.size_bytes,
                "ratio_vs_fp32": pick.ratio_vs_fp32, "drift": pick.drift.summary() if pick.drift else None}


def _write(run: QuantizeRun, report: QuantizeReport) -> None:
    """Write the named files, the shipped copies and ``quantize_report.json`` together; remove what they replace."""
    # Staged beside the previous run's files and swapped in together: a failure keeps those intact.
    over_budget = report.status == "over_budget"
    target = run.out / OVER_BUDGET_DIR if over_budget else run.out
    with OutputSet(target, writer="quantize") as staged:
        for r in run.results:
            # Packed as it is written (the same bytes ``_pack_variants`` checked): one packed file at a time.
            names = [r.file] if r.file else []
            names += [name for name, item in report.shipped.items() if item["key"] == r.key]
            if names:
                packed = _packed(run, r, run.packs[r.key])
                if len(packed) != r.size_bytes:
                    raise QuantizationError(f"{r.key}: packed again it is {len(packed)} bytes, not the "
                                            f"{r.size_bytes} measured")
                for name in names:
                    staged.write_bytes(name, packed)
                del packed
        report.report_path = str(staged.directory / REPORT_NAME)
        staged.write_text(REPORT_MD, report.markdown())
        staged.write_text(REPORT_NAME, json.dumps(report.to_dict(), indent=1, ensure_ascii=False) + "\n")


def _onnx_with_pack(data: bytes, pack: Any) -> bytes:
    """The ONNX variant with the runtime pack in its metadata (what the app ships)."""
    from albert_edge.convert.onnx_export import onnx_bytes_with_pack

    return onnx_bytes_with_pack(data, pack)


def _judge(r: VariantResult, judge: SequentialJudge) -> None:
    """Set ``r.drift`` against fp32, or ``r.error`` when the variant cannot run (a built error stays)."""
    if r.error:
        return
    try:
        r.drift = judge.judge(r.data)
    except (AlbertEdgeError, RuntimeError, ValueError) as exc:
        r.error = f"cannot run: {' '.join(str(exc).split())[:200]}"


def _fallback_search(run: QuantizeRun) -> list[VariantResult]:
    """For every quantized TFLite variant that misses the budget, keep its worst ops float, more each step.

    Generic over the variant list (except ``dynamic_int8_col``, which ``dynamic_search`` ranks by the
    measured gain of each float FC): a variant is searched when its error table ranks every op it
    quantized (its quantized ops are all FULLY_CONNECTED: dynamic_int8, int8_fc, and any new recipe
    built the same way) and there is a way to rebuild it with ops float: a hybrid (dynamic-range)
    model is edited in place (``float_fallback``), a calibrated recipe is re-converted with
    ``denylisted_nodes``. Ops are ranked by their local SNR (the op's own quantization error, not its
    kind); step k keeps the k worst float (1, 2, 4, ... up to ``max_fallback_steps`` steps, ``fallback_steps``)
    and is a new variant ``<name>_fb<k>``; the search of a variant stops at its first step that fits.
    ``run.fallback_log`` receives one entry per searched variant: ranking, steps, and which step recovered.
    """
    from albert_edge.convert.child_process import call_in_child
    from albert_edge.quantize.dynamic_search import BASE_VARIANT as SEARCHED_BY_GAIN
    from albert_edge.quantize.float_fallback import float_fc_ops, hybrid_fc_outputs
    from albert_edge.quantize.step_search import Candidate, new_entry, step_search
    from albert_edge.quantize.tflite_quant import VARIANTS, tflite_variant

    weights, calibration, budget, task = run.weights, run.calibration, run.budget, run.task
    fp32 = run.results[0].data
    added: list[VariantResult] = []
    for base in [r for r in run.results if r.format == "tflite" and r.name not in ("fp32", SEARCHED_BY_GAIN)]:
        table = run.tables.get(base.key)
        if base.error or table is None or not budget_failures(base, budget) or misses_only_size(
                budget_failures(base, budget)):
            continue  # fits, or misses only the size limit: float ops would only grow it
        entry = new_entry(base, "local SNR (dB), worst first")
        run.fallback_log.append(entry)
        unranked = sorted({r.op for r in table.rows if r.quantized and r.local_snr_db is None} - {"FULLY_CONNECTED"})
        if hasattr(base.drift, "agreement_verdict") and base.drift.examples < min_rows(budget):
            entry["skipped"] = (f"{base.drift.examples} judged rows cannot show {100 * budget.min_agreement:g}% agreement "
                                f"(need {min_rows(budget)}); floating ops cannot fix that")
            continue
        if unranked:
            entry["skipped"] = f"quantized {', '.join(unranked)} are not FULLY_CONNECTED: the ranking cannot cover them"
            continue
        hybrid = set(hybrid_fc_outputs(base.data))
        spec = VARIANTS.get(base.name)
        ranking = table.ranking()
        # A smoothed FC reads x / s: its fp32 kernel would compute the wrong function (fc_smoothing).
        if hybrid and {r.tensor for r in ranking} <= hybrid and base.name not in SMOOTHED_VARIANTS:
            def rebuild(nodes: list[str], base: VariantResult = base) -> bytes:
                return float_fc_ops(base.data, fp32, nodes)
            entry["method"] = "hybrid FCs pointed at float32 weights (flatbuffer edit)"
        elif spec is not None and spec.calibrated and base.name != "int16x8":
            def rebuild(nodes: list[str], base: VariantResult = base) -> bytes:
                return call_in_child(tflite_variant, weights, base.name, calibration, denylisted_nodes=nodes,
                                     float_model=fp32, task=task, graph=run.options.graph_options())
            entry["method"] = "re-converted with the ops denylisted (QuantizationDebugger)"
        else:
            entry["skipped"] = "no way to rebuild this recipe with chosen ops float"
            continue
        candidates = [Candidate(e.tensor, f"{e.where} ({e.tensor}, local SNR {e.local_snr_db:.1f} dB)",
                                {"op": e.where, "tensor": e.tensor, "local_snr_db": round(e.local_snr_db, 2)})
                      for e in ranking]
        added += step_search(base, candidates, rebuild, entry, budget, run.options.max_fallback_steps,
                             run.judge_variant, VariantResult, run.say)
    return added
