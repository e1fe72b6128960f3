"""benchmarks/suites/peers.py without the peer venvs: its JSON schema, the merge into the bench report, its arguments.

The peers themselves (Optimum, optimum-onnx, ExecuTorch) live in venvs that CI never builds; these tests
use a peers document shaped like the script's output (numbers made up: only the plumbing is checked).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.support.benchmark_logs import PLAIN_LOG

from albert_edge.bench_latency.peers import PEERS_TOOL, load_peers, validate_peers
from albert_edge.cli import main
from albert_edge.errors import DataError

REPO = Path(__file__).resolve().parents[1]
PEERS_SCRIPT = "benchmarks.suites.peers"  # run as ``python -m benchmarks.suites.peers`` from the repository root
WORKER = REPO / "benchmarks" / "suites" / "peer_tools" / "worker.py"  # run by path, in the peer venvs


def _latency(median: float) -> dict:
    return {"count": 60, "min": median * 0.9, "median": median, "mean": median * 1.05, "p90": median * 1.2,
            "p99": median * 1.4, "std": 0.1, "max": median * 1.5}


def _variant(name: str, tool: str, fmt: str, static: bool) -> dict:
    return {"name": name, "tool": tool, "format": fmt, "runtime": "ai-edge-litert 2.3.0", "file": f"/x/{name}.{fmt}",
            "size_bytes": 8_300_000, "sha256": "0" * 64, "static_shape": static, "steps": f"steps of {name}.",
            "limits": f"limits of {name}.", "versions": {}}


def _result(name: str, seq, median: float, ratio: float) -> dict:
    return {"variant": name, "seq_len": seq, "threads": 2, "latency_ms": _latency(median), "round_medians_ms": [median],
            "init_ms": 50.0, "first_inference_ms": 9.0, "ratio_vs_baseline": ratio}


def peers_doc() -> dict:
    base, peer = "albert-edge fp32 tflite", "optimum-tflite int8-dynamic"
    return {
        "tool": PEERS_TOOL, "schema_version": 1, "created_utc": "2026-12-03T14:00:00Z",
        "machine": {"kind": "host", "cpu_model": "Test CPU", "physical_cores": 2, "simd": ["AVX2"], "load_average": [1.0]},
        "settings": {"threads": 2, "rounds": 3, "runs": 60, "warmup": 10, "seq_lens": [128, "real"],
                     "eval": "test.tsv", "examples": 1728, "baseline": base, "load_average_end": [1.0]},
        "checkpoint": {"path": "/x/hf", "note": "the sample as HF ALBERT."},
        "variants": [_variant(base, "albert-edge", "tflite", False), _variant(peer, "Optimum 1.27", "tflite", True)],
        "results": [_result(base, 128, 8.0, 1.0), _result(peer, 128, 4.4, 0.55), _result(base, "real", 3.0, 1.0)],
        "accuracy": [{"variant": base, "examples": 1728, "accuracy": 0.8403, "agreement": 1.0, "max_abs_logit_diff": 0.0,
                      "seq_len": "real"},
                     {"variant": peer, "examples": 1728, "accuracy": 0.8391, "agreement": 0.995,
                      "max_abs_logit_diff": 0.03, "seq_len": 128}],
        "skipped": [{"variant": peer, "seq_len": "real", "reason": "static [1,128] input shape"}],
        "failed": [{"variant": "executorch", "stage": "build", "error": "no venv"}],
    }


def _write(tmp_path: Path, doc: dict, name: str = "peers.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def test_a_peers_document_shaped_like_the_scripts_output_validates(tmp_path):
    assert load_peers(_write(tmp_path, peers_doc()))["settings"]["baseline"] == "albert-edge fp32 tflite"


@pytest.mark.parametrize("breakage, message", [
    (lambda d: d.pop("accuracy"), "missing keys accuracy"),
    (lambda d: d.update(tool="albert-edge bench"), "is this a peers.py output"),
    (lambda d: d["results"][1].update(variant="ghost"), "'ghost' is not listed in variants"),
    (lambda d: d["settings"].update(baseline="ghost"), "settings.baseline 'ghost'"),
    (lambda d: d["results"][0]["latency_ms"].pop("p90"), "missing keys p90"),
    (lambda d: d["accuracy"][0].update(seq_len="padded"), "expected an int or 'real'"),
])
def test_a_broken_peers_document_is_refused_naming_the_field(breakage, message):
    doc = copy.deepcopy(peers_doc())
    breakage(doc)
    with pytest.raises(DataError, match=message):
        validate_peers(doc, "p.json")


def test_import_peers_puts_the_side_by_side_table_into_report_md_and_png(tmp_path, capsys):
    out = tmp_path / "report"
    assert main(["bench", "--import-peers", str(_write(tmp_path, peers_doc())), "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["peers"]["variants"][1]["name"] == "optimum-tflite int8-dynamic"
    md = (out / "report.md").read_text(encoding="utf-8")
    section = md[md.index("## Peers"):]
    assert "| optimum-tflite int8-dynamic | Optimum 1.27 | ai-edge-litert 2.3.0 | static [1,128] | 8.30 MB | 4.4 |" in section
    assert "0.55x" in section and "83.91%" in section and "99.50%" in section
    assert section.index("### 128 tokens") < section.index("### real token lengths")
    assert "not timed: optimum-tflite int8-dynamic at real" in section and "**failed**: executorch (build)" in section
    assert "Test CPU" in section and "AVX2" in section   # the machine is named
    assert (out / "report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    capsys.readouterr()


def test_import_peers_keeps_the_results_already_in_the_report(tmp_path, capsys):
    out = tmp_path / "report"
    log = tmp_path / "phone.txt"
    log.write_text(PLAIN_LOG, encoding="utf-8")
    assert main(["bench", "--import-device-log", str(log), "--out", str(out)]) == 0
    before = json.loads((out / "report.json").read_text(encoding="utf-8"))["results"]
    assert main(["bench", "--import-peers", str(_write(tmp_path, peers_doc())), "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["results"] == before and before and report["peers"]["tool"] == PEERS_TOOL
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.index("## Sequence length") < md.index("## Peers")
    capsys.readouterr()


def test_import_peers_refuses_a_bad_file_in_one_line_and_writes_nothing(tmp_path, capsys):
    bad = _write(tmp_path, {"tool": PEERS_TOOL}, "bad.json")
    assert main(["bench", "--import-peers", str(bad), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.json" in err[0] and "missing keys" in err[0]
    assert not (tmp_path / "r" / "report.json").exists()


def _peers_module():
    return importlib.import_module(PEERS_SCRIPT)


@pytest.mark.parametrize("argv, message", [
    (["--peers", "optimum-tflite,tvm"], "unknown tvm"),
    (["--runs", "0"], "--runs must be >= 1"),
    (["--eval", "/nonexistent.tsv"], "is not a file"),
])
def test_peers_script_rejects_bad_arguments_with_exit_2(argv, message, capsys):
    with pytest.raises(SystemExit) as exc:
        _peers_module().parse_args(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_peers_script_always_builds_albert_edge_first_and_knows_every_variants_peer():
    module = _peers_module()
    args = module.parse_args(["--peers", "executorch,optimum-onnx"])
    assert args.groups == ["albert-edge", "executorch", "optimum-onnx"]
    assert {group for group, *_ in module.VARIANTS.values()} == set(module.PEER_GROUPS)
    assert module.BASELINE in module.VARIANTS


def test_peers_script_help_runs_without_the_peer_venvs():
    result = subprocess.run([sys.executable, "-m", PEERS_SCRIPT, "--help"], check=False, capture_output=True, text=True,
                            timeout=60, cwd=REPO)
    assert result.returncode == 0 and "--import-peers" not in result.stdout and "--peers" in result.stdout


def test_worker_feeds_real_lengths_or_pads_to_128(tmp_path):
    spec = importlib.util.spec_from_file_location("peers_worker", WORKER)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    ids = np.zeros((2, 128), dtype=np.int64)
    ids[0, :5], ids[1, :9] = 7, 8
    data = {"ids": ids, "mask": (ids > 0).astype(np.int64), "types": np.zeros_like(ids), "lengths": np.array([5, 9])}
    real = worker.text_inputs(data, 1, "real")
    padded = worker.text_inputs(data, 1, 128)
    assert [a.shape for a in real] == [(1, 9)] * 3 and int(real[1].sum()) == 9
    assert [a.shape for a in padded] == [(1, 128)] * 3 and int(padded[1].sum()) == 9
    bad = subprocess.run([sys.executable, str(WORKER), "--model", str(tmp_path / "m.bin"), "--inputs", "x.npz"],
                         check=False, capture_output=True, text=True, timeout=60)
    line = json.loads(bad.stdout.strip())
    assert bad.returncode == 2 and line["ok"] is False and "error" in line


LITERT_KEYS = {"litert-torch fp32": "fp32", "litert-torch PT2E int8": "pt2e_int8",
               "litert-quantizer dynamic int8": "dynamic_wi8", "litert-quantizer int4": "dynamic_wi4",
               "litert-quantizer dynamic int8 of albert-edge fp32": "albert_edge_dynamic_wi8",
               "litert-quantizer int4 of albert-edge fp32": "albert_edge_dynamic_wi4"}


def test_peers_script_knows_the_litert_group_and_hands_it_albert_edges_fp32_file():
    module = _peers_module()
    assert module.parse_args(["--peers", "litert"]).groups == ["albert-edge", "litert"]
    litert = {name: key for name, (group, _, key, *_) in module.VARIANTS.items() if group == "litert"}
    assert litert == LITERT_KEYS
    assert module.BUILDERS["litert"] == ("litert", "build_litert.py")
    built = {"albert-edge": {"files": {"fp32.tflite": "/x/model_fp32.tflite"}}}
    assert module.builder_extra("litert", built) == ["--albert-edge-fp32", "/x/model_fp32.tflite"]
    assert module.builder_extra("litert", {}) == [] and module.builder_extra("executorch", built) == []


def test_a_file_the_builder_could_not_write_is_listed_as_failed_and_the_others_keep_their_notes(tmp_path):
    module = _peers_module()
    out = tmp_path / "out"
    out.mkdir()
    ours = {key: out / f"ours_{i}.tflite" for i, key in enumerate(("fp32.tflite", "dynamic_int8.tflite"))}
    ours["dynamic_int8.onnx"] = out / "ours.onnx"
    theirs = {key: out / f"{key}.tflite" for key in set(LITERT_KEYS.values()) - {"pt2e_int8"}}
    for path in [*ours.values(), *theirs.values()]:
        path.write_bytes(b"\x00" * 16)
    built = {"hf": str(out / "hf"), "albert-edge": {"files": {k: str(v) for k, v in ours.items()}, "versions": {}},
             "litert": {"files": {k: str(v) for k, v in theirs.items()}, "versions": {"litert-torch": "0.10.0"},
                        "errors": {"pt2e_int8": "ValueError: boom"},
                        "notes": {"dynamic_wi4": {"word_table_types": ["INT4"]}}}}
    (out / "built.json").write_text(json.dumps(built), encoding="utf-8")
    args = module.parse_args(["--peers", "litert", "--reuse"])
    failed: list[dict] = []
    variants = module.collect_variants(args, out, tmp_path / "no_venvs", failed)
    assert failed == [{"variant": "litert-torch PT2E int8", "stage": "build", "error": "ValueError: boom"}]
    names = [v["name"] for v in variants]
    assert module.BASELINE in names and "litert-torch PT2E int8" not in names
    assert set(LITERT_KEYS) - set(names) == {"litert-torch PT2E int8"}
    int4 = next(v for v in variants if v["name"] == "litert-quantizer int4")
    assert int4["notes"] == {"word_table_types": ["INT4"]} and int4["versions"] == {"litert-torch": "0.10.0"}
    assert int4["tool"] == "litert-quantizer 0.11" and int4["size_bytes"] == 16


def test_the_docs_table_is_rendered_from_a_peers_document_with_the_litert_rows():
    table = importlib.import_module("benchmarks.suites.peers_table")
    doc = copy.deepcopy(peers_doc())
    doc["settings"]["command"] = "python -m benchmarks.suites.peers --out /tmp/p"
    doc["variants"].append(dict(_variant("litert-quantizer int4", "litert-quantizer 0.11", "tflite", True),
                                notes={"word_table_types": ["INT4"]}))
    doc["results"].append(_result("litert-quantizer int4", 128, 3.6, 0.45))
    assert table.round_ratios(dict(doc["results"][-1], round_medians_ms=[3.0, 6.0]),
                              dict(doc["results"][0], round_medians_ms=[10.0, 8.0])) == "0.30–0.75"
    doc["failed"].append({"variant": "litert-torch PT2E int8", "stage": "eval", "error": "RuntimeError: no kernel"})
    validate_peers(doc, "doc")
    lines = table.render(doc).splitlines()
    rows = [line for line in lines if line.startswith("| ") and not line.startswith("| file")]
    assert [r.split(" | ")[0] for r in rows] == ["| litert-quantizer int4", "| optimum-tflite int8-dynamic",
                                                 "| albert-edge fp32 tflite (baseline)"]
    assert "| 0.45x | 0.45–0.45 | – (pads to 128) | – | – |" in rows[0] and "| 0.55x |" in rows[1]
    assert "| 1.00x | 1.00–1.00 | 3 | 1.00x | 1.00–1.00 | 84.03% | 100.00% |" in rows[2]
    assert "`python -m benchmarks.suites.peers --out /tmp/p`" in lines[0] and "Test CPU" in lines[0]
    assert "- **failed**: litert-torch PT2E int8 (eval): RuntimeError: no kernel" in lines


def test_worker_binds_litert_torchs_positional_inputs_by_position():
    spec = importlib.util.spec_from_file_location("peers_worker", WORKER)
    worker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(worker)
    assert worker.input_roles(["args_2", "args_0", "args_1"]) == {
        "args_0": "input_ids", "args_1": "attention_mask", "args_2": "token_type_ids"}
    assert worker.input_roles(["input_ids", "attention_mask"]) == {"input_ids": "input_ids",
                                                                   "attention_mask": "attention_mask"}
    with pytest.raises(ValueError, match="'args_3'"):
        worker.input_roles(["args_3"])
