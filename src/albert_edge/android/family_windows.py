"""Golden files for albert-core's NER and QA windows under RoBERTa's and XLM-R's ``<s>`` template (#40).

RoBERTa (byte-level BPE) and XLM-R (SentencePiece in fairseq's id layout) models take
``<s> text </s>`` and, for QA, ``<s> question </s></s> context </s>`` with token type 0 throughout,
where BERT takes ``[CLS] question [SEP] context [SEP]`` with types 0 then 1. albert-core's
``EntityExtractor`` and ``QuestionAnswerer`` must cut the same windows, build the same rows, merge and
decode the same way, and map tokens back to the same characters as Python's runtime for these two
tokenizers. These files judge that, without committing a model: the window logits are seeded noise
(multiples of 1/8, so JSON carries them exactly and briefly; QA contexts get a planted answer), and everything
else comes from the code the Python runtime runs:

* NER records are ``android.ner.ner_record``'s (the format of ``golden_ner.jsonl``: tokens with
  offsets, window starts, window logits, tags, entities through ``TokenClassifier.entities``), plus
  ``window_input_ids``, the ``<s> ... </s>`` rows the runtime's window builder fed;
* QA records are ``android.qa.qa_model_record``'s (the format of ``golden_qa.jsonl``: question ids,
  context tokens, windows with input ids, token types and max-context masks, logits, span, answer)
  with the windows from ``tasks.qa_spans.encode_windows``, which reads the template
  (``pair_separators``, ``pair_type_id``) from the tokenizer as the runtime's ``QuestionAnswerer`` does.

The tokenizers are the committed members ``bpe.json`` and ``xlmr_spiece.model``
(``tests/support/family_goldens_resources.py``); settings are small (``max_seq_len`` 12 to 40) so
that short texts already span several windows and the files stay small. Regenerate with
``python -m albert_edge.android.family_windows`` (tests/test_android_family_windows.py checks the
committed files equal a fresh rendering; ``TemplateWindowsGoldenTest`` replays them on the JVM).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from albert_edge.android.golden_inputs import render_jsonl
from albert_edge.outputs.atomic import write_bytes_atomic
from albert_edge.tasks.qa_spans import MAX_ANSWER_TOKENS, MAX_QUESTION_TOKENS, encode_windows, question_ids
from albert_edge.tokenizer import load_tokenizer

RESOURCES = Path(__file__).resolve().parents[3] / "android_demo" / "albert-core" / "src" / "test" / "resources"
#: tokenizer member -> (pack tokenizer.type, golden file)
GOLDEN_FILES: dict[str, tuple[str, str]] = {
    "bpe.json": ("bytelevel_bpe", "golden_bpe_windows.jsonl"),
    "xlmr_spiece.model": ("sentencepiece", "golden_xlmr_windows.jsonl"),
}
LABELS = ("O", "B-PER", "I-PER", "B-LOC", "I-LOC")
_SEED = 20261205

#: Texts (NER) and contexts (QA): short and long, spaces where byte-level BPE folds them into the next
#: token (leading, doubled, trailing), astral characters before an answer, CJK, and an empty text.
TEXTS: tuple[str, ...] = (
    "Alice lives in Paris.",
    "  the quick brown fox jumps over the lazy dog  ",
    "Paris and Berlin are cities; Alice lives in Paris. She said hello and then goodbye to everyone.",
    "numbers like 12 and 3.14 appear in the text, and good films make people happy.",
    "😀 emoji 👍🏽 before Berlin, 中文 words, 𝐀𝐁 letters and Paris at the end",
    "phones run small encoders with a packed tokenizer; a small model reads every word of the text",
    "the weather was cold but the coffee was warm " * 2,
    "",
)
QUESTIONS: tuple[str, ...] = (
    "Where does Alice live?",
    "What jumps over the lazy dog?",
    "Which cities are named, and who said hello to everyone in the end?",
    "What appears?",
)
#: (max_seq_len, stride) of the NER windows; None is the runtime's default stride.
NER_SETTINGS: tuple[tuple[int, int | None], ...] = ((16, None), (24, 3), (12, 0))
#: (max_seq_len, stride, max_answer_tokens) of the QA windows (the question cap is the runtime's default).
QA_SETTINGS: tuple[tuple[int, int | None, int], ...] = ((24, None, MAX_ANSWER_TOKENS), (32, 4, 5), (20, 2, 3))


def _noise(rng: random.Random, n: int) -> list[float]:
    """Seeded logits that JSON and float32 both hold exactly (multiples of 1/8 in [-6, 6]; ties happen, and
    both sides must break them alike: the first label, the earliest span)."""
    return [rng.randint(-48, 48) / 8 for _ in range(n)]


class _SeededNer:
    """Stands in for ``ner._WindowModel``: seeded [len, labels] logits per row, and the rows it was fed."""

    def __init__(self, rng: random.Random, max_seq_len: int) -> None:
        from types import SimpleNamespace

        self.pack = SimpleNamespace(labels=LABELS, max_seq_len=max_seq_len)
        self.rng = rng
        self.rows: list[list[int]] = []

    def run(self, ids: Sequence[int]) -> np.ndarray:
        self.rows.append([int(i) for i in ids])
        return np.asarray([_noise(self.rng, len(LABELS)) for _ in ids], np.float32)


class _SeededQa:
    """Stands in for the runtime ``QuestionAnswerer`` and its interpreter in ``qa.qa_model_record``: its
    settings and ``windows`` (question ids, context tokens, ``encode_windows``, as the runtime's), and
    seeded start/end logits with a planted answer a few tokens long."""

    def __init__(self, tokenizer: Any, rng: random.Random, max_seq_len: int, stride: int | None,
                 max_answer_tokens: int) -> None:
        self.tokenizer, self.rng = tokenizer, rng
        self.max_seq_len, self.stride, self.max_answer_tokens = max_seq_len, stride, max_answer_tokens
        self.max_question_tokens = min(MAX_QUESTION_TOKENS, (max_seq_len - 3) // 2)  # the runtime's default cap
        self.plant = -1

    def windows(self, question: str, context: str) -> tuple[list[tuple[str, int, int]], list[Any]]:
        q = question_ids(self.tokenizer, question, self.max_question_tokens)
        tokens = self.tokenizer.tokenize_with_offsets(context)
        self.plant = self.rng.randrange(len(tokens)) if tokens else -1
        return tokens, encode_windows(self.tokenizer, q, tokens, self.max_seq_len, self.stride)

    def run(self, w: Any) -> tuple[list[float], list[float]]:
        start, end = _noise(self.rng, len(w.input_ids)), _noise(self.rng, len(w.input_ids))
        if w.first <= self.plant < w.first + w.length:  # a clear answer, so spans are not all noise
            start[w.offset + self.plant - w.first] += 8.0
            last = min(self.plant + 2, w.first + w.length - 1)
            end[w.offset + last - w.first] += 8.0
        return start, end


def window_records(tokenizer: Any) -> list[dict[str, Any]]:
    """NER records (every text at each NER setting) then QA records (each context with a question, at
    each QA setting), each tagged ``task``; the same seed gives the same file."""
    from albert_edge.android.ner import ner_record
    from albert_edge.android.qa import qa_model_record

    rng = random.Random(_SEED)
    out: list[dict[str, Any]] = []
    for max_seq_len, stride in NER_SETTINGS:
        for text in TEXTS:
            model = _SeededNer(rng, max_seq_len)
            record = ner_record(model, tokenizer, text, stride)  # type: ignore[arg-type]
            out.append({"task": "ner", **record, "window_input_ids": model.rows})
    for k, (max_seq_len, stride, max_answer) in enumerate(QA_SETTINGS):
        for i, context in enumerate(TEXTS):
            runtime = _SeededQa(tokenizer, rng, max_seq_len, stride, max_answer)
            question = QUESTIONS[(i + k) % len(QUESTIONS)]
            out.append({"task": "qa", **qa_model_record(runtime, runtime, question, context)})  # type: ignore[arg-type]
    return out


def render(member: str, asset: bytes) -> bytes:
    """The golden JSONL for the committed tokenizer ``member`` (a key of ``GOLDEN_FILES``)."""
    kind, _ = GOLDEN_FILES[member]
    tokenizer = load_tokenizer(kind, asset, False, member)
    return render_jsonl(window_records(tokenizer)).encode("utf-8")


def write_window_goldens(resources: str | Path = RESOURCES) -> list[Path]:
    """Rewrite both golden files from the committed tokenizer members in ``resources``."""
    out = Path(resources)
    return [write_bytes_atomic(out / golden, render(member, (out / member).read_bytes()))
            for member, (_, golden) in GOLDEN_FILES.items()]


if __name__ == "__main__":
    for path in write_window_goldens():
        print(path)
