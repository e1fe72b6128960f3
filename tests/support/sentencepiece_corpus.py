"""The SentencePiece test material: the sentences a tiny unigram model is trained on, the tokenizer
corpus texts, ALBERT's id layout for a trained model, and Hugging Face's AlbertTokenizer as a judge.

Shared by the SentencePiece tokenizer, offsets and token-classifier tests and the Android fixtures
(tests/support/android_fixtures.py), so every tiny SentencePiece model is trained on the same text.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

model_pb2 = pytest.importorskip("sentencepiece.sentencepiece_model_pb2")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "data" / "tokenizer_corpus.jsonl"

ENGLISH = [
    "The quick brown fox jumps over the lazy dog.",
    "ALBERT shares one set of weights across all of its layers.",
    "She said ``hello'' and then ''goodbye'' to everyone.",
    "We paid 1,250 dollars on day 12, then 3, 4, and 5,000 more.",
    "In 2019, 18,000 people attended; by 2020, 21,500 did.",
    "Résumé, naïve café, Zoë and Ångström façade.",
    "  Extra   spaces\tand\ttabs\nand newlines  ",
    "Numbers 3.14, 2,71 and 1,2,3,4 in a row.",
    "don't can't won't it's we're they've",
    "Emoji 😂 and symbols © ® ™ ½ ① ﬁ ＡＢＣ",
]


def digit_sentences() -> list[str]:
    """Numbers with thousands separators, so the trained model learns pieces like "▁12," and "9,"."""
    return [f"on day {d}, we counted {d * 37 % 1000},{d * 91 % 1000:03d},{d * 7 % 1000:03d} items, then {d % 10}, {d % 7}, done {d},"
            for d in range(1, 400)]


def training_sentences() -> list[str]:
    return ENGLISH * 30 + digit_sentences() + [json.loads(line)["a"] for line in CORPUS.read_text("utf-8").split("\n") if line] * 5


def albert_layout(proto_bytes: bytes) -> bytes:
    """Reorder a real model's pieces into ALBERT's layout: <pad> <unk> [CLS] [SEP] [MASK], then the rest.

    Segmentation depends on the scores only, so the model tokenizes exactly as before;
    the ids move. Hugging Face's AlbertTokenizer assumes <unk> is id 1, as in ALBERT.
    """
    m = model_pb2.ModelProto()
    m.ParseFromString(proto_bytes)
    kind = model_pb2.ModelProto.SentencePiece
    old = list(m.pieces)
    unk = old[m.trainer_spec.unk_id]
    head = []
    for name, ptype in (("<pad>", kind.CONTROL), (unk.piece, kind.UNKNOWN), ("[CLS]", kind.CONTROL),
                        ("[SEP]", kind.CONTROL), ("[MASK]", kind.CONTROL)):
        piece = kind()
        piece.piece, piece.score, piece.type = name, 0.0, ptype
        head.append(piece)
    rest = [p for p in old if p.piece not in {h.piece for h in head}]
    del m.pieces[:]
    m.pieces.extend(head + rest)
    names = [p.piece for p in m.pieces]
    m.trainer_spec.pad_id, m.trainer_spec.unk_id = 0, 1
    m.trainer_spec.bos_id = names.index("<s>") if "<s>" in names else -1
    m.trainer_spec.eos_id = names.index("</s>") if "</s>" in names else -1
    return m.SerializeToString()


def hf_albert(model: bytes, tmp: Path, do_lower_case: bool = True):
    transformers = pytest.importorskip("transformers")
    (tmp / "spiece.model").write_bytes(model)
    return transformers.AlbertTokenizer.from_pretrained(str(tmp), do_lower_case=do_lower_case, split_special_tokens=True)


def corpus_texts() -> list[str]:
    rows = [json.loads(line) for line in CORPUS.read_text("utf-8").split("\n") if line]
    return ENGLISH + [r["a"] for r in rows] + [r["b"] for r in rows if r["b"] is not None]
