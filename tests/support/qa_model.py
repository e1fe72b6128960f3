"""The question-answering test model: a tiny BertForQuestionAnswering trained from scratch on the
questions of tests/support/qa_data.py, cached under ~/.cache/albert-edge/qa-test-model/<hash of data
and recipe> (a lock serialises parallel builders), and the files it is judged on.

Shared by tests/test_runtime_question_answerer.py, the Android QA fixtures
(tests/support/android_fixtures.py) and benchmarks/records/qa_variants.py, so all three use one model.
Needs torch and transformers: test modules ``importorskip`` them before importing this.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest

from albert_edge.tokenizer import WordPieceTokenizer
from tests.support.qa_data import training_set, vocab

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

MAX_SEQ_LEN = 64
RECIPE = {"hidden": 64, "layers": 2, "heads": 2, "intermediate": 128, "steps": 500, "batch": 32, "lr": 5e-3, "seed": 0}


def cache_root() -> Path:
    return Path(os.environ.get("ALBERT_EDGE_CACHE", Path.home() / ".cache" / "albert-edge"))


def _features(tok: WordPieceTokenizer) -> list[tuple[list[int], list[int], int, int]]:
    """(ids, token types, start position, end position) per training question, one window each."""
    rows = []
    for ex in training_set():
        q = tok.convert_tokens_to_ids(tok.tokenize(ex["question"]))
        tokens = tok.tokenize_with_offsets(ex["context"])
        answer = ex["answers"][0]
        s, e = answer["answer_start"], answer["answer_start"] + len(answer["text"])
        inside = [i for i, (_, a, b) in enumerate(tokens) if a < e and b > s]
        ids = [tok.cls_id, *q, tok.sep_id, *tok.convert_tokens_to_ids([t for t, _, _ in tokens]), tok.sep_id]
        if len(ids) > MAX_SEQ_LEN:
            continue  # two sentences and two fillers can exceed one window; train on whole contexts
        offset = len(q) + 2
        rows.append((ids, [0] * offset + [1] * (len(tokens) + 1), offset + inside[0], offset + inside[-1]))
    return rows


def qa_batch_loss(model, rows: list, rng: np.random.Generator, batch_size: int):
    """The span loss of one random batch of (ids, token types, start, end) rows, padded with 0.

    Shared with tests/support/android_fixtures.py, which trains the SentencePiece QA fixture the same way.
    """
    batch = [rows[i] for i in rng.choice(len(rows), batch_size, replace=False)]
    width = max(len(r[0]) for r in batch)
    ids = torch.tensor([r[0] + [0] * (width - len(r[0])) for r in batch])
    types = torch.tensor([r[1] + [0] * (width - len(r[1])) for r in batch])
    return model(input_ids=ids, attention_mask=(ids != 0).long(), token_type_ids=types,
                 start_positions=torch.tensor([r[2] for r in batch]),
                 end_positions=torch.tensor([r[3] for r in batch])).loss


def _train(target: Path) -> None:
    words = vocab()
    tok = WordPieceTokenizer(words, do_lower_case=True)
    rows = _features(tok)
    from tests.support.tiny_hf import save_with_vocab, train_steps

    torch.manual_seed(RECIPE["seed"])
    config = transformers.BertConfig(vocab_size=len(words), hidden_size=RECIPE["hidden"],
                                     num_hidden_layers=RECIPE["layers"], num_attention_heads=RECIPE["heads"],
                                     intermediate_size=RECIPE["intermediate"], max_position_embeddings=MAX_SEQ_LEN,
                                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = transformers.BertForQuestionAnswering(config)
    rng = np.random.default_rng(RECIPE["seed"])
    train_steps(model, lambda: qa_batch_loss(model, rows, rng, RECIPE["batch"]), RECIPE["steps"], RECIPE["lr"],
                one_cycle_pct=0.1)
    save_with_vocab(model, target, words)


def trained_checkpoint() -> Path:
    """The fine-tuned HF checkpoint directory, trained once per data/recipe/library version and cached."""
    key = hashlib.sha256(json.dumps({"data": training_set(), "vocab": vocab(), "recipe": RECIPE,
                                     "torch": torch.__version__, "transformers": transformers.__version__},
                                    sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]
    root = cache_root() / "qa-test-model"
    root.mkdir(parents=True, exist_ok=True)
    target = root / key
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (target / "model.safetensors").is_file():
            staging = Path(tempfile.mkdtemp(dir=root, prefix=".build-"))
            try:
                _train(staging)
                shutil.rmtree(target, ignore_errors=True)
                os.replace(staging, target)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
    return target


def model_file(out: Path, suffix: str) -> Path:
    files = sorted(out.glob(f"*{suffix}"))
    assert len(files) == 1, files
    return files[0]


def write_jsonl(path: Path, data, answers: bool = True) -> Path:
    path.write_text("\n".join(json.dumps({k: v for k, v in ex.items() if answers or k != "answers"},
                                         ensure_ascii=False) for ex in data) + "\n", encoding="utf-8")
    return path


def long_contexts(n: int = 15) -> list[dict]:
    """Held-out one-sentence questions whose sentence sits at the start, middle or end of real
    English text, several windows long. The text is the training's distractor sentences
    (tests/data/english_sentences.txt) in new orders and lengths: a model this small, trained from
    scratch, has no meaning for words it never saw, so unseen text would test its ignorance, not
    the windows."""
    from tests.support.qa_data import TRAIN_FILLER as filler
    from tests.support.qa_data import examples

    seen = {(e["question"], e["context"]) for e in training_set()}
    out = []
    for k, ex in enumerate(e for e in examples(seed=41, n=4 * n, max_sentences=1) if (e["question"], e["context"]) not in seen):
        if len(out) == n:
            break
        before = filler[(5 * k) % 20:(5 * k) % 20 + 4 * (k % 3)]
        after = filler[(3 * k) % 20:(3 * k) % 20 + 4 * (2 - k % 3)]
        head = " ".join(before) + (" " if before else "")
        context = head + ex["context"] + (" " if after else "") + " ".join(after)
        answer = ex["answers"][0]
        out.append({"question": ex["question"], "context": context,
                    "answers": [{"text": answer["text"], "answer_start": answer["answer_start"] + len(head)}]})
    return out
