"""Extractive question answering: a start and an end logit for every token of question + context.

Head weights (canonical): ``qa_outputs.kernel`` [H, 2], ``qa_outputs.bias`` [2] (column 0 start,
1 end), from Hugging Face ``*ForQuestionAnswering`` ``qa_outputs`` or the TF1 run_squad head
``cls/squad/output_weights`` [2, H] (``model/names.py``); no pooler (HF builds these models with
``add_pooling_layer=False``; run_squad leaves BERT's pooler unused and the graph drops it). The
signature's outputs are ``start_logits`` and ``end_logits``, each [batch, seq], as optimum's
question-answering export and the TFLite Task Library's BertQuestionAnswerer name them.
Post-processing (runtime ``QuestionAnswerer``, ``tasks.qa_spans``): question/context windows with
an overlap, the best span of at most ``max_answer_tokens`` inside the context, the answer cut from
the original context string by character offsets.

Drift (``QADrift``): per question, the variant's answer against gold answers (SQuAD exact match
and token F1, a ``.jsonl`` file: ``tasks.qa_data``) or against fp32's own answers, and span
agreement (the same token span as fp32). Plain texts without questions (the calibration file's
last quarter, a text eval file) are judged on the best span of each text and its token overlap
with fp32's. Budget: ``--max-drop`` in F1 points, ``--min-agreement`` on span agreement (Wilson
bound over questions), as for the other label tasks.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from albert_edge.errors import ConversionError
from albert_edge.tasks.base import Column, Task, TaskDrift, check_same_shape
from albert_edge.tasks.eval_format import EvalFormat, Samples
from albert_edge.tasks.metrics import (
    Budget,
    f1_and_agreement_failures,
    f1_and_agreement_hints,
    f1_and_agreement_shortfall,
    f1_and_agreement_unjudged,
    near_tie_accounting,
)
from albert_edge.tasks.qa_spans import (
    MAX_ANSWER_TOKENS,
    MAX_QUESTION_TOKENS,
    QAWindow,
    Token,
    best_span,
    encode_windows,
    exact_match,
    question_ids,
    span_margin,
    span_text,
    span_token_f1,
    token_f1,
    window_inputs,
)


@dataclass(frozen=True)
class JudgedWindow:
    """What the drift metric needs to turn one judged sample (a window) back into an answer."""

    question: int
    window: QAWindow
    context: str
    tokens: tuple[Token, ...]
    answers: tuple[str, ...]


@dataclass
class QADrift(TaskDrift):
    """Answers of a variant against the baseline's (fp32) on the same questions.

    ``agreement``: share of questions whose answer span equals the baseline's. ``exact_match`` /
    ``f1``: SQuAD EM and token F1 of the variant's answers against ``against`` ("gold", "baseline
    answers", or "baseline spans" for texts without questions); ``baseline_*`` is fp32's against
    gold (labelled only). ``f1_drop``: F1 points lost vs the baseline (unlabelled: 100 * (1 - f1)).
    ``exact_match_vs_baseline`` / ``f1_vs_baseline``: against fp32's answers, also when gold is
    given. ``flip_margins``: fp32's best minus second-best span logit (start + end) of every
    question whose span changed (near-tie accounting, ``to_dict``'s ``near_ties``).
    """

    examples: int
    agreement: float
    exact_match: float
    f1: float
    baseline_exact_match: float | None
    baseline_f1: float | None
    f1_drop: float
    against: str
    max_abs_logit: float
    mean_abs_logit: float
    exact_match_vs_baseline: float | None = None
    f1_vs_baseline: float | None = None
    flip_margins: list[float] = field(default_factory=list, repr=False)
    #: fp32's margin of every question, kept only to count the confident ones.
    margins: list[float] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["margins"]
        d["flip_margins"] = [round(m, 4) for m in self.flip_margins]
        d["near_ties"] = near_tie_accounting(self.flip_margins, self.margins)
        return d

    columns: ClassVar[tuple[Column, ...]] = (
        Column("EM", "exact_match", ".4f"), Column("F1", "f1", ".4f"), Column("drop pt", "f1_drop", ".2f"),
        Column("agree %", "agreement", ".1f", percent=True),
        Column("near-tie flips", "near_ties.near_tie_changes", "d"),
        Column("sure agree %", "near_ties.confident_agreement", ".1f", percent=True),
        Column("max|dlogit|", "max_abs_logit", ".4f"))

    def budget_failures(self, budget: Budget) -> list[str]:
        return f1_and_agreement_failures(budget, self.f1_drop, "answer", self.agreement, self.examples, "span")

    def unjudged(self, budget: Budget) -> str | None:
        return f1_and_agreement_unjudged(budget, self.f1_drop, self.agreement, self.examples, "span")

    def relax_hints(self, budget: Budget) -> list[str]:
        return f1_and_agreement_hints(budget, self.f1_drop, self.agreement, self.examples)

    def shortfall(self, budget: Budget) -> float:
        """Answer F1 points lost beyond ``max_drop`` plus the points the span agreement's lower bound
        misses ``min_agreement`` by: 53 % span agreement is far, 96.7 % is close."""
        return f1_and_agreement_shortfall(budget, self.f1_drop, self.agreement, self.examples)

    def summary(self) -> str:
        near = near_tie_accounting(self.flip_margins, self.margins)
        return (f"span agreement {100 * self.agreement:.1f}%, EM {100 * self.exact_match:.1f}, "
                f"F1 {100 * self.f1:.1f} vs {self.against}, {near['near_tie_changes']} of {near['changed']} "
                f"changed spans near ties")


class SquadJsonlFormat(EvalFormat):
    """A question answerer's labelled eval file: a SQuAD-style ``.jsonl`` (``tasks.qa_data``)."""

    def labelled_samples(self, path: Any, tokenizer: Any, max_seq_len: int, labels: tuple[str, ...] | None = None,
                         max_examples: int | None = None) -> Samples | None:
        """Every window of every question of a SQuAD-style ``.jsonl`` (``tasks.qa_data``), and per
        window a ``JudgedWindow`` (object array) that lets ``drift`` rebuild the answers."""
        from albert_edge.errors import DataError
        from albert_edge.tasks.qa_data import read_qa_jsonl

        examples = read_qa_jsonl(path)[:max_examples]
        samples, judged = [], []
        for number, ex in enumerate(examples):
            q = question_ids(tokenizer, ex.question, min(MAX_QUESTION_TOKENS, (max_seq_len - 3) // 2))
            tokens = tuple(tokenizer.tokenize_with_offsets(ex.context))
            if not q or not tokens:
                raise DataError(f"{path}:{ex.line}: the {'question' if not q else 'context'} has no tokens")
            for w in encode_windows(tokenizer, q, tokens, max_seq_len):
                samples.append(window_inputs(w))
                judged.append(JudgedWindow(number, w, ex.context, tokens, tuple(t for t, _ in ex.answers)))
        gold = np.empty(len(judged), dtype=object)
        gold[:] = judged
        return samples, gold


class QuestionAnswering(Task):
    """Start/end logits per token; the answer span is chosen by the runtime."""

    name: ClassVar[str] = "question_answering"
    pipeline_tag: ClassVar[str | None] = "question-answering"
    head_prefixes: ClassVar[tuple[str, ...]] = ("qa_outputs.",)
    required_weights: ClassVar[tuple[str, ...]] = ("qa_outputs.kernel", "qa_outputs.bias")
    eval_format: ClassVar[EvalFormat] = SquadJsonlFormat()
    # One dense layer on hidden states held to 1e-4 (fp32), like the token classifier's.
    tolerances: ClassVar[dict[str, dict[str, float]]] = {
        "fp32": {"start_logits": 1e-4, "end_logits": 1e-4, "hidden": 1e-4},
        "fp16": {"start_logits": 2e-2, "end_logits": 2e-2, "hidden": 6e-2},
    }

    def __init__(self, max_answer_tokens: int = MAX_ANSWER_TOKENS) -> None:
        self.max_answer_tokens = max_answer_tokens

    @classmethod
    def detect(cls, weights: Any) -> bool:
        return "qa_outputs.kernel" in weights.tensors

    def check_weights(self, weights: Any) -> None:
        if "qa_outputs.kernel" not in weights.tensors:
            raise ConversionError(f"{weights.source}: task {self.name} needs a span head (HF qa_outputs.weight or "
                                  "TF1 cls/squad/output_weights), the checkpoint has none")
        super().check_weights(weights)

    def outputs(self) -> tuple[str, ...]:
        return ("start_logits", "end_logits")

    def output_shapes(self, config: Any, weights: Any) -> dict[str, list[str | int]]:
        return {"start_logits": ["batch", "sequence"], "end_logits": ["batch", "sequence"]}

    def head(self, ops: Any, sequence: Any, attention_mask: Any) -> dict[str, Any]:
        """The span layer at every position, [B, S, 2], split into the start and end logits."""
        names = self.outputs()
        return dict(zip(names, ops.split(ops.token_dense(sequence, "qa_outputs"), names)))

    def parity_expected(self, reference: Any, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
        span = reference.span_logits
        return {"start_logits": span[..., 0], "end_logits": span[..., 1], "hidden": reference.last_hidden_state}

    @property
    def parity_required(self) -> tuple[str, ...]:
        return ("start_logits", "end_logits")

    def judged_values(self, outputs: Mapping[str, np.ndarray], attention_mask: np.ndarray) -> np.ndarray:
        """One row per real token: [position in its sequence, start logit, end logit]; position 0
        starts a sequence, so ``drift`` regroups rows of samples of different lengths."""
        start = np.asarray(outputs["start_logits"], dtype=np.float64)
        end = np.asarray(outputs["end_logits"], dtype=np.float64)
        rows = []
        for b in range(start.shape[0]):
            keep = np.flatnonzero(np.asarray(attention_mask[b]) > 0)
            rows.append(np.stack([keep.astype(np.float64), start[b, keep], end[b, keep]], axis=1))
        return np.concatenate(rows) if rows else np.zeros((0, 3))

    def drift(self, values: np.ndarray, baseline: np.ndarray, labels: np.ndarray | None = None) -> QADrift:
        return qa_drift(values, baseline, labels, self.max_answer_tokens)


def _sequences(values: np.ndarray) -> list[np.ndarray]:
    starts = np.flatnonzero(values[:, 0] == 0)
    return [values[a:b] for a, b in zip(starts, list(starts[1:]) + [len(values)])]


def _text_spans(blocks: Sequence[np.ndarray], max_answer_tokens: int) -> list[tuple[tuple[int, int], float]]:
    """Best span of each plain text sample ([CLS] text [SEP], every inner token a candidate) and
    its margin over the second best."""
    out = []
    for block in blocks:
        n = max(0, len(block) - 2)
        window = QAWindow(tuple(range(len(block))), (0,) * len(block), 1, 0, n, np.ones(n, dtype=bool))
        logits = [(block[:, 1], block[:, 2])]
        span = best_span(logits, [window], max_answer_tokens)
        out.append(((-1, -1) if span is None else (span.start, span.end),
                    span_margin(logits, [window], max_answer_tokens)))
    return out


def _answers(blocks: Sequence[np.ndarray], judged: Sequence[JudgedWindow],
             max_answer_tokens: int) -> list[tuple[tuple[int, int], str, float]]:
    """((start, end) token span, answer text, margin over the second-best span) per question,
    from its windows' logits."""
    by_question: dict[int, list[tuple[np.ndarray, JudgedWindow]]] = {}
    for block, j in zip(blocks, judged):
        by_question.setdefault(j.question, []).append((block, j))
    out = []
    for question in sorted(by_question):
        parts = by_question[question]
        logits = [(b[:, 1], b[:, 2]) for b, _ in parts]
        windows = [j.window for _, j in parts]
        span = best_span(logits, windows, max_answer_tokens)
        first = parts[0][1]
        text, _, _ = span_text(first.context, first.tokens, span)
        out.append(((-1, -1) if span is None else (span.start, span.end), text,
                    span_margin(logits, windows, max_answer_tokens)))
    return out


def _mean(scores: Sequence[float]) -> float:
    return float(np.mean(scores)) if len(scores) else 1.0


def qa_drift(values: np.ndarray, baseline: np.ndarray, judged: np.ndarray | None,
             max_answer_tokens: int = MAX_ANSWER_TOKENS) -> QADrift:
    """EM / F1 and span agreement of ``values`` against ``baseline`` (rows from ``judged_values``);
    ``judged`` is one ``JudgedWindow`` per sample (a ``.jsonl`` file), None for plain texts."""
    values, baseline = np.asarray(values, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    check_same_shape(values, baseline, ("span logits", "baseline span logits"))
    blocks_v, blocks_b = _sequences(values), _sequences(baseline)
    delta = np.abs(values[:, 1:] - baseline[:, 1:])
    base_em = base_f1 = None
    if judged is None:
        spans_v, spans_b = _text_spans(blocks_v, max_answer_tokens), _text_spans(blocks_b, max_answer_tokens)
        em = em_fp32 = [float(a[0] == b[0]) for a, b in zip(spans_v, spans_b)]
        f1 = f1_fp32 = [span_token_f1(a[0], b[0]) for a, b in zip(spans_v, spans_b)]
        agree, against = em, "baseline spans"
        drop = 100.0 * (1.0 - float(np.mean(f1))) if f1 else 0.0
        margins = [b[1] for b in spans_b]
    else:
        if len(judged) != len(blocks_v):
            raise ValueError(f"{len(judged)} judged windows for {len(blocks_v)} samples")
        answers_v = _answers(blocks_v, judged, max_answer_tokens)
        answers_b = _answers(blocks_b, judged, max_answer_tokens)
        golds = {j.question: j.answers for j in judged}
        agree = [float(a[0] == b[0]) for a, b in zip(answers_v, answers_b)]
        em = em_fp32 = [exact_match(a[1], [b[1]]) for a, b in zip(answers_v, answers_b)]
        f1 = f1_fp32 = [token_f1(a[1], [b[1]]) for a, b in zip(answers_v, answers_b)]
        margins = [b[2] for b in answers_b]
        if all(golds.values()):
            gold = [golds[q] for q in sorted(golds)]
            em = [exact_match(a[1], g) for a, g in zip(answers_v, gold)]
            f1 = [token_f1(a[1], g) for a, g in zip(answers_v, gold)]
            base_em = float(np.mean([exact_match(b[1], g) for b, g in zip(answers_b, gold)]))
            base_f1 = float(np.mean([token_f1(b[1], g) for b, g in zip(answers_b, gold)]))
            against = "gold"
            drop = 100.0 * (base_f1 - float(np.mean(f1)))
        else:
            against = "baseline answers"
            drop = 100.0 * (1.0 - float(np.mean(f1))) if f1 else 0.0
    flips = [m for m, a in zip(margins, agree) if not a]
    return QADrift(len(agree), _mean(agree), _mean(em), _mean(f1), base_em, base_f1, drop, against,
                   float(delta.max()) if delta.size else 0.0, float(delta.mean()) if delta.size else 0.0,
                   _mean(em_fp32), _mean(f1_fp32), flips, margins)
