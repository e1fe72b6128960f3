"""MobileBERT at its real size through convert and ``quantize --mode dynamic`` (issue #40). Prints one JSON object.

The tests convert a tenth-width MobileBERT; this builds transformers' default ``MobileBertConfig`` (24 layers,
H 512, bottleneck 128, 4 stacked FFNs, 3-gram embedding E 128, NoNorm) as a random-init
``MobileBertForSequenceClassification`` with ``classifier_activation`` false (google/mobilebert-uncased's
setting; every NoNorm moved off 1 / 0 so it stays in the graph) and a 30,522-entry WordPiece vocab (nothing is downloaded: trained weights are not needed for sizes,
op counts, parity or timings), then runs as a user would:

1. ``albert-edge convert CKPT --labels neg,pos --max-seq-len 128``: file sizes, op census, parity (report);
2. transformers' probabilities against the fp32 .tflite and .onnx on a few texts (``TextClassifier``);
3. ``albert-edge quantize CKPT --mode dynamic --calib calib.txt``: the int8 variants' sizes and verdicts.

    python -m benchmarks.records.mobilebert_full_size [--out /tmp/mobilebert_full]

Decision: benchmarks/decisions/0210-mobilebert-on-the-skeleton.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

WORDS = ("the quick brown fox jumps over lazy dog a small model reads every word of text phones run encoders "
         "with packed tokenizer good films make people happy and bad do not weather was cold but coffee warm").split()
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB_SIZE = 30522


def build_checkpoint(folder: Path):
    """(model, tokenizer): the full-size random MobileBERT classifier and its vocab, saved in ``folder``."""
    import torch
    import transformers

    folder.mkdir(parents=True, exist_ok=True)
    words = sorted(set(WORDS))
    vocab = SPECIALS + words + [f"[unused{i}]" for i in range(VOCAB_SIZE - len(SPECIALS) - len(words))]
    (folder / "vocab.txt").write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    tokenizer = transformers.MobileBertTokenizer(vocab={t: i for i, t in enumerate(vocab)}, do_lower_case=True)
    tokenizer.save_pretrained(str(folder))
    torch.manual_seed(0)
    config = transformers.MobileBertConfig(num_labels=2, classifier_activation=False)
    model = transformers.MobileBertForSequenceClassification(config).eval()
    with torch.no_grad():  # init leaves every NoNorm at 1 / 0, which the converter folds away: move them, as training does
        for name, p in model.named_parameters():
            if "LayerNorm" in name:
                p.add_(0.1 * torch.randn_like(p))
    model.save_pretrained(str(folder))
    return model, tokenizer


def cli(*args: str) -> float:
    """Run one albert-edge command; its wall time in seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "albert_edge", *args, "--no-progress"], check=True,
                   stdout=subprocess.DEVNULL)
    return round(time.perf_counter() - start, 1)


def agreement_with_transformers(model, tokenizer, out: Path, texts: list[str]) -> dict:
    """Max |probability difference| of each fp32 file against transformers' forward on ``texts``."""
    import torch

    from albert_edge.runtime import TextClassifier

    result = {}
    for suffix in ("tflite", "onnx"):
        runtime = TextClassifier.from_file(out / f"model_fp32.{suffix}", num_threads=2)
        worst = 0.0
        for text in texts:
            enc = tokenizer(text, return_tensors="pt")
            with torch.no_grad():
                theirs = torch.softmax(model(**enc).logits, -1).numpy()[0]
            got = runtime.predict(text)
            worst = max(worst, float(np.max(np.abs(np.array([got.scores[k] for k in ("neg", "pos")]) - theirs))))
        result[suffix] = worst
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/mobilebert_full"))
    args = parser.parse_args()
    ckpt, converted, quantized = args.out / "ckpt", args.out / "convert", args.out / "quantize"
    model, tokenizer = build_checkpoint(ckpt)
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 20)))) for _ in range(120)]
    (args.out / "calib.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    record: dict = {"load": os.getloadavg(), "cpus": os.cpu_count(),
                    "parameters_m": round(sum(p.numel() for p in model.parameters()) / 1e6, 2)}
    record["convert_s"] = cli("convert", str(ckpt), "--out", str(converted), "--labels", "neg,pos",
                              "--max-seq-len", "128")
    report = json.loads((converted / "conversion_report.json").read_text(encoding="utf-8"))
    record["convert"] = {f["file"] if "file" in f else f.get("path"): {k: f[k] for k in f if k != "path"}
                         for f in report["files"]}
    record["max_probability_diff_vs_transformers"] = agreement_with_transformers(model, tokenizer, converted, texts[:8])
    record["quantize_s"] = cli("quantize", str(ckpt), "--out", str(quantized), "--mode", "dynamic", "--calib",
                               str(args.out / "calib.txt"), "--labels", "neg,pos", "--max-seq-len", "128",
                               "--min-agreement", "0.9", "--max-drop", "100", "--rounds", "1")
    q = json.loads((quantized / "quantize_report.json").read_text(encoding="utf-8"))
    record["quantize"] = {v["name"]: {k: v.get(k) for k in ("file", "size_mb", "not_judged", "within_budget", "drift")}
                          for v in q["variants"]}
    record["load_after"] = os.getloadavg()
    print(json.dumps(record, indent=1, default=str))


if __name__ == "__main__":
    main()
