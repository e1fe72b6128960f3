"""``quantize_checkpoint``: checkpoint + calibration text -> quantized, measured model files + report.

Order matters for the no-partial-files promise (as in ``convert_checkpoint``): arguments and data
files are validated first, every variant is built, run and timed in memory, and only then are the
files written atomically with ``quantize_report.json``. A failure raises one AlbertEdgeError line.

The drift judge is the fp32 TFLite model built from the same weights (itself parity-checked by
``albert-edge convert``): on the labelled ``--eval`` TSV when given (accuracy, agreement, logit
error), otherwise on a held-out quarter of the calibration texts (agreement and logit error only).
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from albert_edge import __version__
from albert_edge.atomic import ensure_writable_dir
from albert_edge.errors import AlbertEdgeError, BudgetNotMetError, QuantizationError
from albert_edge.output_set import OutputSet
from albert_edge.quantize.auto import Budget, best_effort, budget_failures, choose
from albert_edge.quantize.calibration import CalibrationSet, encode_calibration, read_calibration_texts
from albert_edge.quantize.measure import interleaved_latency, latency_inputs, variant_values
from albert_edge.tasks import Task, TaskDrift, get_task

MODES = ("dynamic", "int8", "int16x8", "fp16", "auto")
FORMATS = ("tflite", "onnx")
REPORT_NAME = "quantize_report.json"
#: Prefix of the files written when no variant meets the budget (the best effort, marked in its name).
OVER_BUDGET_PREFIX = "over_budget_"
# A run that meets no budget (exit 3) writes its report and best effort here, inside --out: the
# previous run's shippable model and report stay exactly as they were.
OVER_BUDGET_DIR = "over_budget"
#: Calibration texts the per-op error tables run (both graphs keep every tensor: slow interpreters).
TABLE_TEXTS = 16
#: TFLite variants built per mode (fp32 is always built: it is the reference and the speed baseline).
TFLITE_MODE_VARIANTS = {
    "dynamic": ("dynamic_int8",),
    "int8": ("int8_fc", "int8_full"),
    "int16x8": ("int16x8",),
    "fp16": ("fp16",),
    "auto": ("dynamic_int8", "dynamic_int8_col", "int8_fc", "int8_full"),
}
ONNX_MODE_VARIANTS = {
    "dynamic": ("dynamic_int8",),
    "int8": ("qdq_int8",),
    "int16x8": (),
    "fp16": (),
    "auto": ("dynamic_int8", "qdq_int8"),
}


@dataclass
class VariantResult:
    """One built variant: what it is, what it costs (size, latency), what it loses (drift)."""

    name: str
    format: str
    size_bytes: int = 0
    census: dict[str, Any] = field(default_factory=dict)
    latency: dict[str, float] | None = None
    ratio_vs_fp32: float | None = None
    drift: TaskDrift | None = None
    error: str | None = None
    float_fallback: list[str] = field(default_factory=list)
    file: str | None = None
    meets_budget: bool = False
    gate: str | None = None
    fallback_of: str | None = None
    data: bytes = field(default=b"", repr=False)

    @property
    def key(self) -> str:
        return f"{self.format}:{self.name}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "format": self.format, "file": self.file, "size_bytes": self.size_bytes,
                "latency": self.latency, "ratio_vs_fp32": self.ratio_vs_fp32,
                "drift": None if self.drift is None else self.drift.to_dict(), "error": self.error,
                "float_fallback": self.float_fallback, "fallback_of": self.fallback_of,
                "meets_budget": self.meets_budget, "agreement_gate": self.gate, "census": self.census}


@dataclass
class QuantizeReport:
    """What ``quantize_report.json`` holds; ``table()`` is the printed summary."""

    checkpoint: str
    mode: str
    budget: Budget
    calibration: dict[str, Any]
    judge: dict[str, Any]
    timing: dict[str, Any]
    variants: list[VariantResult] = field(default_factory=list)
    chosen: str | None = None
    decision_log: list[str] = field(default_factory=list)
    report_path: str | None = None
    seconds: float = 0.0
    status: str = "explicit"
    best_effort: str | None = None
    relax: str | None = None
    error_tables: dict[str, Any] = field(default_factory=dict)
    fallback: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"albert_edge_version": __version__, "checkpoint": self.checkpoint, "mode": self.mode,
                "status": self.status, "budget": self.budget.to_dict(),
                "min_judge_rows": _min_rows(self.budget), "calibration": self.calibration, "judge": self.judge,
                "timing": self.timing, "chosen": self.chosen, "best_effort": self.best_effort, "relax": self.relax,
                "decision_log": self.decision_log, "fallback": self.fallback,
                "variants": [v.to_dict() for v in self.variants],
                "error_tables": {k: t.to_dict() for k, t in self.error_tables.items()},
                "seconds": round(self.seconds, 1)}

    def offenders(self, n: int = 5) -> list[str]:
        """The worst ops of each variant's error table, for the console."""
        lines = []
        for table in self.error_tables.values():
            lines += table.lines(n)
        return (["worst ops (local = the op alone on the variant's own float input; graph = vs fp32 at that point):"]
                + lines) if lines else []

    def table(self) -> str:
        """One row per variant: size, time, the task's drift columns (``TaskDrift.columns``), census."""
        drifts = [v.drift for v in self.variants if v.drift is not None]
        columns = drifts[0].table_columns() if drifts else ()
        widths = [max(8, len(c.header) + 1) for c in columns]
        header = (f"{'format':<7}{'variant':<22}{'size MB':>8}{'median ms':>10}{'x fp32':>7}"
                  + "".join(f"{c.header:>{w}}" for c, w in zip(columns, widths)) + f"{'Q/DQ':>8}{'XNNPACK':>9}  budget")
        rows = [header, "-" * len(header)]
        for v in self.variants:
            d, c, lat = v.drift, v.census, v.latency
            qdq = f"{c.get('quantize', 0)}/{c.get('dequantize', 0)}" if c else "-"
            xnn = f"{c['delegated_nodes']}/{c['total_nodes']}" if "delegated_nodes" in c else "-"
            mark = "CHOSEN" if v.key == self.chosen else ("ok" if v.meets_budget else ("ref" if v.name == "fp32" else "no"))
            if v.error:
                rows.append(f"{v.format:<7}{v.name:<22}{v.size_bytes / 1e6:>8.2f}  error: {v.error}")
                continue
            values = d.to_dict() if d is not None else {}
            rows.append(f"{v.format:<7}{v.name:<22}{v.size_bytes / 1e6:>8.2f}{_f(lat and lat['median_ms'], 2):>10}"
                        f"{_f(v.ratio_vs_fp32, 2):>7}" + "".join(f"{col.cell(values):>{w}}" for col, w in zip(columns, widths))
                        + f"{qdq:>8}{xnn:>9}  {mark}")
        return "\n".join(rows + ["", *self.offenders(), "", *self.decision_log])


def _min_rows(budget: Budget) -> int:
    from albert_edge.tasks.metrics import min_judge_rows

    return min_judge_rows(budget.min_agreement, budget.confidence)


def _f(value: float | None, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def parse_formats(formats: str | Iterable[str]) -> tuple[str, ...]:
    items = [f.strip().lower() for f in (formats.split(",") if isinstance(formats, str) else formats) if f.strip()]
    bad = [f for f in items if f not in FORMATS]
    if bad or not items:
        raise QuantizationError(f"--formats {','.join(items) or '(empty)'}: expected a comma list of {', '.join(FORMATS)}")
    return tuple(dict.fromkeys(items))


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


def _labels(checkpoint: Any, weights: Any, labels: Sequence[str] | None, task: Task,
            eval_labels: Sequence[str] | None, eval_path: Any) -> tuple[list[str], str]:
    """Class names in classifier order and where they came from: ``--labels``, config.json id2label,
    a labels.txt beside the checkpoint, the eval file's own names (``EvalFormat.labels_from_eval``), else
    ``LABEL_i``."""
    from albert_edge.convert.assets import checkpoint_dir
    from albert_edge.convert.pipeline import hf_labels, resolve_labels

    width = task.num_labels(weights)
    if labels:
        return resolve_labels(weights, labels, task), "--labels"
    named = hf_labels(checkpoint)
    if named and len(named) == width:
        return named, "config.json id2label"
    labels_txt = checkpoint_dir(checkpoint) / "labels.txt"
    if labels_txt.is_file():
        from albert_edge.data import read_text_lines  # one line naming the file if it is not UTF-8

        names = [str(line) for line in read_text_lines(labels_txt)]
        if len(names) == width:
            return names, str(labels_txt)
    if eval_labels is not None and len(eval_labels) == width:
        # The project's fine-tuning assigns class ids in sorted label order, as infer_labels does.
        return list(eval_labels), f"sorted labels of {eval_path}"
    return [f"LABEL_{i}" for i in range(width)], "default LABEL_i"


@dataclass(frozen=True)
class QuantizeOptions:
    """What ``quantize_checkpoint`` builds, how it judges and times, and the budget it chooses by.

    ``mode="auto"`` starts from the fastest quantized variants, falls back the worst-ranked int8
    ops to float until drift fits the budget, and marks the fastest variant within budget as
    chosen. ``variants`` overrides the mode's TFLite variant list (benchmarks build them all);
    ``max_eval_examples`` judges on the first N eval rows only. ``task`` (default: detected from
    the weights and a sentence-transformers folder) decides what drift is judged on: logits for a
    classifier (``max_drop``, ``min_agreement``, ``confidence``), sentence embeddings for feature
    extraction (cosine to fp32: ``min_cosine`` for the worst text, ``min_mean_cosine`` for the
    mean; ``eval_tsv`` is then a text file, one text per line).
    """

    mode: str = "auto"
    max_drop: float = 0.5
    eval_tsv: str | os.PathLike[str] | None = None
    formats: str | Iterable[str] = ("tflite",)
    labels: Sequence[str] | None = None
    vocab: str | os.PathLike[str] | None = None
    max_seq_len: int = 128
    num_threads: int = 2
    seq_len: int = 128
    rounds: int = 30
    min_agreement: float = 0.99
    max_size_mb: float | None = None
    max_fallback_steps: int = 5
    variants: Sequence[str] | None = None
    max_eval_examples: int | None = None
    confidence: float = 0.95
    task: Task | str | None = None
    min_cosine: float = 0.995
    min_mean_cosine: float = 0.999
    tie_margin: float = 0.1
    error_tables: bool = True


def quantize_checkpoint(
    checkpoint: str | os.PathLike[str],
    out_dir: str | os.PathLike[str],
    calib: str | os.PathLike[str],
    options: QuantizeOptions | None = None,
    *,
    weights: Any = None,
    progress: Callable[[str], None] | None = None,
    **overrides: Any,
) -> QuantizeReport:
    """Build, judge and time the variants of ``options.mode``; write them and ``quantize_report.json``.

    ``options`` (a QuantizeOptions; keyword ``overrides`` replace single fields, e.g. ``mode="dynamic"``)
    says what to build and the budget; ``weights`` skips loading ``checkpoint`` (its directory still
    provides the tokenizer asset). In auto mode, when no variant fits the budget it raises
    QuantizationError (``exc.report`` holds the measurements) and writes nothing.
    ``progress`` receives one line per stage (build, each variant judged, fallback, timing).
    """
    from dataclasses import replace

    o = replace(options or QuantizeOptions(), **overrides)
    mode, max_drop, eval_tsv, formats, labels, vocab = o.mode, o.max_drop, o.eval_tsv, o.formats, o.labels, o.vocab
    max_seq_len, num_threads, seq_len, rounds = o.max_seq_len, o.num_threads, o.seq_len, o.rounds
    min_agreement, max_size_mb, max_fallback_steps, variants = o.min_agreement, o.max_size_mb, o.max_fallback_steps, o.variants
    max_eval_examples, confidence, task = o.max_eval_examples, o.confidence, o.task
    min_cosine, min_mean_cosine = o.min_cosine, o.min_mean_cosine
    say = progress or (lambda _line: None)
    started = time.perf_counter()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if mode not in MODES:
        raise QuantizationError(f"--mode {mode!r}: expected one of {', '.join(MODES)}")
    if not (isinstance(max_drop, (int, float)) and 0 <= max_drop <= 100):
        raise QuantizationError(f"--max-drop {max_drop!r}: expected accuracy points between 0 and 100")
    formats = parse_formats(formats)
    reject_model_file(checkpoint)
    for name, value in (("--min-cosine", min_cosine), ("--min-mean-cosine", min_mean_cosine)):
        if not (isinstance(value, (int, float)) and -1 <= value <= 1):
            raise QuantizationError(f"{name} {value!r}: expected a cosine between -1 and 1")
    texts = read_calibration_texts(calib)
    if weights is None:
        from albert_edge.model import load_checkpoint

        weights = load_checkpoint(checkpoint)
    try:
        task = get_task(task, weights, checkpoint)
        task.check_weights(weights)
    except AlbertEdgeError as exc:
        raise QuantizationError(str(exc)) from None
    # The eval file is the task's own labelled format (``Task.eval_format``: a TSV for sentence
    # classification, a .jsonl for the others) or plain texts judged against fp32. Both are read
    # (and a bad one refused) before the output directory exists.
    own_format = eval_tsv is not None and task.eval_format.reads_labelled(eval_tsv)
    eval_labels = task.eval_format.labels_from_eval(eval_tsv) if own_format else None
    eval_texts = read_calibration_texts(eval_tsv, min_texts=2) if eval_tsv is not None and not own_format else None
    out = ensure_writable_dir(out_dir)
    # Every task with a label head needs the names (the pack's labels.txt; entity F1 decodes them).
    names, labels_source = (_labels(checkpoint, weights, labels, task, eval_labels, eval_tsv)
                            if task.needs_labels else (None, None))
    if labels and not task.needs_labels:
        raise QuantizationError(f"{weights.source}: --labels given but the task is {task.name}")
    task = task.bind_labels(names)

    from albert_edge.convert.assets import find_tokenizer_asset
    from albert_edge.convert.pipeline import build_pack, model_file_name
    from albert_edge.tokenizer import Preprocessor, load_tokenizer

    asset = find_tokenizer_asset(checkpoint, vocab, None, weights.config.vocab_size, str(weights.source))
    tokenizer = load_tokenizer(asset.kind, asset.data, asset.do_lower_case, str(asset.path))
    preprocessor = Preprocessor(tokenizer, max_seq_len)
    own = (task.eval_format.labelled_samples(eval_tsv, tokenizer, max_seq_len, task.labels, max_eval_examples)
           if own_format else None)
    if own_format and own is None:
        raise QuantizationError(f"{eval_tsv}: task {task.name} has no labelled eval format")
    y = None
    if own is not None:
        calibration = encode_calibration(texts, preprocessor, str(calib))
        judge_samples, y = own
        judge = {"data": str(eval_tsv), "examples": len(judge_samples), "kind": task.eval_format.labelled_kind}
    elif eval_texts is not None:
        calibration = encode_calibration(texts, preprocessor, str(calib))
        judge_samples = list(encode_calibration(eval_texts, preprocessor, str(eval_tsv), max_texts=len(eval_texts)).samples)
        judge = {"data": str(eval_tsv), "examples": len(judge_samples), "kind": "texts, one per line"}
    else:
        # Calibrate on the first three quarters, judge on the last quarter (never on calibration text).
        cut = max(1, (3 * len(texts)) // 4)
        calibration = encode_calibration(texts[:cut], preprocessor, str(calib))
        judge_samples = list(encode_calibration(texts[cut:], preprocessor, str(calib), max_texts=len(texts)).samples)
        judge = {"data": f"{calib} (last quarter, not used for calibration)", "examples": len(judge_samples),
                 "kind": task.eval_format.unlabelled_kind}
    if task.needs_labels:  # what the pack records, whichever data judged the variants
        judge.setdefault("labels", names)
        judge.setdefault("labels_from", labels_source)
    judge.update({"task": task.name, "task_config": task.settings(), "baseline": "tflite:fp32"})
    if not (isinstance(o.tie_margin, (int, float)) and o.tie_margin >= 0):
        raise QuantizationError(f"--tie-margin {o.tie_margin!r}: expected a logit margin >= 0 (0 turns the rule off)")
    budget = Budget(float(max_drop), float(min_agreement),
                    None if max_size_mb is None else int(max_size_mb * 1e6), float(confidence),
                    float(min_cosine), float(min_mean_cosine), float(o.tie_margin))

    say(f"building variants ({mode}, {', '.join(formats)})")
    results = _build_variants(weights, mode, formats, calibration, variants, task)
    reference = variant_values(results[0].data, judge_samples, task, num_threads)
    for r in results:
        say(f"judging {r.key} on {len(judge_samples)} rows")
        _judge(r, judge_samples, reference, y, num_threads, task)
    tables: dict[str, Any] = {}
    if o.error_tables:
        from albert_edge.quantize.op_errors import error_table

        for r in results:
            if r.format == "tflite" and r.name != "fp32" and not r.error:
                say(f"per-op error table of {r.key} on {min(TABLE_TEXTS, len(calibration))} calibration texts")
                try:
                    tables[r.key] = error_table(r.name, r.data, results[0].data, calibration.samples, weights,
                                                TABLE_TEXTS)
                except (RuntimeError, ValueError) as exc:  # a graph LiteRT cannot run keeps its build error
                    say(f"no error table for {r.key}: {' '.join(str(exc).split())[:200]}")
    fallback_log: list[dict[str, Any]] = []
    if mode == "auto":
        say("fallback search (the ops the error tables rank worst back to float while drift exceeds the budget)")
        results += _fallback_search(weights, calibration, results, tables, judge_samples, reference, y, budget,
                                    num_threads, max_fallback_steps, task, fallback_log, say)
        from albert_edge.quantize.dynamic_search import dynamic_fallback_search

        say("dynamic int8 search (per-column tables, then the FCs that gain most back to float)")
        results += dynamic_fallback_search(results, calibration, budget, max_fallback_steps, task, num_threads,
                                           lambda r: _judge(r, judge_samples, reference, y, num_threads, task),
                                           VariantResult, fallback_log, say)
    runnable = {r.key: r.data for r in results if not r.error}
    # Time at full length, but never past what the pack's tokenizer or the position table allows.
    seq_len = min(seq_len, max_seq_len, weights.config.max_position_embeddings)
    timing = {"threads": num_threads, "seq_len": seq_len, "batch": 1, "rounds": rounds, "interleaved": True,
              "cpu": platform.processor() or platform.machine(), "baseline": "tflite:fp32"}
    say(f"timing {len(runnable)} variants, {rounds} interleaved rounds")
    latency = interleaved_latency(runnable, latency_inputs(seq_len, weights.config.vocab_size), num_threads, rounds)
    base = latency["tflite:fp32"]["median_ms"]
    for r in results:
        if r.key in latency:
            r.latency = latency[r.key]
            r.ratio_vs_fp32 = r.latency["median_ms"] / base

    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    packed: dict[str, bytes] = {}
    for r in results:
        if r.error:
            continue
        pack = build_pack(weights, asset, task, names, max_seq_len, r.name)
        if r.format == "tflite":
            packed[r.key] = attach_standard_metadata(r.data, pack)
        else:
            packed[r.key] = _onnx_with_pack(r.data, pack)
        r.size_bytes = len(packed[r.key])  # what the app ships: graph + pack
        r.meets_budget = r.name != "fp32" and not budget_failures(r, budget)
        verdict = getattr(r.drift, "agreement_verdict", None)
        if verdict is not None and r.name != "fp32":
            r.gate = verdict(budget)[1]
    report = QuantizeReport(str(checkpoint), mode, budget,
                            {"data": str(calib), "texts": len(calibration), "max_seq_len": max_seq_len,
                             "tokenizer": asset.kind}, judge, timing, results,
                            error_tables=tables, fallback=fallback_log)
    chosen, log = choose(results, budget)
    report.decision_log = log + [_fallback_line(entry) for entry in fallback_log]
    report.chosen = chosen.key if chosen else None
    over_budget = mode == "auto" and chosen is None
    keep = list(results)
    if over_budget:
        # Nothing fits: write fp32 and the closest miss, the latter marked in its file name.
        closest = best_effort(results, budget)
        report.status = "over_budget"
        report.best_effort = closest.key if closest else None
        report.relax = _relax_sentence(closest, budget, task)
        keep = [r for r in results if r.name == "fp32" or r is closest]
    elif mode == "auto":
        report.status = "chosen"
    stale: list[str] = []
    for r in results:
        plain = model_file_name(r.format, r.name)
        r.file = None
        if r.error or r not in keep:
            continue
        r.file = plain if (r.name == "fp32" or not over_budget) else OVER_BUDGET_PREFIX + plain
        # A previous run's file of the same variant under the other name must not survive beside this report.
        stale.append(OVER_BUDGET_PREFIX + plain if r.file == plain else plain)
    if over_budget:
        stale += [model_file_name(r.format, r.name) for r in results if r.name != "fp32"]
    report.seconds = time.perf_counter() - started

    # Staged beside the previous run's files and swapped in together: a failure keeps those intact.
    with OutputSet(out / OVER_BUDGET_DIR if over_budget else out) as staged:
        for r in results:
            if r.file:
                staged.write_bytes(r.file, packed[r.key])
        for name in dict.fromkeys(stale):
            if name not in {r.file for r in results}:
                staged.remove_stale(name)
        report.report_path = str(staged.directory / REPORT_NAME)
        staged.write_text(REPORT_NAME, json.dumps(report.to_dict(), indent=1, ensure_ascii=False) + "\n")
    if over_budget:
        error = BudgetNotMetError(report.relax or "no quantized variant meets the budget")
        error.report = report
        raise error
    return report


def _fallback_line(entry: dict[str, Any]) -> str:
    if entry.get("skipped"):
        return f"fallback {entry['variant']}: not searched ({entry['skipped']})"
    tried = ", ".join(f"{s['variant'].split(':')[1]} ({s['drift'] or s['error']})" for s in entry["steps"])
    result = f"recovered by {entry['recovered_by']}" if entry["recovered_by"] else "not recovered"
    return f"fallback {entry['variant']} ({entry.get('method')}): {tried}: {result}"


def _relax_sentence(closest: VariantResult | None, budget: Budget, task: Task) -> str:
    """The one sentence printed when nothing fits: the closest variant and the budget that it would meet."""
    from albert_edge.convert.pipeline import model_file_name

    if closest is None:
        return "no quantized variant could be built and run; see the decision log in the report"
    failures = budget_failures(closest, budget)
    what = closest.drift.relax_hints(budget) if closest.drift is not None else []
    if budget.max_size_bytes is not None and closest.size_bytes > budget.max_size_bytes:
        what.append(f"--max-size-mb {np.ceil(closest.size_bytes / 1e4) / 100:g}")
    relax = " and ".join(what) if what else "the budget"
    return (f"no quantized variant meets the budget; the closest, {closest.key} (x{_f(closest.ratio_vs_fp32, 2)} of fp32: "
            f"{'; '.join(failures)}), is written as {OVER_BUDGET_DIR}/{OVER_BUDGET_PREFIX}{model_file_name(closest.format, closest.name)}: "
            f"relax {relax} to accept it")


def _onnx_with_pack(data: bytes, pack: Any) -> bytes:
    import onnx
    from albert_edge.convert.onnx_export import attach_onnx_pack

    model = onnx.load_from_string(data)
    attach_onnx_pack(model, pack)
    return model.SerializeToString()


def _build_variants(weights: Any, mode: str, formats: Sequence[str], calibration: CalibrationSet,
                    variants: Sequence[str] | None = None, task: Task | None = None) -> list[VariantResult]:
    """fp32 first (the reference), then the mode's variants; a variant that fails to build is kept with its error."""
    from albert_edge.quantize.census import census_onnx_variant, census_tflite_variant
    from albert_edge.quantize.tflite_quant import tflite_variant

    results = []
    names = TFLITE_MODE_VARIANTS[mode] if variants is None else [v for v in variants if v != "fp32"]
    for name in ("fp32", *names):
        r = VariantResult(name, "tflite")
        try:
            r.data = tflite_variant(weights, name, calibration, float_model=results[0].data if results else None,
                                    task=task)
            r.census = census_tflite_variant(r.data).to_dict()
        except AlbertEdgeError as exc:
            if name == "fp32":
                raise
            r.error = str(exc)
        except (RuntimeError, ValueError) as exc:
            r.error = f"LiteRT cannot run it: {' '.join(str(exc).split())[:200]}"
        r.size_bytes = len(r.data)
        results.append(r)
    if "onnx" in formats:
        from albert_edge.convert.onnx_export import onnx_model_bytes
        from albert_edge.quantize.onnx_quant import onnx_variant

        fp32 = onnx_model_bytes(weights, task=task)
        onnx_results = [VariantResult("fp32", "onnx", data=fp32)]
        for name in ONNX_MODE_VARIANTS[mode]:
            r = VariantResult(name, "onnx")
            try:
                r.data = onnx_variant(fp32, "onnx_" + name, calibration)
            except AlbertEdgeError as exc:
                r.error = str(exc)
            except Exception as exc:  # noqa: BLE001 - onnxruntime.quantization raises untyped errors
                r.error = f"onnxruntime.quantization failed: {' '.join(str(exc).split())[:200]}"
            onnx_results.append(r)
        for r in onnx_results:
            if not r.error:
                r.census = census_onnx_variant(r.data)
            r.size_bytes = len(r.data)
        results += onnx_results
    return results


def _judge(r: VariantResult, samples: Sequence[dict], reference: np.ndarray, y: np.ndarray | None,
           num_threads: int, task: Task) -> None:
    if r.error:
        return
    try:
        r.drift = task.drift(variant_values(r.data, samples, task, num_threads), reference, y)
    except (AlbertEdgeError, RuntimeError, ValueError) as exc:
        r.error = f"cannot run: {' '.join(str(exc).split())[:200]}"


def _fallback_search(weights: Any, calibration: CalibrationSet, results: Sequence[VariantResult],
                     tables: dict[str, Any], samples: Sequence[dict], reference: np.ndarray, y: np.ndarray | None,
                     budget: Budget, num_threads: int, max_steps: int, task: Task | None,
                     log: list[dict[str, Any]], say: Callable[[str], None]) -> list[VariantResult]:
    """For every quantized TFLite variant that misses the budget, keep its worst ops float, more each step.

    Generic over the variant list (except ``dynamic_int8_col``, which ``dynamic_search`` ranks by the
    measured gain of each float FC): a variant is searched when its error table ranks every op it
    quantized (its quantized ops are all FULLY_CONNECTED: dynamic_int8, int8_fc, and any new recipe
    built the same way) and there is a way to rebuild it with ops float: a hybrid (dynamic-range)
    model is edited in place (``float_fallback``), a calibrated recipe is re-converted with
    ``denylisted_nodes``. Ops are ranked by their local SNR (the op's own quantization error, not its
    kind); step k keeps the k worst float (1, 2, 4, ... up to ``max_steps`` steps, ``fallback_steps``)
    and is a new variant ``<name>_fb<k>``; the search of a variant stops at its first step that fits.
    ``log`` receives one entry per searched variant: ranking, steps, and which step recovered.
    """
    from albert_edge.quantize.dynamic_search import BASE_VARIANT as SEARCHED_BY_GAIN
    from albert_edge.quantize.float_fallback import float_fc_ops, hybrid_fc_outputs
    from albert_edge.quantize.step_search import Candidate, new_entry, step_search
    from albert_edge.quantize.tflite_quant import VARIANTS, tflite_variant

    fp32 = results[0].data
    added: list[VariantResult] = []
    for base in [r for r in results if r.format == "tflite" and r.name not in ("fp32", SEARCHED_BY_GAIN)]:
        table = tables.get(base.key)
        if base.error or table is None or not budget_failures(base, budget):
            continue
        entry = new_entry(base, "local SNR (dB), worst first")
        log.append(entry)
        unranked = sorted({r.op for r in table.rows if r.quantized and r.local_snr_db is None} - {"FULLY_CONNECTED"})
        if hasattr(base.drift, "agreement_verdict") and base.drift.examples < _min_rows(budget):
            entry["skipped"] = (f"{base.drift.examples} judged rows cannot show {100 * budget.min_agreement:g}% agreement "
                                f"(need {_min_rows(budget)}); floating ops cannot fix that")
            continue
        if unranked:
            entry["skipped"] = f"quantized {', '.join(unranked)} are not FULLY_CONNECTED: the ranking cannot cover them"
            continue
        hybrid = set(hybrid_fc_outputs(base.data))
        spec = VARIANTS.get(base.name)
        ranking = table.ranking()
        if hybrid and {r.tensor for r in ranking} <= hybrid:
            def rebuild(nodes: list[str], base: VariantResult = base) -> bytes:
                return float_fc_ops(base.data, fp32, nodes)
            entry["method"] = "hybrid FCs pointed at float32 weights (flatbuffer edit)"
        elif spec is not None and spec.calibrated and base.name != "int16x8":
            def rebuild(nodes: list[str], base: VariantResult = base) -> bytes:
                return tflite_variant(weights, base.name, calibration, denylisted_nodes=nodes, float_model=fp32,
                                      task=task)
            entry["method"] = "re-converted with the ops denylisted (QuantizationDebugger)"
        else:
            entry["skipped"] = "no way to rebuild this recipe with chosen ops float"
            continue
        candidates = [Candidate(e.tensor, f"{e.where} ({e.tensor}, local SNR {e.local_snr_db:.1f} dB)",
                                {"op": e.where, "tensor": e.tensor, "local_snr_db": round(e.local_snr_db, 2)})
                      for e in ranking]
        added += step_search(base, candidates, rebuild, entry, budget, max_steps,
                             lambda r: _judge(r, samples, reference, y, num_threads, task), VariantResult, say)
    return added
