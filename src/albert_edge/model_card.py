"""A shareable model card (``README.md`` with Hugging Face Hub front matter) from a run's own reports.

Everything a reader of a shared model needs is already measured: ``conversion_report.json`` (the
files and their parity with the float64 reference), ``quantize_report.json`` (each variant's size,
speed and accuracy cost, which one was chosen) and a benchmark's ``report.json`` (latency and
memory per backend and thread count). The card restates those numbers as tables and says where
they come from, so that the card cannot claim more than the run measured. The front matter
(license, tags, ``pipeline_tag`` by task, ``base_model`` when the checkpoint came from the Hub) is
what the Hub reads to index the model.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from albert_edge.errors import DataError
from albert_edge.inputs.jsonfile import load_json_file
from albert_edge.outputs.output_set import OutputSet

CARD_NAME = "README.md"
CONVERSION_REPORT = "conversion_report.json"
QUANTIZE_REPORT = "quantize_report.json"
BENCH_REPORT = "report.json"
BENCH_PLOT = "report.png"
#: The benchmark plot's copy beside the card: a link out of OUT would break once OUT is uploaded alone.
CARD_PLOT = "bench_report.png"

#: The Hub's pipeline_tag for each albert-edge task (sequence regression is a one-output classifier head).

# A Hub snapshot in the Hugging Face cache: .../models--ORG--NAME/snapshots/<revision>.
_HUB_CACHE = re.compile(r"models--([^/\\]+?)--([^/\\]+)[/\\]snapshots[/\\]")

# Drift columns worth a reader's attention, in the order shown; a task reports the ones it has.
_DRIFT_COLUMNS = (("accuracy_drop", "accuracy drop (pt)"), ("f1_drop", "F1 drop (pt)"),
                  ("agreement", "agreement"), ("min_cosine", "min cosine"), ("mean_cosine", "mean cosine"))


@dataclass
class CardInputs:
    """The reports a card is made from; any may be missing (then its section is left out)."""

    conversion: dict[str, Any] | None
    quantize: dict[str, Any] | None
    bench: dict[str, Any] | None
    bench_plot: Path | None  # the benchmark's report.png, when it exists


# The parts of each report the card reads, with the JSON type each must have when present (null is
# absent): a report of another shape is one line naming the file and the field, not a traceback.
_ROW = {"drift": dict, "latency": dict, "latency_ms": dict, "memory": dict}
_SHAPES: dict[str, dict[str, Any]] = {
    CONVERSION_REPORT: {"files": [dict], "labels": list, "tokenizer": dict},
    QUANTIZE_REPORT: {"variants": [_ROW], "budget": dict, "judge": dict},
    BENCH_REPORT: {"results": [_ROW], "machine": {"packages": dict}},
}
_JSON_NAMES = {dict: "an object", list: "a list"}


def check_shape(value: Any, shape: Any, where: str, path: Path) -> None:
    """Raise DataError naming ``path`` and the field ``where`` unless ``value`` has ``shape``:
    a type, ``{field: shape}`` (an object whose fields, when present, have those shapes) or
    ``[shape]`` (a list whose items have that shape)."""
    if isinstance(shape, list):
        if not isinstance(value, list):
            raise DataError(f"{path}: {where} should be a list, not {type(value).__name__}; not a report albert-edge wrote")
        for i, item in enumerate(value):
            check_shape(item, shape[0], f"{where}[{i}]", path)
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            raise DataError(f"{path}: {where} should be an object, not {type(value).__name__}; "
                            "not a report albert-edge wrote")
        for key, inner in shape.items():
            if value.get(key) is not None:
                check_shape(value[key], inner, f"{where}.{key}" if where else key, path)
    elif not isinstance(value, shape):
        raise DataError(f"{path}: {where} should be {_JSON_NAMES.get(shape, shape.__name__)}, not "
                        f"{type(value).__name__}; not a report albert-edge wrote")


def _read(path: Path) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    value = load_json_file(path, DataError)
    if not isinstance(value, dict):
        raise DataError(f"{path}: expected a JSON object")
    check_shape(value, _SHAPES.get(path.name, {}), "", path)
    return value


def read_inputs(out_dir: str | os.PathLike[str], bench_dir: str | os.PathLike[str] | None = None) -> CardInputs:
    """Read the reports in ``out_dir`` (and ``bench_dir``'s report.json); DataError when there is none."""
    out = Path(out_dir)
    conversion, quantize = _read(out / CONVERSION_REPORT), _read(out / QUANTIZE_REPORT)
    bench = plot = None
    if bench_dir is not None:
        bench = _read(Path(bench_dir) / BENCH_REPORT)
        if bench is None:
            raise DataError(f"{Path(bench_dir) / BENCH_REPORT}: no benchmark report (run albert-edge bench --out DIR)")
        png = Path(bench_dir) / BENCH_PLOT
        plot = png if png.is_file() else None
    if conversion is None and quantize is None:
        raise DataError(f"{out}: neither {CONVERSION_REPORT} nor {QUANTIZE_REPORT} is there; a card is made "
                        "from the files albert-edge convert / quantize wrote")
    return CardInputs(conversion, quantize, bench, plot)


def hub_base_model(checkpoint: str | None) -> str | None:
    """``ORG/NAME`` when ``checkpoint`` is a snapshot in the Hugging Face cache, else None."""
    match = _HUB_CACHE.search(checkpoint or "")
    return f"{match.group(1)}/{match.group(2)}" if match else None


def shown_source(path: Any) -> str:
    """A checkpoint or data path as a shared card shows it: the Hub id, else the last component only
    (the full local path says nothing to a reader and tells them about the author's disk)."""
    text = str(path or "")
    hub = hub_base_model(text)
    if hub or not text:
        return hub or "–"
    local = Path(text)
    # A TF1 prefix (``DIR/model.ckpt``) or a file: its folder names the model better than the file does.
    return local.name if local.is_dir() or not local.parent.name else f"{local.parent.name}/{local.name}"


def model_name(checkpoint: Any) -> str:
    """The card's heading: the Hub id, else the checkpoint's folder name."""
    text = str(checkpoint or "")
    if hub_base_model(text) or not text:
        return hub_base_model(text) or "model"
    local = Path(text)
    return local.name if local.is_dir() or not local.parent.name else local.parent.name


def _task(inputs: CardInputs) -> str | None:
    if inputs.conversion is not None:
        return inputs.conversion.get("task")
    judge = (inputs.quantize or {}).get("judge") or {}
    return judge.get("task") if isinstance(judge, dict) else None


def front_matter(inputs: CardInputs, license_id: str = "apache-2.0", base_model: str | None = None) -> str:
    """The YAML block the Hub reads: license, tags, pipeline_tag, base_model."""
    task = _task(inputs)
    checkpoint = (inputs.conversion or inputs.quantize or {}).get("checkpoint")
    base = base_model or hub_base_model(checkpoint)
    formats = sorted({f.get("format") for f in (inputs.conversion or {}).get("files", []) if f.get("format")} |
                     {v.get("format") for v in (inputs.quantize or {}).get("variants", []) if v.get("format")})
    tags = ["albert-edge", *formats, *(["quantized"] if inputs.quantize else []), "on-device"]
    lines = ["---", f"license: {license_id}", "library_name: albert-edge", "tags:", *(f"- {t}" for t in tags)]
    tag = _pipeline_tag(task)
    if tag:
        lines.append(f"pipeline_tag: {tag}")
    if base:
        lines.append(f"base_model: {base}")
    return "\n".join([*lines, "---"])


def _cell(value: Any, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """A Markdown table; every cell escaped so a label with ``|`` cannot break it."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _small(value: Any) -> str | None:
    """A parity difference: 0.000 would hide the 1e-6 that fp32 files really differ by."""
    return f"{value:.1e}" if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _mb(size: Any) -> float | None:
    return size / 1e6 if isinstance(size, (int, float)) else None


def conversion_section(report: Mapping[str, Any]) -> str:
    """Files and their parity with the float64 numpy reference."""
    rows = [(f.get("file"), f.get("format"), f.get("variant"), _mb(f.get("size_bytes")), _small(f.get("max_abs_logit")),
             "pass" if f.get("passed") else "FAIL") for f in report.get("files", [])]
    labels = report.get("labels")
    params = report.get("num_parameters")
    facts = [f"- checkpoint: `{shown_source(report.get('checkpoint'))}` ({report.get('scheme')})",
             f"- task: {report.get('task')}" + (f", labels: {', '.join(map(str, labels))}" if labels else ""),
             f"- parameters: {params / 1e6:.2f} M" if isinstance(params, (int, float)) else "- parameters: –",
             f"- max sequence length: {report.get('max_seq_len')}; tokenizer: "
             f"{(report.get('tokenizer') or {}).get('type')}, packed into every file"]
    return "\n".join(["## Files", "", *facts, "",
                      table(["file", "format", "precision", "size MB", "max abs logit diff vs reference", "parity"],
                            rows)])


def _drift_columns(variants: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    present = {key for v in variants for key in (v.get("drift") or {})}
    return [(key, title) for key, title in _DRIFT_COLUMNS if key in present]


def quantize_section(report: Mapping[str, Any]) -> str:
    """Each variant's size, speed and accuracy cost against fp32; the chosen one marked."""
    variants = report.get("variants", [])
    columns = _drift_columns(variants)
    chosen = report.get("chosen")
    rows = []
    for v in variants:
        key = f"{v.get('format')}:{v.get('name')}"
        drift = v.get("drift") or {}
        rows.append([f"**{v.get('name')}** (chosen)" if key == chosen else v.get("name"), v.get("format"),
                     v.get("file"), _mb(v.get("size_bytes")), (v.get("latency") or {}).get("median_ms"),
                     v.get("ratio_vs_fp32"), *(drift.get(k) for k, _ in columns),
                     "not judged" if v.get("not_judged") else v.get("meets_budget")])
    budget = report.get("budget") or {}
    judge = report.get("judge") or {}
    lines = ["## Quantization", "",
             f"Mode `{report.get('mode')}`, status {report.get('status')}; judged on {judge.get('examples', '–')} "
             f"examples of {shown_source(judge.get('data'))}; budget: at most {budget.get('max_drop', '–')} "
             "points lost, "
             f"agreement with fp32 at least {budget.get('min_agreement', '–')}.", "",
             table(["variant", "format", "file", "size MB", "median ms", "x fp32",
                    *(title for _, title in columns), "within budget"], rows)]
    for name, item in (report.get("shipped") or {}).items():
        lines += ["", f"**Ship `{name}`**: the chosen variant `{item.get('variant')}` (a copy of `{item.get('copy_of')}`), "
                      f"{(_mb(item.get('size_bytes')) or 0):.2f} MB, {item.get('ratio_vs_fp32') or 0:.2f}x of fp32's time, "
                      f"{item.get('drift') or 'not judged'}."]
    return "\n".join(lines)


def _machine(machine: Mapping[str, Any]) -> str:
    """``CPU (arch, N cores, OS); package versions``: what the latency numbers hold for."""
    what = ", ".join(str(x) for x in (machine.get("architecture"),
                                      f"{machine['physical_cores']} cores" if machine.get("physical_cores") else None,
                                      machine.get("os")) if x)
    packages = machine.get("packages") or {}
    versions = ", ".join(f"{name} {version}" for name, version in packages.items())
    return (f"{machine.get('cpu_model') or 'a host'}" + (f" ({what})" if what else "")
            + (f"; {versions}" if versions else ""))


def bench_section(report: Mapping[str, Any], plot: str | None = None) -> str:
    """Latency and model memory per variant, backend, threads and sequence length on the machine named."""
    rows = []
    for r in report.get("results", []):
        latency, memory = r.get("latency_ms") or {}, r.get("memory") or {}
        rows.append((r.get("variant"), r.get("backend"), r.get("threads"), r.get("seq_len"), latency.get("median"),
                     latency.get("p90"), memory.get("model_peak_mb"), r.get("source")))
    lines = ["## Latency", "", f"Measured by `albert-edge bench` on {_machine(report.get('machine') or {})}.", "",
             table(["variant", "backend", "threads", "seq len", "median ms", "p90 ms", "model peak MB", "source"],
                   rows)]
    recommendation = report.get("recommendation")
    text = recommendation.get("text") if isinstance(recommendation, dict) else recommendation
    if text:
        lines += ["", f"Recommendation: {text}"]
    if plot:
        lines += ["", f"![latency and accuracy per variant]({plot})"]
    return "\n".join(lines)


def render_card(inputs: CardInputs, license_id: str = "apache-2.0", base_model: str | None = None,
                title: str | None = None) -> str:
    """The whole card: front matter, a title, how to run it, then one section per report present."""
    checkpoint = (inputs.conversion or inputs.quantize or {}).get("checkpoint")
    name = title or base_model or model_name(checkpoint)
    # The file to ship is the one quantize chose (model.tflite); without one, the first file written.
    shipped = list(((inputs.quantize or {}).get("shipped") or {}).keys())
    first = next((f.get("file") for f in (inputs.conversion or {}).get("files", []) if f.get("file")), None)
    first = (shipped[0] if shipped else None) or first or next(
        (v.get("file") for v in (inputs.quantize or {}).get("variants", []) if v.get("file")), "MODEL")
    parts = [front_matter(inputs, license_id, base_model), "", f"# {name} for on-device inference", "",
             "Converted with albert-edge: every file carries its tokenizer, "
             "labels and settings, and every number below was measured by the run that made the files.", "",
             "```sh", "pip install 'albert-edge[runtime]'", f'albert-edge predict {first} "some text"', "```"]
    if inputs.conversion is not None:
        parts += ["", conversion_section(inputs.conversion)]
    if inputs.quantize is not None:
        parts += ["", quantize_section(inputs.quantize)]
    if inputs.bench is not None:
        parts += ["", bench_section(inputs.bench, CARD_PLOT if inputs.bench_plot else None)]
    return "\n".join(parts) + "\n"


def write_card(out_dir: str | os.PathLike[str], bench_dir: str | os.PathLike[str] | None = None, *,
               license_id: str = "apache-2.0", base_model: str | None = None, title: str | None = None) -> Path:
    """Write ``README.md`` in ``out_dir`` from the reports there (and in ``bench_dir``); return its path.

    The benchmark's report.png is copied beside it (``bench_report.png``) so the card's image link holds
    once OUT is uploaded on its own. Written through OutputSet: a README.md that albert-edge did not
    write is never replaced.
    """
    inputs = read_inputs(out_dir, bench_dir)
    text = render_card(inputs, license_id, base_model, title)
    with OutputSet(out_dir, writer="card") as staged:
        if inputs.bench_plot is not None:
            staged.write_bytes(CARD_PLOT, inputs.bench_plot.read_bytes())
        path = staged.write_text(CARD_NAME, text)
    return path


def _pipeline_tag(task: str | None) -> str | None:
    """The task's own Hub pipeline tag (``Task.pipeline_tag``); None for a task this version does not know."""
    from albert_edge.tasks import TASK_NAMES, task_class

    return task_class(task).pipeline_tag if task in TASK_NAMES else None
