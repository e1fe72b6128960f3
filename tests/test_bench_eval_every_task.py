"""``bench --eval`` runs for every task in the registry (issue #27, cause 6).

A sequence regressor's drift entries lacked the keys every report.json accuracy entry carries, so
``bench --eval`` failed its own report check for it every time; no test ran bench over every task.
Each task here is a tiny untrained transformers model (drift against itself is all that is checked),
converted and benchmarked through the CLI with the task's own eval format.
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from albert_edge.cli import main
from albert_edge.tasks import TASK_NAMES

# At least 100 ids: the bench worker draws random token ids below 100.
WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(125)]
TEXTS = ["w1 w2 w3", "w4 w5 w6 w7", "w8 w9", "w10 w11 w12 w13 w14"]


def _config(**extra):
    return transformers.BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=48, max_position_embeddings=64, **extra)


def _model(task: str):
    torch.manual_seed(0)
    if task == "sequence_classification":
        return transformers.BertForSequenceClassification(_config(num_labels=2))
    if task == "sequence_regression":
        return transformers.BertForSequenceClassification(_config(num_labels=1))
    if task == "token_classification":
        tags = {0: "O", 1: "B-PER", 2: "I-PER"}
        return transformers.BertForTokenClassification(_config(id2label=tags, label2id={v: k for k, v in tags.items()}))
    if task == "question_answering":
        return transformers.BertForQuestionAnswering(_config())
    return transformers.BertModel(_config())


def _eval_file(task: str, directory):
    if task == "sequence_classification":
        path = directory / "eval.tsv"
        path.write_text("".join(f"LABEL_{i % 2}\t{t}\n" for i, t in enumerate(TEXTS)), encoding="utf-8")
    elif task == "sequence_regression":
        path = directory / "eval.jsonl"
        path.write_text("".join(json.dumps({"text": t, "score": i / 2}) + "\n" for i, t in enumerate(TEXTS)),
                        encoding="utf-8")
    elif task == "token_classification":
        path = directory / "eval.jsonl"
        path.write_text("".join(json.dumps({"text": t, "entities": [[0, 2, "PER"]]}) + "\n" for t in TEXTS),
                        encoding="utf-8")
    elif task == "question_answering":
        path = directory / "eval.jsonl"
        path.write_text("".join(json.dumps({"question": "w1 w2", "context": t,
                                            "answers": [{"text": t[:2], "answer_start": 0}]}) + "\n" for t in TEXTS),
                        encoding="utf-8")
    else:
        path = directory / "eval.txt"
        path.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("task", TASK_NAMES)
def test_bench_eval_writes_a_report_for_every_task(task, tmp_path, capsys):
    ckpt = tmp_path / "ckpt"
    _model(task).eval().save_pretrained(str(ckpt))
    (ckpt / "vocab.txt").write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["convert", str(ckpt), "--out", str(out), "--formats", "tflite", "--max-seq-len", "32",
                 "--task", task]) == 0, capsys.readouterr().err
    [model] = out.glob("*fp32*.tflite")
    code = main(["bench", str(model), "--eval", str(_eval_file(task, tmp_path)), "--rounds", "1", "--runs", "1",
                 "--warmup", "0", "--threads", "1", "--seq-len", "16", "--out", str(tmp_path / "bench"),
                 "--no-progress"])
    assert code == 0, capsys.readouterr().err
    report = json.loads((tmp_path / "bench" / "report.json").read_text(encoding="utf-8"))
    [entry] = report["accuracy"]
    assert entry["task"] == task and entry["examples"] >= 1
    if task in ("sequence_classification", "token_classification", "question_answering"):
        # against itself nothing changes, and every judged prediction counts once in the accounting
        assert entry["near_ties"]["changed"] == 0 and entry["near_ties"]["confident_agreement"] == 1.0, entry
        assert "of them near ties" in (tmp_path / "bench" / "report.md").read_text(encoding="utf-8")
