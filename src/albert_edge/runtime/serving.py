"""``albert-edge predict``'s adapters: how each task's model is served, keyed by task name.

A task with a runtime class of its own (``TextClassifier`` batches by length, ``TokenClassifier``
and ``QuestionAnswerer`` slide windows over long texts) is served through it, with the predict
flags that runtime reads and, for question answering, a ``.jsonl`` input of its own. Every other
task -- any new one -- gets ``GENERIC``: the generic runtime ``TaskModel`` and the task's
``interpret``, so adding a task still needs no line here (``serving_of`` falls back to it).

Each adapter yields (JSON record, plain-text lines) per input. ``read_rows`` gives the TEXT
arguments, ``--file`` or stdin lines; ``options`` holds the command's options by ``dest``
(``threads``, ``backend``, ``file`` and the adapter's own ``flags``). The runtime classes are
imported inside the adapters: building the CLI parser reads the flags without loading them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from albert_edge.errors import DataError, TokenizerError
from albert_edge.tasks import QuestionAnswering, SequenceClassification, Task, TokenClassification
from albert_edge.tasks.qa_data import QA_JSONL_KIND
from albert_edge.tasks.qa_spans import MAX_ANSWER_TOKENS

#: One input of ``predict``: (where it came from, gold label or None, text, second text or None).
Row = tuple[str, str | None, str, str | None]
ReadRows = Callable[[], list[Row]]
Results = Iterator[tuple[dict[str, Any], list[str]]]


@dataclass(frozen=True)
class Serving:
    """How ``predict`` serves one task: the adapter, the flags it reads, its own ``.jsonl`` input."""

    predict: Callable[[Task, bytes, str, Mapping[str, Any], ReadRows], Results]
    #: ``albert-edge predict`` options this adapter reads: flag -> argparse keywords (a ``dest`` is
    #: derived from the flag; a string ``type`` names a converter in ``cli/arg_types.py``). Flags
    #: of another task's adapter are refused by predict.
    flags: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    #: What a ``.jsonl`` ``--file`` holds when the adapter reads one itself; None: no such input.
    jsonl: str | None = None


def result_lines(result: Mapping[str, Any]) -> list[str]:
    """``predict``'s plain-text lines for one ``Task.interpret`` result (``--json`` prints the result):
    a result that is only a score (a regression head) prints the number(s), any other one its JSON."""
    score = result.get("score")
    if set(result) == {"score"} and (isinstance(score, float) or
                                     (isinstance(score, list) and all(isinstance(v, float) for v in score))):
        return [f"{score:.6g}" if isinstance(score, float) else " ".join(f"{v:.6g}" for v in score)]
    return [json.dumps(result, ensure_ascii=False)]


def predict_generic(task: Task, data: bytes, source: str, options: Mapping[str, Any], read_rows: ReadRows) -> Results:
    """Any task through the generic runtime ``TaskModel`` and ``Task.interpret``, one text at a time."""
    from albert_edge.runtime.task_model import TaskModel

    model = TaskModel.from_bytes(data, source, num_threads=options.get("threads"),
                                 backend=options.get("backend", "auto"))
    for where, gold, text_a, text_b in read_rows():
        try:
            result = model.predict(text_a, text_b)
        except TokenizerError as exc:
            raise DataError(f"{where}: {exc}") from None
        record = {"text": text_a, "text_b": text_b, **result}
        if gold is not None:
            record["gold"] = gold
        yield record, result_lines(result)


def predict_labels(task: Task, data: bytes, source: str, options: Mapping[str, Any], read_rows: ReadRows) -> Results:
    """Batched by length through ``TextClassifier``: ``gold<TAB>label<TAB>score<TAB>text`` per row."""
    from albert_edge.runtime.classifier import TextClassifier

    rows = read_rows()
    clf = TextClassifier.from_bytes(data, source, num_threads=options.get("threads"),
                                    backend=options.get("backend", "auto"))
    encs = []
    for where, _, text_a, text_b in rows:
        try:
            encs.append(clf.encode(text_a, text_b))
        except TokenizerError as exc:
            raise DataError(f"{where}: {exc}") from None
    for p, (_, gold, text_a, text_b) in zip(clf.predict_encoded(encs, batch_size=options.get("batch_size", 32)), rows):
        record = {"text": text_a, "text_b": text_b, "label": p.label, "score": round(p.score, 6),
                  "scores": {k: round(v, 6) for k, v in p.scores.items()}, "truncated": p.truncated,
                  "num_tokens": p.num_tokens}
        if gold is not None:
            record["gold"] = gold
        shown = text_a if text_b is None else f"{text_a} ||| {text_b}"
        prefix = f"{gold}\t" if gold is not None else ""
        yield record, [f"{prefix}{p.label}\t{p.score:.4f}\t{shown}{' [truncated]' if p.truncated else ''}"]


def predict_entities(task: Task, data: bytes, source: str, options: Mapping[str, Any], read_rows: ReadRows) -> Results:
    """Entities with character offsets into each text as given, through ``TokenClassifier``:
    ``label<TAB>start<TAB>end<TAB>score<TAB>text`` per entity, a blank line after each text."""
    from albert_edge.runtime.token_classifier import TokenClassifier

    rows = read_rows()
    if any(text_b is not None for _, _, _, text_b in rows):
        raise DataError(f"{source}: a token-classification model takes single texts, not TAB-separated pairs")
    ner = TokenClassifier.from_bytes(data, source, num_threads=options.get("threads"),
                                     backend=options.get("backend", "auto"), stride=options.get("stride"))
    for _, gold, text, _ in rows:
        entities = ner.predict(text)
        record: dict[str, Any] = {"text": text, "entities": [
            {"label": e.label, "start": e.start, "end": e.end, "text": e.text, "score": round(e.score, 6)}
            for e in entities]}
        if gold is not None:
            record["gold"] = gold
        yield record, [f"{e.label}\t{e.start}\t{e.end}\t{e.score:.4f}\t{e.text}" for e in entities] + [""]


def predict_answers(task: Task, data: bytes, source: str, options: Mapping[str, Any], read_rows: ReadRows) -> Results:
    """The answer span with offsets into each context as given, through ``QuestionAnswerer``:
    ``start<TAB>end<TAB>score<TAB>answer`` per question."""
    from albert_edge.runtime.question_answerer import QuestionAnswerer

    questions = _questions(options, read_rows)
    default_tokens = getattr(task, "max_answer_tokens", MAX_ANSWER_TOKENS)
    qa = QuestionAnswerer.from_bytes(data, source, num_threads=options.get("threads"),
                                     backend=options.get("backend", "auto"), stride=options.get("stride"),
                                     max_answer_tokens=options.get("max_answer_tokens") or default_tokens)
    for where, question, context, gold in questions:
        try:
            a = qa.answer(question, context)
        except TokenizerError as exc:
            raise DataError(f"{where}: {exc}") from None
        record: dict[str, Any] = {"question": question, "answer": a.text, "start": a.start, "end": a.end,
                                  "score": round(a.score, 6), "windows": a.windows}
        if gold is not None:
            record["gold"] = gold
        yield record, [f"{a.start}\t{a.end}\t{a.score:.4f}\t{a.text}"]


def _questions(options: Mapping[str, Any], read_rows: ReadRows) -> list[tuple[str, str, str, list[str] | None]]:
    """(where, question, context, gold answers) per question: a ``.jsonl`` ``--file``, else
    ``question<TAB>context`` rows, or each row a context for ``--question``."""
    file, question = options.get("file"), options.get("question")
    if file is not None and str(file).lower().endswith(".jsonl"):
        from albert_edge.tasks.qa_data import read_qa_jsonl

        if question is not None:
            raise DataError(f"{file}: a .jsonl file carries its own questions; drop --question")
        return [(f"{file}:{e.line}", e.question, e.context, [t for t, _ in e.answers] or None)
                for e in read_qa_jsonl(file)]
    out: list[tuple[str, str, str, list[str] | None]] = []
    for where, _, text_a, text_b in read_rows():
        if question is not None:
            if text_b is not None:
                raise DataError(f"{where}: with --question each line is one context, found a TAB")
            out.append((where, question, text_a, None))
        elif text_b is None:
            raise DataError(f"{where}: a question-answering model needs question<TAB>context "
                            "(or --question, or a .jsonl --file)")
        else:
            out.append((where, text_a, text_b, None))
    return out


#: The task every task without an entry is served as.
GENERIC = Serving(predict_generic)

#: Task name -> its adapter; only tasks with a runtime class of their own have an entry.
SERVING: dict[str, Serving] = {
    SequenceClassification.name: Serving(predict_labels, {
        "--batch-size": {"type": "batch_size", "default": 32, "metavar": "N",
                         "help": "sequence classification: texts per invoke, grouped by length (default: 32)"}}),
    TokenClassification.name: Serving(predict_entities, {
        "--stride": {"type": "stride", "default": None, "metavar": "N",
                     "help": "token classification: tokens shared by consecutive windows of a long text "
                             "(default: a quarter of the window, at most 32)"}}),
    QuestionAnswering.name: Serving(predict_answers, {
        "--stride": {"type": "stride", "default": None, "metavar": "N",
                     "help": "question answering: context tokens shared by consecutive windows "
                             "(default: half the window, at most 128)"},
        "--question": {"default": None,
                       "help": "question answering: ask this question of every TEXT (or line), each a context"},
        "--max-answer-tokens": {"type": "positive_int", "default": MAX_ANSWER_TOKENS, "metavar": "N",
                                "help": "question answering: longest answer span in tokens (default: 30, as run_squad)"}},
        jsonl=QA_JSONL_KIND),
}


def serving_of(task: Task | str) -> Serving:
    """The adapter of ``task`` (a Task or its name): its own entry, else ``GENERIC``."""
    return SERVING.get(task if isinstance(task, str) else task.name, GENERIC)
