"""Bench imports never poison the report folder (issue #27, cause 4).

Imported peers, ARM and phone-log documents used to be checked for keys only: strings for
numbers, lists for objects, NaN, booleans as sizes, 20-digit thread counts, ``count=0`` lines
and Markdown in names went through, and report.json was written before report.md/.png rendered,
so a render error left a new JSON beside the old Markdown and PNG. Now every field is typed and
checked before anything is written, and the three files are swapped in as one set.
About 15 s (matplotlib renders).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from albert_edge.cli import main

BASE, PEER = "albert-edge fp32 tflite", "optimum-tflite int8-dynamic"


def latency(median: float) -> dict:
    return {"count": 60, "min": median * 0.9, "median": median, "mean": median, "p90": median * 1.2,
            "p99": median * 1.4, "std": 0.1, "max": median * 1.5}


def variant(name: str, static: bool) -> dict:
    return {"name": name, "tool": "albert-edge", "format": "tflite", "runtime": "ai-edge-litert 2.3.0",
            "file": f"/x/{name}.tflite", "size_bytes": 8_300_000, "static_shape": static, "steps": "made so.",
            "limits": "none known."}


def result(name: str, median: float, ratio: float) -> dict:
    return {"variant": name, "seq_len": 128, "threads": 2, "latency_ms": latency(median), "round_medians_ms": [median],
            "init_ms": 50.0, "first_inference_ms": 9.0, "ratio_vs_baseline": ratio}


def peers_doc() -> dict:
    return {
        "tool": "benchmarks/peers.py", "schema_version": 1, "created_utc": "2026-12-03T14:00:00Z",
        "machine": {"cpu_model": "Test CPU", "physical_cores": 2, "simd": ["AVX2"], "load_average": [1.0]},
        "settings": {"threads": 2, "rounds": 3, "runs": 60, "warmup": 10, "seq_lens": [128], "eval": "test.tsv",
                     "examples": 100, "baseline": BASE, "load_average_end": [1.0]},
        "checkpoint": {"path": "/x/hf", "note": "the sample."},
        "variants": [variant(BASE, False), variant(PEER, True)],
        "results": [result(BASE, 8.0, 1.0), result(PEER, 4.4, 0.55)],
        "accuracy": [{"variant": BASE, "examples": 100, "accuracy": 0.84, "agreement": 1.0, "max_abs_logit_diff": 0.0,
                      "seq_len": 128}],
        "skipped": [], "failed": [],
    }


DEVICE_LOG = """\
STARTING!
Num threads: [1]
Graph: [/data/local/tmp/albert_edge/fp32.tflite]
Input shapes: [1,64:1,64:1,64]
Use xnnpack: [0]
count=50 first=57330 curr=57012 min=56433 max=61109 avg=57420.8 std=802
Inference timings in us: Init: 4802, First inference: 80211, Warmup (avg): 59803.2, Inference (avg): 57420.8
"""


def snapshot(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir()) if p.is_file()}


def write_json(path: Path, doc: object) -> Path:
    path.write_text(json.dumps(doc), encoding="utf-8")  # json.dumps writes NaN as NaN, as Python would
    return path


@pytest.fixture()
def report_dir(tmp_path) -> Path:
    """A report folder holding a good peers import: what a hostile import must leave untouched."""
    out = tmp_path / "report"
    assert main(["bench", "--import-peers", str(write_json(tmp_path / "good.json", peers_doc())), "--out", str(out)]) == 0
    assert {"report.json", "report.md", "report.png"} <= set(snapshot(out))
    return out


def refused(capsys, argv: list[str], out: Path, *needles: str) -> None:
    before = snapshot(out)
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, (code, err)
    assert "Traceback" not in err[0] and "internal error" not in err[0], err
    for needle in needles:
        assert needle in err[0], err
    assert snapshot(out) == before


def broken(change) -> dict:
    doc = copy.deepcopy(peers_doc())
    change(doc)
    return doc


HOSTILE_PEERS = {
    "a string for a thread count": (lambda d: d["settings"].update(threads="12"), "settings.threads"),
    "a 20-digit thread count": (lambda d: d["results"][0].update(threads=10**20), "results[0].threads"),
    "a list for an object": (lambda d: d["results"][0].update(latency_ms=[1, 2]), "results[0].latency_ms"),
    "NaN for a time": (lambda d: d["results"][1]["latency_ms"].update(median=float("nan")), "median"),
    "infinity for a ratio": (lambda d: d["results"][1].update(ratio_vs_baseline=float("inf")), "ratio_vs_baseline"),
    "a boolean for a size": (lambda d: d["variants"][1].update(size_bytes=True), "size_bytes"),
    "a boolean for a flag's opposite": (lambda d: d["variants"][1].update(static_shape="yes"), "static_shape"),
    "a Markdown heading after a newline": (lambda d: d["variants"][1].update(steps="ok\n\n# pwned"), "line break"),
    "an object for a name": (lambda d: d["failed"].append({"variant": {}, "stage": "x", "error": "y"}), "failed[0]"),
    "a zero-run latency": (lambda d: d["results"][0]["latency_ms"].update(count=0), "count"),
}


@pytest.mark.parametrize("change, needle", list(HOSTILE_PEERS.values()), ids=list(HOSTILE_PEERS))
def test_a_hostile_peers_document_is_one_line_and_leaves_the_report_folder(report_dir, tmp_path, capsys,
                                                                           change, needle):
    path = write_json(tmp_path / "peers.json", broken(change))
    refused(capsys, ["bench", "--import-peers", str(path), "--out", str(report_dir)], report_dir, str(path), needle)


def test_a_table_splitting_name_is_escaped_in_report_md(tmp_path, capsys):
    doc = peers_doc()
    doc["variants"][1]["name"] = doc["results"][1]["variant"] = "evil | <b>x</b> [y](z)"
    out = tmp_path / "report"
    assert main(["bench", "--import-peers", str(write_json(tmp_path / "p.json", doc)), "--out", str(out)]) == 0
    md = (out / "report.md").read_text(encoding="utf-8")
    row = next(line for line in md.splitlines() if line.startswith("| evil"))
    assert row.count("|") == 11 and "<b>" not in md and "[y](z)" not in md
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["peers"]["variants"][1]["name"] == \
        "evil | <b>x</b> [y](z)"  # report.json keeps the data as it came


HOSTILE_LOGS = {
    "count=0": (DEVICE_LOG.replace("count=50", "count=0"), "count=0"),
    "a 20-digit thread count": (DEVICE_LOG.replace("Num threads: [1]", "Num threads: [99999999999999999999]"),
                                "Num threads"),
    "a 20-digit sequence length": (DEVICE_LOG.replace("1,64:1,64:1,64", "1,99999999999999999999"), "sequence length"),
    "a stat line without min/max/avg": (DEVICE_LOG.replace(" min=56433 max=61109 avg=57420.8", " min=1"), "count=50"),
}


@pytest.mark.parametrize("log, needle", list(HOSTILE_LOGS.values()), ids=list(HOSTILE_LOGS))
def test_a_hostile_device_log_is_one_line_and_leaves_the_report_folder(report_dir, tmp_path, capsys, log, needle):
    path = tmp_path / "phone.log"
    path.write_text(log, encoding="utf-8")
    refused(capsys, ["bench", "--import-device-log", str(path), "--out", str(report_dir)], report_dir, str(path), needle)


def test_a_hostile_arm_document_is_one_line_and_leaves_the_report_folder(report_dir, tmp_path, capsys):
    doc = {"tool": "albert-edge arm-check", "created_utc": "2026-12-03T12:00:00Z", "eval": "eval.tsv", "examples": 2,
           "host_machine": {"cpu_model": "test cpu", "simd": ["AVX2"]}, "emulator": {"qemu": "7.2", "packages": {}},
           "cpus": [{"cpu": "cortex-a72", "midr": "0x410fd083", "features": ["fp"]}], "variants": [],
           "rows": [{"variant": "fp32", "cpu": "cortex-a72", "source": "arm-emulated", "accuracy": "0.5",
                     "agreement_vs_x86": 1.0, "max_abs_logit_diff_vs_x86": 0.0, "agreement_vs_fp32": 1.0,
                     "instructions_real": None, "instructions_padded": None}]}
    path = write_json(tmp_path / "arm_check.json", doc)
    refused(capsys, ["bench", "--import-arm", str(path), "--out", str(report_dir)], report_dir, "rows[0].accuracy")


def test_a_render_error_leaves_the_previous_json_md_and_png_together(report_dir, tmp_path, capsys, monkeypatch):
    from albert_edge.bench_latency import output

    def broken_png(report, target):
        Path(target).write_bytes(b"half a png")
        raise OSError(28, "No space left on device")

    before = snapshot(report_dir)
    monkeypatch.setattr(output, "render_png", broken_png)
    doc = peers_doc()
    doc["results"][1]["latency_ms"] = latency(3.0)
    code = main(["bench", "--import-peers", str(write_json(tmp_path / "newer.json", doc)), "--out", str(report_dir)])
    assert code == 2
    assert snapshot(report_dir) == before
    monkeypatch.undo()
    assert main(["bench", "--import-peers", str(tmp_path / "newer.json"), "--out", str(report_dir)]) == 0


def test_a_poisoned_report_json_already_in_the_folder_is_one_line(report_dir, tmp_path, capsys):
    """A report.json that an older version let through is refused where it is read, not as an internal error."""
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    data["peers"]["settings"]["threads"] = "12"
    (report_dir / "report.json").write_text(json.dumps(data), encoding="utf-8")
    path = write_json(tmp_path / "good.json", peers_doc())
    refused(capsys, ["bench", "--import-peers", str(path), "--out", str(report_dir)], report_dir, "settings.threads")
