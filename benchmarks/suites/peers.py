"""albert-edge beside its peers: one checkpoint, every tool's files, one interleaved run. Prints JSON.

    bash benchmarks/suites/peers_setup.sh            # once: one pinned venv per peer (~/.cache/albert-edge/peers)
    python -m benchmarks.suites.peers --out peers_out > peers.json
    albert-edge bench --import-peers peers.json --out demo_out/report   # into report.md / report.png

What it does (docs/peers.md has each peer's steps and limits):

1. Writes the shipped sample (examples/albert_tiny_zh_sentiment, fine-tuned, so accuracy means
   something) as a Hugging Face ALBERT checkpoint with albert-edge's own writer
   (``albert_edge.model.write_hf_checkpoint``, brightmart's embedding projection folded into the word
   table first: ``albert_edge.model.fold``). Every file below starts from that folder.
2. Builds albert-edge's own files from it (``albert-edge quantize --mode dynamic``: fp32 and dynamic
   int8 TFLite, dynamic int8 ONNX) and each peer's in the peer's own venv:
   Optimum 1.27 TFLite fp32 / int8-dynamic (static [1, 128]); optimum-onnx export, ORT O2, ORT dynamic
   int8; ExecuTorch XNNPACK fp32 / 8da8w; litert-torch fp32 / PT2E int8 and litert-quantizer dynamic
   int8 / int4 on litert-torch's file and on albert-edge's own fp32 file
   (``benchmarks/suites/peer_tools/build_*.py``).
3. Tokenizes the labelled eval file once (albert-edge's WordPiece, which equals BertTokenizer on this
   vocab) and runs every file over it for accuracy, at real lengths where the file's shape allows,
   else padded to 128.
4. Times every file in ``--rounds`` interleaved rounds (order reversed every other round), each
   configuration in its own process (``benchmarks/suites/peer_tools/worker.py`` with the Python that has the
   file's runtime: LiteRT / ONNX Runtime from albert-edge's venv, ExecuTorch from its venv), at 128
   tokens and at the eval texts' real lengths where allowed. Medians and p90 pool the rounds; the
   ratio is each file's p50 over albert-edge fp32 TFLite's p50 at the same length.

A peer that fails to build or run is listed under ``failed`` with its error; the others still run.
Never put these numbers in a test: they are a benchmark (tests check the schema and the merge).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TOOLS = HERE / "peer_tools"
SAMPLE = REPO / "examples" / "albert_tiny_zh_sentiment"
DEFAULT_PEERS_DIR = Path(os.environ.get("ALBERT_EDGE_PEERS_DIR", Path.home() / ".cache" / "albert-edge" / "peers"))
BASELINE = "albert-edge fp32 tflite"
MAX_SEQ = 128
PEER_GROUPS = ("albert-edge", "optimum-tflite", "optimum-onnx", "executorch", "litert")

LITERT_STATIC = ("static [1,128] only: litert-torch's dynamic-length export of ALBERT failed (the builder's notes "
                 "keep the error), so every text is padded to 128.")
LITERT_ON_OURS = ("the quantizer rewrites the flatbuffer and drops the appended pack (tokenizer, labels, "
                  "albert_edge.json); the word table is read with GATHER, which its dynamic recipes do not quantize, "
                  "so it stays fp32.")

# name -> (group, tool, key in the builder's "files", steps, limits). The builders' docstrings say the same at length.
VARIANTS: dict[str, tuple[str, str, str, str, str]] = {
    BASELINE: ("albert-edge", "albert-edge", "fp32.tflite",
               "`albert-edge quantize HF --mode dynamic --formats tflite,onnx`: fp32 file, dynamic [batch, seq] inputs.",
               "none at this size; the packed tokenizer/metadata zip adds ~0.1 MB."),
    "albert-edge dynamic int8 tflite": ("albert-edge", "albert-edge", "dynamic_int8.tflite",
                                        "same command: dynamic-range int8 (int8 weights, float activations).",
                                        "judged against fp32 by quantize's own accuracy gate."),
    "albert-edge dynamic int8 onnx": ("albert-edge", "albert-edge", "dynamic_int8.onnx",
                                      "same command: ONNX Runtime dynamic int8 (MatMulInteger), dynamic shapes.",
                                      "no transformer fusion (benchmarks/records/onnx_fusion.py: at most 5 % from it)."),
    "optimum-tflite fp32": ("optimum-tflite", "Optimum 1.27", "fp32",
                            "`optimum-cli export tflite --task text-classification --batch_size 1 --sequence_length 128`.",
                            ("static [1,128] only (every text padded to 128); needs TensorFlow <= 2.12.1 and an import "
                            "guard for its torchvision import; Optimum >= 2.0 has no TFLite exporter.")),
    "optimum-tflite int8-dynamic": ("optimum-tflite", "Optimum 1.27", "int8_dynamic",
                                    "same with `--quantize int8-dynamic`.",
                                    "static [1,128]; int64 inputs as exported."),
    "optimum-onnx fp32": ("optimum-onnx", "optimum-onnx 0.1", "fp32",
                          "`optimum-cli export onnx --task text-classification` (dynamic batch and sequence).",
                          "ONNX Runtime applies its own default graph optimisations at load."),
    "optimum-onnx O2": ("optimum-onnx", "optimum-onnx 0.1", "o2",
                        ("ORTOptimizer with AutoOptimizationConfig.O2() on the export (Attention, SkipLayerNorm, "
                        "FastGelu fusions)."),
                        "the optimizer unties ALBERT's shared layer into 4 copies (larger file)."),
    "optimum-onnx ORT int8": ("optimum-onnx", "optimum-onnx 0.1", "int8",
                              ("ORTQuantizer with AutoQuantizationConfig.avx512_vnni (avx2 without VNNI), dynamic, "
                              "per-tensor, on the **un-optimized export**."),
                              ("quantizing the O2 graph fails in ONNX shape inference (fused contrib ops), so the "
                              "int8 file is unfused.")),
    "executorch fp32": ("executorch", "ExecuTorch 1.5.1", "fp32",
                        ("torch.export (dynamic sequence 2..128) + to_edge_transform_and_lower(XnnpackPartitioner) "
                        "+ to_executorch(), by hand: optimum-cli has no ExecuTorch text-classification task."),
                        ("LayerNorm, embedding gathers, pow (gelu_new) and view copies stay on portable kernels "
                        "between XNNPACK partitions.")),
    "executorch 8da8w": ("executorch", "ExecuTorch 1.5.1", "8da8w",
                         ("torchao Int8DynamicActivationIntxWeightConfig(int8 weights, PerAxis(0)) then the same "
                         "export."),
                         ("per-channel, not the default PerGroup(32): 32 does not divide ALBERT-Tiny's width 312, "
                         "and the default leaves those linears float; the embedding tables stay fp32.")),
    "litert-torch fp32": ("litert", "litert-torch 0.10", "fp32",
                          ("`litert_torch.convert(model, sample_args)` on AlbertForSequenceClassification (eager "
                          "attention) wrapped to return the logits; one dynamic-length attempt first."),
                          LITERT_STATIC),
    "litert-torch PT2E int8": ("litert", "litert-torch 0.10", "pt2e_int8",
                               ("litert-torch's documented PT2E recipe: PT2EQuantizer(get_symmetric_quantization_"
                               "config(is_per_channel=True, is_dynamic=True)), prepare_pt2e/convert_pt2e, "
                               "convert(quant_config=QuantConfig(pt2e_quantizer=...))."),
                               "static [1,128]; whether LiteRT 2.3 runs it is what the evaluation finds."),
    "litert-quantizer dynamic int8": ("litert", "litert-quantizer 0.11", "dynamic_wi8",
                                      "`recipe.dynamic_wi8_afp32()` on litert-torch's fp32 file (int8 weights per "
                                      "channel, activations quantized at run time).",
                                      LITERT_STATIC),
    "litert-quantizer int4": ("litert", "litert-quantizer 0.11", "dynamic_wi4",
                              "`recipe.dynamic_wi4_afp32()` on litert-torch's fp32 file (int4 weights per channel, "
                              "word table included via EMBEDDING_LOOKUP; activations quantized at run time).",
                              LITERT_STATIC),
    "litert-quantizer dynamic int8 of albert-edge fp32": (
        "litert", "litert-quantizer 0.11", "albert_edge_dynamic_wi8",
        "`recipe.dynamic_wi8_afp32()` on albert-edge's fp32 .tflite.",
        LITERT_ON_OURS),
    "litert-quantizer int4 of albert-edge fp32": (
        "litert", "litert-quantizer 0.11", "albert_edge_dynamic_wi4",
        "`recipe.dynamic_wi4_afp32()` on albert-edge's fp32 .tflite.",
        LITERT_ON_OURS),
}


def log(message: str) -> None:
    print(f"[peers {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.suites.peers",
        description="Build albert-edge's and its peers' files from one Hugging Face checkpoint, time them in one "
                    "interleaved run and print the comparison as JSON (see docs/peers.md).")
    parser.add_argument("--out", default="peers_out", help="work folder for the checkpoint and every file (default peers_out)")
    parser.add_argument("--eval", default=str(SAMPLE / "test.tsv"), help="labelled TSV for accuracy and real lengths")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=60, help="timed runs per configuration and round")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--peers", default=",".join(PEER_GROUPS),
                        help=f"comma-separated subset of {', '.join(PEER_GROUPS)} (albert-edge is always built)")
    parser.add_argument("--peers-dir", default=str(DEFAULT_PEERS_DIR), help="where peers_setup.sh put the venvs")
    parser.add_argument("--setup", action="store_true", help="run benchmarks/suites/peers_setup.sh first")
    parser.add_argument("--reuse", action="store_true", help="reuse files already built in --out")
    parser.add_argument("--limit", type=int, default=0, help="evaluate only the first N texts (0 = all)")
    return parser


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """Parse and check the arguments; a bad value exits 2 with one line (argparse's error)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    groups = [g.strip() for g in args.peers.split(",") if g.strip()]
    unknown = [g for g in groups if g not in PEER_GROUPS]
    if unknown:
        parser.error(f"--peers: unknown {', '.join(unknown)} (expected some of {', '.join(PEER_GROUPS)})")
    args.groups = ["albert-edge"] + [g for g in groups if g != "albert-edge"]
    for name in ("threads", "rounds", "runs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1")
    if args.warmup < 0 or args.limit < 0:
        parser.error("--warmup and --limit must be >= 0")
    if not Path(args.eval).is_file():
        parser.error(f"--eval: {args.eval} is not a file")
    return args


def write_hf_checkpoint(out: Path) -> Path:
    """The sample as a Hugging Face ALBERT folder (config, safetensors, vocab, tokenizer config, labels)."""
    from albert_edge.model import load_checkpoint
    from albert_edge.model import write_hf_checkpoint as write_hf
    from albert_edge.model.fold import fold_embedding_projection

    target = out / "hf"
    weights = fold_embedding_projection(load_checkpoint(str(SAMPLE)))
    write_hf(weights, target)
    shutil.copy(SAMPLE / "vocab.txt", target / "vocab.txt")
    (target / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "BertTokenizer", "do_lower_case": True, "model_max_length": MAX_SEQ}) + "\n", encoding="utf-8")
    labels = (SAMPLE / "labels.txt").read_text(encoding="utf-8").split()
    config = json.loads((target / "config.json").read_text(encoding="utf-8"))
    config["id2label"] = {str(i): name for i, name in enumerate(labels)}
    config["label2id"] = {name: i for i, name in enumerate(labels)}
    (target / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    return target


def build_albert_edge(hf: Path, out: Path) -> dict[str, str]:
    """albert-edge's own fp32 / dynamic int8 files from the same folder (its CLI, its venv)."""
    target = out / "albert_edge"
    subprocess.run([sys.executable, "-m", "albert_edge", "quantize", str(hf), "--calib", str(SAMPLE / "calib.txt"),
                    "--mode", "dynamic", "--formats", "tflite,onnx", "--labels", "neg,pos", "--out", str(target),
                    # ORT's per-tensor dynamic int8 by name: the peers' int8 files are that recipe too
                    # (--mode dynamic's ONNX default is the slower, more faithful onnx_dynamic_int8_block).
                    "--variants", "dynamic_int8,onnx_dynamic_int8"],
                   check=True, stdout=sys.stderr)
    variants = target / "variants"  # every candidate quantize built, the chosen copied to model.* beside
    files = {"fp32.tflite": variants / "fp32.tflite", "dynamic_int8.tflite": variants / "dynamic_int8.tflite",
             "dynamic_int8.onnx": variants / "dynamic_int8.onnx"}
    return {k: str(v) for k, v in files.items()}


BUILDERS = {"optimum-tflite": ("tflite", "build_optimum_tflite.py"), "optimum-onnx": ("onnx", "build_optimum_onnx.py"),
            "executorch": ("executorch", "build_executorch.py"), "litert": ("litert", "build_litert.py")}


def peer_python(peers_dir: Path, venv: str) -> Path:
    python = peers_dir / venv / "bin" / "python"
    if not python.exists():
        raise RuntimeError(f"{python} missing: run bash benchmarks/suites/peers_setup.sh {venv}")
    return python


def build_peer(group: str, hf: Path, out: Path, peers_dir: Path, extra: list[str] | None = None) -> dict:
    """Run one peer's builder in its venv; returns its JSON line (files, versions, notes; ``errors`` per file)."""
    venv, script = BUILDERS[group]
    result = subprocess.run([str(peer_python(peers_dir, venv)), str(TOOLS / script), "--hf", str(hf),
                             "--out", str(out / group), *(extra or [])], check=False, capture_output=True, text=True)
    if result.returncode != 0:
        tail = " ".join(result.stderr.strip().splitlines()[-3:])[-600:]
        raise RuntimeError(f"{script} exited {result.returncode}: {tail}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def tokenize_eval(path: str, out: Path, limit: int) -> tuple[Path, np.ndarray]:
    """Tokenize the labelled file once ([N, 128] ids/mask/types padded, lengths) -> (npz path, labels)."""
    from albert_edge.inputs.data import read_tsv
    from albert_edge.tokenizer.preprocessor import Preprocessor
    from albert_edge.tokenizer.wordpiece import WordPieceTokenizer

    labels = (SAMPLE / "labels.txt").read_text(encoding="utf-8").split()
    examples = read_tsv(path, labels)
    if limit:
        examples = examples[:limit]
    vocab = (SAMPLE / "vocab.txt").read_text(encoding="utf-8")
    pre = Preprocessor(WordPieceTokenizer.from_vocab_text(vocab, do_lower_case=True), max_seq_len=MAX_SEQ)
    encodings = [pre.encode(e.text_a, e.text_b, pad_to=MAX_SEQ) for e in examples]
    target = out / "eval_inputs.npz"
    np.savez(target, ids=np.array([e.input_ids for e in encodings], dtype=np.int64),
             mask=np.array([e.attention_mask for e in encodings], dtype=np.int64),
             types=np.array([e.token_type_ids for e in encodings], dtype=np.int64),
             lengths=np.array([e.length for e in encodings], dtype=np.int64))
    return target, np.array([labels.index(e.label) for e in examples])


def run_worker(python: Path, args: list[str]) -> dict:
    """One worker process; its one JSON line (``ok`` false with the error when it failed)."""
    result = subprocess.run([str(python), str(TOOLS / "worker.py"), *args], check=False, capture_output=True, text=True)
    lines = [line for line in result.stdout.splitlines() if line.startswith("{")]
    if not lines:
        return {"ok": False, "error": f"worker exited {result.returncode}: {result.stderr.strip()[-400:]}"}
    return json.loads(lines[-1])


def latency_summary(samples: list[float]) -> dict:
    a = np.asarray(samples, dtype=np.float64)
    return {"count": int(a.size), "min": float(a.min()), "median": float(np.median(a)), "mean": float(a.mean()),
            "p90": float(np.percentile(a, 90)), "p99": float(np.percentile(a, 99)), "std": float(a.std()),
            "max": float(a.max())}


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def builder_extra(group: str, built: dict) -> list[str]:
    """Arguments beyond --hf/--out: litert-quantizer also quantizes albert-edge's own fp32 file."""
    if group == "litert" and "albert-edge" in built:
        return ["--albert-edge-fp32", built["albert-edge"]["files"]["fp32.tflite"]]
    return []


def collect_variants(args: argparse.Namespace, out: Path, peers_dir: Path, failed: list[dict]) -> list[dict]:
    """Build (or reuse) every file; one entry per variant with the Python that runs it."""
    cache = out / "built.json"
    built: dict = json.loads(cache.read_text(encoding="utf-8")) if args.reuse and cache.exists() else {}
    if "hf" not in built:
        log("writing the sample as a Hugging Face ALBERT checkpoint")
        built["hf"] = str(write_hf_checkpoint(out))
    hf = Path(built["hf"])
    for group in args.groups:
        if group in built:
            continue
        log(f"building {group}")
        try:
            built[group] = ({"files": build_albert_edge(hf, out), "versions": {}} if group == "albert-edge"
                            else build_peer(group, hf, out, peers_dir, builder_extra(group, built)))
        except (RuntimeError, subprocess.CalledProcessError, OSError, ValueError) as exc:
            failed.append({"variant": group, "stage": "build", "error": " ".join(str(exc).split())[:600]})
            log(f"{group} failed to build: {exc}")
        cache.write_text(json.dumps(built, indent=1) + "\n", encoding="utf-8")
    variants = []
    for name, (group, tool, key, steps, limits) in VARIANTS.items():
        if group not in args.groups or group not in built:
            continue
        if key not in built[group]["files"]:
            error = built[group].get("errors", {}).get(key, f"the {group} builder wrote no {key} file")
            failed.append({"variant": name, "stage": "build", "error": error})
            continue
        path = built[group]["files"][key]
        python = Path(sys.executable) if not path.endswith(".pte") else peer_python(peers_dir, "executorch")
        variants.append({"name": name, "tool": tool, "format": Path(path).suffix.lstrip("."),
                         "runtime": None, "file": path, "size_bytes": os.path.getsize(path), "sha256": sha256(path),
                         "static_shape": None, "steps": steps, "limits": limits,
                         "versions": built[group].get("versions", {}), "python": str(python),
                         **({"notes": built[group]["notes"][key]} if key in built[group].get("notes", {}) else {})})
    return variants


def evaluate(variants: list[dict], inputs: Path, labels: np.ndarray, out: Path, threads: int,
             failed: list[dict]) -> list[dict]:
    """Each file over the eval texts once (real lengths where allowed); accuracy and agreement with the baseline."""
    logits: dict[str, np.ndarray] = {}
    rows = []
    for v in variants:
        target = out / f"logits_{hashlib.md5(v['name'].encode()).hexdigest()[:8]}.npy"
        result = {"ok": False}
        for seq in ("real", str(MAX_SEQ)):
            result = run_worker(Path(v["python"]), ["--model", v["file"], "--inputs", str(inputs), "--mode", "eval",
                                                    "--threads", str(threads), "--seq-len", seq,
                                                    "--logits-out", str(target)])
            if result.get("ok") or "static input shape" not in result.get("error", ""):
                break
        if not result.get("ok"):
            failed.append({"variant": v["name"], "stage": "eval", "error": result.get("error", "?")})
            log(f"{v['name']}: eval failed: {result.get('error')}")
            continue
        v["runtime"], v["static_shape"] = result["runtime"], result["static_shape"]
        logits[v["name"]] = np.load(target)
        rows.append({"variant": v["name"], "examples": len(labels), "seq_len": seq if seq == "real" else MAX_SEQ,
                     "accuracy": float((logits[v["name"]].argmax(-1) == labels).mean())})
        log(f"{v['name']}: accuracy {rows[-1]['accuracy']:.4f} ({result['runtime']}, "
            f"{'static' if result['static_shape'] else 'dynamic'} shape)")
    base = logits.get(BASELINE)
    for row in rows:
        mine = logits[row["variant"]]
        row["agreement"] = None if base is None else float((mine.argmax(-1) == base.argmax(-1)).mean())
        row["max_abs_logit_diff"] = None if base is None else float(np.abs(mine - base).max())
    return rows


def time_all(variants: list[dict], inputs: Path, args: argparse.Namespace, skipped: list[dict],
             failed: list[dict]) -> list[dict]:
    """Interleaved rounds: every (file, length) once per round, each in a fresh process."""
    samples: dict[tuple[str, int | str], list[float]] = {}
    per_round: dict[tuple[str, int | str], list[float]] = {}
    first: dict[tuple[str, int | str], list[tuple[float, float]]] = {}
    configs: list[tuple[dict, int | str]] = []
    for seq in (MAX_SEQ, "real"):
        for v in variants:
            if seq == "real" and v["static_shape"]:
                skipped.append({"variant": v["name"], "seq_len": "real",
                                "reason": "static [1,128] input shape: every text is padded to 128"})
                continue
            configs.append((v, seq))
    broken: set[tuple[str, int | str]] = set()
    for r in range(args.rounds):
        order = configs if r % 2 == 0 else list(reversed(configs))
        log(f"round {r + 1}/{args.rounds}: {len(order)} configurations")
        for v, seq in order:
            key = (v["name"], seq)
            if key in broken:
                continue
            result = run_worker(Path(v["python"]), ["--model", v["file"], "--inputs", str(inputs), "--mode", "time",
                                                    "--threads", str(args.threads), "--seq-len", str(seq),
                                                    "--runs", str(args.runs), "--warmup", str(args.warmup)])
            if not result.get("ok"):
                broken.add(key)
                failed.append({"variant": v["name"], "stage": f"time seq {seq}", "error": result.get("error", "?")})
                continue
            samples.setdefault(key, []).extend(result["samples_ms"])
            per_round.setdefault(key, []).append(float(np.median(result["samples_ms"])))
            first.setdefault(key, []).append((result["init_ms"], result["first_inference_ms"]))
    results = []
    for (name, seq), values in samples.items():
        if (name, seq) in broken:
            continue
        results.append({"variant": name, "seq_len": seq, "threads": args.threads, "latency_ms": latency_summary(values),
                        "round_medians_ms": per_round[(name, seq)],
                        "init_ms": float(np.median([f[0] for f in first[(name, seq)]])),
                        "first_inference_ms": float(np.median([f[1] for f in first[(name, seq)]])),
                        "ratio_vs_baseline": None})
    for row in results:
        base = next((b for b in results if b["variant"] == BASELINE and b["seq_len"] == row["seq_len"]), None)
        if base:
            row["ratio_vs_baseline"] = row["latency_ms"]["median"] / base["latency_ms"]["median"]
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    from albert_edge.bench_latency.machine import describe_machine, load_average
    from albert_edge.bench_latency.peers import (
        PEERS_SCHEMA_VERSION,
        PEERS_TOOL,
        validate_peers,
    )

    if args.setup:
        subprocess.run(["bash", str(HERE / "peers_setup.sh")], check=True, stdout=sys.stderr)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    machine = describe_machine()
    failed: list[dict] = []
    skipped: list[dict] = []
    variants = collect_variants(args, out, Path(args.peers_dir), failed)
    inputs, labels = tokenize_eval(args.eval, out, args.limit)
    log(f"evaluating {len(variants)} files on {len(labels)} texts")
    accuracy = evaluate(variants, inputs, labels, out, args.threads, failed)
    variants = [v for v in variants if v["runtime"] is not None]
    results = time_all(variants, inputs, args, skipped, failed)
    lengths = np.load(inputs)["lengths"]
    document = {
        "tool": PEERS_TOOL, "schema_version": PEERS_SCHEMA_VERSION,
        "created_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "machine": machine,
        "settings": {"threads": args.threads, "rounds": args.rounds, "runs": args.runs, "warmup": args.warmup,
                     "seq_lens": [MAX_SEQ, "real"], "eval": args.eval, "examples": len(labels),
                     "real_lengths": {"min": int(lengths.min()), "median": float(np.median(lengths)),
                                      "max": int(lengths.max())},
                     "baseline": BASELINE, "load_average_end": load_average(),
                     "command": " ".join(["python -m benchmarks.suites.peers", *(sys.argv[1:] if argv is None else argv)])},
        "checkpoint": {"path": str(out / "hf"),
                       "note": "the shipped sample (brightmart ALBERT-Tiny, fine-tuned) written as Hugging Face "
                               "ALBERT by albert_edge.model.write_hf_checkpoint after folding its embedding "
                               "projection into the word table (albert_edge.model.fold): same function, a "
                               "[21128, 312] word table instead of [21128, 128] + [128, 312], so every file "
                               "here is larger than the shipped sample's."},
        "variants": [{k: v[k] for k in v if k != "python"} for v in variants],
        "results": results, "accuracy": accuracy, "skipped": skipped, "failed": failed,
    }
    validate_peers(document, "peers.py output")
    text = json.dumps(document, indent=1) + "\n"
    (out / "peers.json").write_text(text, encoding="utf-8")
    sys.stdout.write(text)
    log(f"wrote {out / 'peers.json'}; fold it into a bench report with: "
        f"albert-edge bench --import-peers {out / 'peers.json'} --out DIR")
    return 0


if __name__ == "__main__":
    sys.exit(main())
