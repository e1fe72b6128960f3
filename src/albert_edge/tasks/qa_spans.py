"""Extractive QA around the model: question/context windows, the best span, and EM / F1.

Shared by the runtime ``QuestionAnswerer`` and the quantize/bench drift metric, so a variant is
judged on exactly the answers an app would get.

**Windows.** A sequence is ``[CLS] question [SEP] context-window [SEP]`` (token types 0 for the
question part, 1 for the context and its [SEP], as BERT's run_squad and Hugging Face build it).
The question keeps its first ``max_question_tokens`` tokens (run_squad's ``max_query_length``,
64); the context runs in windows of ``max_seq_len - 3 - question`` tokens, consecutive windows
sharing ``stride`` tokens (the overlap, as Hugging Face's ``doc_stride``; the token classifier's
``stride`` means the same). Within a window a span may only *start* at a token for which that
window is its most central one (run_squad's ``_check_is_max_context``), so a span is never counted
twice from two overlapping windows.

**Best span.** Over all windows, the span (start <= end, both in the context, at most
``max_answer_tokens`` tokens: run_squad's ``max_answer_length``, 30) with the largest
``start_logit + end_logit``, which run_squad compares across windows. Its score is
``p_start * p_end`` with each softmax over the context tokens of its own window only (in [0, 1]).
That is not the Hugging Face pipeline's formula: its softmax also keeps [CLS] unmasked (for
unanswerable questions) and it compares windows by that score, not by the summed logits, so the
two scores differ for the same logits and need not pick the same window.

**Metrics.** SQuAD v1.1's ``normalize_answer`` (lower case, punctuation and English articles
removed, whitespace collapsed) and its exact match and bag-of-tokens F1, max over gold answers;
CJK ideographs count as one token each (the CMRC2018 evaluation segments Chinese that way), so
Chinese answers get a meaningful F1 too.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: run_squad's defaults (``max_query_length``, ``max_answer_length``).
MAX_QUESTION_TOKENS = 64
MAX_ANSWER_TOKENS = 30
#: Default overlap of consecutive context windows, at most half a window.
MAX_STRIDE = 128

Token = tuple[str, int, int]


@dataclass(frozen=True)
class QAWindow:
    """One model input: ``[CLS] q [SEP] context[first:first + length] [SEP]``.

    ``offset`` is the sequence position of context token ``first``; ``max_context`` [length] says
    which of this window's context tokens are most central here (where a span may start).
    """

    input_ids: tuple[int, ...]
    token_type_ids: tuple[int, ...]
    offset: int
    first: int
    length: int
    max_context: np.ndarray


@dataclass(frozen=True)
class Span:
    """A span of context tokens [start, end] (inclusive) found in window ``window``."""

    start: int
    end: int
    logit: float
    score: float
    window: int


def window_starts(n: int, window: int, stride: int) -> list[int]:
    """Token index where each window starts: step ``window - stride``, the last one ends at ``n``.

    The one window cutter of both span tasks: QA's context windows and the token classifier's
    (``runtime.token_classifier`` imports it; the Java twins are ``QaSpans``/``TokenWindows``).
    """
    if n <= window:
        return [0]
    step = window - stride
    starts = list(range(0, n - window, step))
    starts.append(n - window)
    return starts


def max_context_masks(n: int, starts: Sequence[int], window: int) -> list[np.ndarray]:
    """Per window, which of its tokens sit in it farthest from an edge (ties: the earlier window).

    run_squad's score is ``min(left, right) + 0.01 * length``; with equal-length windows that is
    the smaller margin, the rule the token classifier uses to merge windows too.
    """
    best = np.full(n, -1)
    owner = np.zeros(n, dtype=np.int64)
    for k, start in enumerate(starts):
        length = min(window, n - start)
        local = np.arange(length)
        margin = np.minimum(local, length - 1 - local)
        idx = start + local
        take = margin > best[idx]
        best[idx[take]] = margin[take]
        owner[idx[take]] = k
    return [owner[start:start + min(window, n - start)] == k for k, start in enumerate(starts)]


def question_ids(tokenizer, question: str, max_question_tokens: int) -> list[int]:
    """The question's token ids, its first ``max_question_tokens`` kept."""
    return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(question)[:max_question_tokens])


def encode_windows(tokenizer, question: Sequence[int], context: Sequence[Token], max_seq_len: int,
                   stride: int | None = None) -> list[QAWindow]:
    """The model inputs for question ids ``question`` and the context's ``(token, start, end)`` list.

    ``stride`` None: half a window, at most ``MAX_STRIDE``. A context without tokens gives one
    window of length 0 (the runtime then answers nothing).
    """
    middle = [tokenizer.sep_id] * (getattr(tokenizer, "pair_separators", 1) - 1)  # XLM-R: q </s></s> context
    window = max_seq_len - 3 - len(middle) - len(question)
    if window < 1:
        raise ValueError(f"max_seq_len {max_seq_len} leaves no room for context after a "
                         f"{len(question)}-token question")
    overlap = min(window // 2, MAX_STRIDE) if stride is None else min(stride, window - 1)
    ids = tokenizer.convert_tokens_to_ids([t for t, _, _ in context])
    starts = window_starts(len(ids), window, overlap)
    masks = max_context_masks(len(ids), starts, window)
    head = [tokenizer.cls_id, *question, tokenizer.sep_id, *middle]
    out = []
    for start, mask in zip(starts, masks):
        part = ids[start:start + window]
        seq = (*head, *part, tokenizer.sep_id)
        types = (0,) * len(head) + (getattr(tokenizer, "pair_type_id", 1),) * (len(part) + 1)
        out.append(QAWindow(seq, types, len(head), start, len(part), mask))
    return out


def window_inputs(w: QAWindow) -> dict[str, np.ndarray]:
    """int32 [1, len] model inputs of one window (run at its real length, no padding)."""
    row = np.asarray([w.input_ids], np.int32)
    return {"input_ids": row, "attention_mask": np.ones_like(row),
            "token_type_ids": np.asarray([w.token_type_ids], np.int32)}


def _log_softmax(x: np.ndarray) -> np.ndarray:
    z = x - x.max()
    return z - np.log(np.exp(z).sum())


def _span_totals(start_logits: np.ndarray, end_logits: np.ndarray, w: QAWindow,
                 max_answer_tokens: int) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(start logits, end logits, [length, length] start + end logit of every allowed span, -inf
    elsewhere) of one window's context; None when it allows no span."""
    if w.length == 0:
        return None
    ctx = slice(w.offset, w.offset + w.length)
    s = np.asarray(start_logits, np.float64)[ctx]
    e = np.asarray(end_logits, np.float64)[ctx]
    i, j = np.indices((w.length, w.length))
    valid = (j >= i) & (j - i < max_answer_tokens) & w.max_context[:, None]
    if not valid.any():
        return None
    return s, e, np.where(valid, s[:, None] + e[None, :], -np.inf)


def best_in_window(start_logits: np.ndarray, end_logits: np.ndarray, w: QAWindow, index: int,
                   max_answer_tokens: int) -> Span | None:
    """The best span of one window from its [seq] start/end logits; None without context tokens.

    Its ``score`` is ``p_start * p_end`` with each softmax taken over this window's context
    tokens only ([CLS], the question and the [SEP]s excluded); Hugging Face's pipeline keeps [CLS]
    in its softmax, so this is a score to threshold this model's answers, in [0, 1], not a number
    comparable with the pipeline's.
    """
    totals = _span_totals(start_logits, end_logits, w, max_answer_tokens)
    if totals is None:
        return None
    s, e, total = totals
    a, b = np.unravel_index(int(np.argmax(total)), total.shape)
    score = float(np.exp(_log_softmax(s)[a] + _log_softmax(e)[b]))
    return Span(w.first + int(a), w.first + int(b), float(total[a, b]), score, index)


def best_span(window_logits: Sequence[tuple[np.ndarray, np.ndarray]], windows: Sequence[QAWindow],
              max_answer_tokens: int = MAX_ANSWER_TOKENS) -> Span | None:
    """The span with the largest start + end logit over all windows (earliest on ties)."""
    best = None
    for k, ((s, e), w) in enumerate(zip(window_logits, windows)):
        span = best_in_window(s, e, w, k, max_answer_tokens)
        if span is not None and (best is None or span.logit > best.logit):
            best = span
    return best


def span_margin(window_logits: Sequence[tuple[np.ndarray, np.ndarray]], windows: Sequence[QAWindow],
                max_answer_tokens: int = MAX_ANSWER_TOKENS) -> float:
    """Best minus second-best start + end logit over every allowed span of every window: how sure
    the model is of its answer (inf with a single candidate). A quantized model that changes an
    answer whose margin was a hair is breaking a near tie, not the model."""
    totals = [t[2][np.isfinite(t[2])] for (s, e), w in zip(window_logits, windows)
              if (t := _span_totals(s, e, w, max_answer_tokens)) is not None]
    flat = np.concatenate(totals) if totals else np.zeros(0)
    if len(flat) < 2:
        return float("inf")
    top2 = np.partition(flat, len(flat) - 2)[-2:]
    return float(top2.max() - top2.min())


def span_text(context: str, tokens: Sequence[Token], span: Span | None) -> tuple[str, int, int]:
    """(answer, start, end): the characters of ``context`` the span's tokens cover, as typed."""
    if span is None:
        return "", 0, 0
    start, end = tokens[span.start][1], tokens[span.end][2]
    return context[start:end], start, end


# ---------------------------------------------------------------------------------------- metrics
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CJK = re.compile("([\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f])")


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's normalisation: lower case, no punctuation (any Unicode P*), no a/an/the, one space."""
    text = "".join(" " if unicodedata.category(ch).startswith("P") else ch for ch in text.lower())
    return " ".join(_ARTICLES.sub(" ", text).split())


def answer_tokens(text: str) -> list[str]:
    """Normalised tokens: whitespace words, each CJK ideograph on its own."""
    return _CJK.sub(r" \1 ", normalize_answer(text)).split()


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 when the normalised prediction equals a normalised gold answer."""
    return float(any(normalize_answer(prediction) == normalize_answer(g) for g in golds))


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """SQuAD's bag-of-tokens F1, the best over ``golds``."""
    pred = answer_tokens(prediction)
    best = 0.0
    for gold in golds:
        ref = answer_tokens(gold)
        if not pred or not ref:
            best = max(best, float(pred == ref))
            continue
        common = sum((Counter(pred) & Counter(ref)).values())
        if common:
            p, r = common / len(pred), common / len(ref)
            best = max(best, 2 * p * r / (p + r))
    return best


def span_token_f1(a: tuple[int, int], b: tuple[int, int]) -> float:
    """F1 of two inclusive token spans' overlap (the metric when there is no text to compare)."""
    common = max(0, min(a[1], b[1]) - max(a[0], b[0]) + 1)
    if not common:
        return 0.0
    p, r = common / (a[1] - a[0] + 1), common / (b[1] - b[0] + 1)
    return 2 * p * r / (p + r)
