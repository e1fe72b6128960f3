"""The whole job on the embedded default: sample checkpoint → convert → quantize → bench → predictions.

This is what `albert-edge demo` runs, so that a newcomer with no checkpoint and no internet sees every
stage on real data. It only strings the library together; each stage is the same call the stage's own
subcommand makes.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from albert_edge.outputs.atomic import ensure_writable_dir
from albert_edge.convert.pipeline import ConvertOptions
from albert_edge.demo.examples import DEFAULT_COUNT, DEFAULT_SEED, judge_held_out, user_text_lines
from albert_edge.errors import DataError
from albert_edge.outputs.claim import claim_output_dir
from albert_edge.outputs.output_set import OutputSet
from albert_edge.quantize.options import QuantizeOptions

SAMPLE_NAME = "albert_tiny_zh_sentiment"
#: What the demo writes into ``--out`` itself (each stage writes its own folder).
DEMO_FILES = ("predictions.json", "demo.json")


def _host_thread_counts() -> list[int]:
    from albert_edge.bench_latency.machine import default_thread_counts

    return default_thread_counts()


def default_sample_dir() -> Path:
    """Where the trained sample lives in a source checkout (``examples/`` beside ``src/``)."""
    return Path(__file__).resolve().parents[3] / "examples" / SAMPLE_NAME


def _demo_convert_options() -> ConvertOptions:
    """Both formats in fp32 (the sample's labels are added when the demo reads them). No fp16 files: they
    compute in fp32 on x86, so the demo did not bench them (record 0190), and writing them cost 3.6 s."""
    return ConvertOptions(formats=("tflite", "onnx"))


def _demo_quantize_options() -> QuantizeOptions:
    """Auto within the project's goals for the shipped int8 file: agreement with fp32 and size on disk."""
    return QuantizeOptions(mode="auto", max_drop=0.5, formats=("tflite", "onnx"), min_agreement=0.99,
                           max_size_mb=4.5, rounds=20)


@dataclass
class DemoSettings:
    """What the demo measures; with the defaults it took 220 s on an idle 2-core machine before record 0255.

    ``convert`` and ``quantize`` are the stages' own options (the sample's labels and eval split
    are filled in by ``run_demo``); the rest shapes the benchmark, whose accuracy budget is
    ``quantize.max_drop``.
    """

    threads: tuple[int, ...] = field(default_factory=lambda: tuple(_host_thread_counts()))
    seq_lens: tuple[int | str, ...] = ("real", 128)
    runs: int = 100
    warmup: int = 10
    # Paired rounds (bench_latency): 20 short bursts per configuration give every ratio a bootstrap
    # interval; up to 90 s more are spent narrowing intervals wider than ±3 %.
    rounds: int = 20
    bench_max_seconds: float | None = 90.0
    convert: ConvertOptions = field(default_factory=_demo_convert_options)
    quantize: QuantizeOptions = field(default_factory=_demo_quantize_options)
    # The closing examples: a seeded pick from the test split with gold labels (demo/examples.py),
    # then the user's own texts, if any.
    example_count: int = DEFAULT_COUNT
    example_seed: int = DEFAULT_SEED
    texts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        """Refuse a ``--text`` the classifier would refuse, now rather than after the whole pipeline."""
        for i, text in enumerate(self.texts):
            if not isinstance(text, str) or not text.strip():
                raise DataError(f"--text {text!r} (number {i + 1}): empty; give a text to classify, or leave it out")


@dataclass
class DemoResult:
    """Where everything went, and the headline numbers the README table is made from."""

    out_dir: Path
    conversion_report: str
    quantize_report: str
    bench_dir: str
    models: dict[str, str]
    chosen: str | None
    #: The file the demo ships (``models/model.tflite``: the chosen variant) and the verdict block on it.
    shipped: str | None = None
    predictions: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    verdict: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"out_dir": str(self.out_dir), "conversion_report": self.conversion_report,
                "quantize_report": self.quantize_report, "bench_dir": self.bench_dir, "models": self.models,
                "chosen": self.chosen, "shipped": self.shipped, "predictions": self.predictions,
                "seconds": self.seconds, "verdict": self.verdict}


def _require(sample: Path, name: str) -> Path:
    path = sample / name
    if not path.exists():
        raise DataError(f"{path}: the demo sample is incomplete (missing {name}); run from a source checkout "
                        f"or pass --sample DIR")
    return path


def run_demo(out_dir: str | os.PathLike[str] = "demo_out", sample: str | os.PathLike[str] | None = None,
             settings: DemoSettings | None = None, log: Callable[[str], None] = print,
             progress: Callable[[str], None] | None = None) -> DemoResult:
    """Run every stage on the sample checkpoint and write the outputs under ``out_dir``.

    Layout: ``models/`` (convert's fp32 TFLite and ONNX, the chosen variant as ``model.tflite`` /
    ``model.onnx``, every quantized variant under ``variants/``, conversion_report.json,
    quantize_report.json and .md), ``report/`` (report.json, report.md, report.png, device_commands.sh),
    ``predictions.json`` and ``demo.json``. ``progress`` receives convert's and quantize's stage lines
    (the benchmark draws its own bar, see albert_edge.progress).
    """
    # TensorFlow's C++ INFO lines and its tf.lite deprecation notice would bury the tables.
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    warnings.filterwarnings("ignore", message=r".*tf\.lite\.Interpreter is deprecated.*")
    from albert_edge.bench_latency import BenchOptions, run_benchmark
    from albert_edge.bench_latency.bench_verdict import file_verdict
    from albert_edge.verdict import verdict_lines
    from albert_edge.convert.pipeline import convert_checkpoint
    from albert_edge.convert.child_process import result
    from albert_edge.quantize.pipeline import quantize_checkpoint, read_checkpoint
    from albert_edge.runtime import TextClassifier

    settings = settings or DemoSettings()
    sample_dir = Path(sample) if sample is not None else default_sample_dir()
    if not sample_dir.is_dir():
        raise DataError(f"{sample_dir}: demo sample directory not found; pass --sample DIR")
    calib = _require(sample_dir, "calib.txt")
    dev = _require(sample_dir, "dev.tsv")
    test = _require(sample_dir, "test.tsv")
    labels = [line.strip() for line in _require(sample_dir, "labels.txt").read_text(encoding="utf-8").splitlines()
              if line.strip()]
    out = ensure_writable_dir(out_dir)
    # Refused now, not after minutes of work: the closing pair may not replace files albert-edge did not write.
    claim_output_dir(out, DEMO_FILES)
    models_dir = ensure_writable_dir(out / "models")
    seconds: dict[str, float] = {}

    step = progress or (lambda _line: None)  # a step before every silent stretch: a log line every <= 10 s
    started = time.perf_counter()
    log(f"[1/4] convert {sample_dir} -> {models_dir} (TFLite + ONNX fp32, parity vs numpy reference)")
    step(f"read {sample_dir}")
    source, ready = read_checkpoint(sample_dir)  # once, for convert and quantize; no TensorFlow here (0250)
    result(ready)  # the converter child's TF1 checksum check, before anything is written
    conversion = convert_checkpoint(source, models_dir, replace(settings.convert, labels=labels), progress=progress)
    log(conversion.table() if hasattr(conversion, "table") else json.dumps(conversion.to_dict(), indent=1))
    seconds["convert"] = round(time.perf_counter() - started, 1)

    started = time.perf_counter()
    budget = settings.quantize
    log(f"[2/4] quantize ({budget.mode} within {budget.max_drop:g} accuracy points on {dev.name})")
    quantized = quantize_checkpoint(source, models_dir, calib,
                                    replace(settings.quantize, eval_tsv=dev, labels=labels), progress=progress)
    for name, item in quantized.shipped.items():
        log(f"{models_dir / name}: {item['variant']} ({item['size_bytes'] / 1e6:.2f} MB, {item['drift']}); "
            f"every variant's row: {models_dir / 'quantize_report.md'}")
    seconds["quantize"] = round(time.perf_counter() - started, 1)

    shipped = quantized.shipped.get("model.tflite")
    bench_models = [models_dir / f.file for f in conversion.files]
    if shipped is not None:
        bench_models.append(models_dir / "model.tflite")
    for variant in quantized.variants:  # dynamic int8, the first recipe a user tries, as a comparison
        if variant.file and variant.format == "tflite" and variant.name == "dynamic_int8" and (
                shipped is None or shipped["variant"] != "dynamic_int8"):
            bench_models.append(models_dir / variant.file)
    bench_models = list(dict.fromkeys(bench_models))

    started = time.perf_counter()
    bench_dir = out / "report"
    log(f"[3/4] bench {len(bench_models)} models x threads {settings.threads} x seq {settings.seq_lens} "
        f"({settings.runs} runs each) against accuracy on {test.name}")
    step(f"bench: accuracy of {len(bench_models)} models on {test.name}, real lengths")
    bench = run_benchmark(bench_models, BenchOptions(threads=settings.threads, seq_lens=settings.seq_lens,
                                                     runs=settings.runs, warmup=settings.warmup,
                                                     rounds=settings.rounds, eval_path=test,
                                                     max_seconds=settings.bench_max_seconds,
                                                     max_drop=settings.quantize.max_drop), out_dir=bench_dir)
    seconds["bench"] = round(time.perf_counter() - started, 1)

    log("[4/4] example predictions with the chosen variant, drawn from the held-out test split")
    step("example predictions")
    ship = models_dir / "model.tflite" if shipped is not None else bench_models[0]
    classifier = TextClassifier.from_file(ship, num_threads=2)
    held_out = judge_held_out(classifier, test, ship.name, count=settings.example_count,
                              seed=settings.example_seed, labels=labels)
    for line in held_out.lines():
        log(line)
    predictions: dict[str, Any] = {**held_out.to_dict(), "model": ship.name,
                                   "texts": user_text_lines(classifier, settings.texts, ship.name, log)}
    verdict = verdict_lines(file_verdict(bench, ship, "demo", details=str(bench_dir / "report.md")))
    result = DemoResult(out_dir=out, conversion_report=str(models_dir / "conversion_report.json"),
                        quantize_report=str(quantized.report_path), bench_dir=str(bench_dir),
                        models={str(p.relative_to(models_dir)): str(p) for p in bench_models},
                        chosen=shipped["variant"] if shipped else None, shipped=str(ship),
                        predictions=predictions, seconds=seconds, verdict=verdict)
    # The demo's own two files are one set, like every stage's: a failure leaves the previous pair.
    with OutputSet(out, writer="demo") as staged:
        staged.write_text(DEMO_FILES[0], json.dumps(predictions, ensure_ascii=False, indent=1) + "\n")
        staged.write_text(DEMO_FILES[1], json.dumps(result.to_dict(), ensure_ascii=False, indent=1) + "\n")
    return result


def quick_settings(runs: int = 5) -> DemoSettings:
    """A shortened demo (few runs, one thread count) for tests of the end-to-end path.

    The budget is open because a test's small untrained sample has near-tied logits that any
    quantization flips; accuracy is judged on the trained sample by the full demo and the benchmarks.
    """
    quantize = replace(_demo_quantize_options(), rounds=2, max_eval_examples=120, max_drop=100.0, min_agreement=0.0,
                       max_size_mb=None)
    return DemoSettings(threads=(1,), seq_lens=("real", 32), runs=runs, warmup=1, rounds=1, bench_max_seconds=None,
                        quantize=quantize)


__all__: Sequence[str] = ("DemoResult", "DemoSettings", "default_sample_dir", "quick_settings", "run_demo")
