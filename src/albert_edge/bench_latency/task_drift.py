"""The bench's drift of each task with a runtime of its own, and the report tables, keyed by task name.

A task whose runtime class adds work beyond one run per text (``TextClassifier`` batching,
``TextEmbedder`` pooling, ``TokenClassifier`` and ``QuestionAnswerer`` windows) is judged on what
that runtime returns, by a measure here, and its report.md drift table is declared here with it.
Every other task -- any new one -- is judged as quantize judges it (``drift.measure_judged_drift``)
and its table is the one the task declares (``Task.drift_title`` / ``drift_columns``), so adding
a task needs no line here. Each measure gives one report.json ``accuracy`` entry per variant
(files of that task), in ``variants`` order.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from albert_edge.tasks import FeatureExtraction, QuestionAnswering, SequenceClassification, Task, TokenClassification
from albert_edge.tasks.base import Column
from albert_edge.tasks.entities import entity_counts, f1_from_counts
from albert_edge.tasks.feature_extraction import embedding_drift
from albert_edge.tasks.metrics import near_tie_accounting, top2_margins
from albert_edge.tasks.qa_data import QA_JSONL_KIND
from albert_edge.tasks.qa_spans import exact_match, token_f1
from albert_edge.tokenizer import batch_one

Measure = Callable[..., list[dict[str, Any]]]


@dataclass(frozen=True)
class BenchDrift:
    """How the bench judges one task's variants and how report.md shows the entries.

    ``measure(task, variants, baseline, eval_path, reference, threads)``; ``title`` may name a key
    of the first entry (``{f1_against}``); no ``columns``: every number of the entries.
    """

    measure: Measure
    title: str = "Drift against the baseline"
    columns: tuple[Column, ...] = ()


def measure_labels(task: Task, variants: Sequence[tuple[str, Any]], baseline: str, eval_path: Any,
                   reference: Any = None, threads: int | None = None) -> list[dict[str, Any]]:
    """Accuracy on a labelled TSV, agreement and logit drift against the baseline and, with
    ``reference`` (a checkpoint), against its float64 numpy forward pass on the same encodings.
    Each file's logits are computed once (batched by length, as an app runs them)."""
    from albert_edge.errors import ModelFileError
    from albert_edge.evaluate import compare_logits, read_tsv, reference_logits
    from albert_edge.runtime.classifier import TextClassifier

    classifiers = {name: TextClassifier.from_file(path, num_threads=threads) for name, path in variants}
    labels = list(classifiers[baseline].labels)
    for clf in classifiers.values():
        if list(clf.labels) != labels:
            raise ModelFileError(f"{clf.source}: labels {list(clf.labels)} differ from the baseline's {labels}")
    examples = read_tsv(eval_path, labels)
    texts = [e.text_a for e in examples]
    pairs = [e.text_b for e in examples] if all(e.text_b is not None for e in examples) else None
    truth = np.array([labels.index(e.label) for e in examples])
    logits, encodings = {}, None
    for name, clf in classifiers.items():
        logits[name], encs = clf.logits_batch(texts, pairs)
        if name == baseline:
            encodings = encs
    ref_logits = None
    if reference is not None:
        from albert_edge.model import load_checkpoint

        ref_logits = reference_logits(load_checkpoint(reference), encodings)
    entries = []
    for name, _ in variants:
        d = compare_logits(logits[name], logits[baseline])
        entry = {"variant": name, "examples": len(examples), "task": task.name,
                 "accuracy": float(np.mean(logits[name].argmax(1) == truth)),
                 "agreement": d.agreement, "max_abs_logit_diff": d.max_abs_logit_delta,
                 "mean_abs_logit_diff": d.mean_abs_logit_delta, "mean_kl": d.mean_kl,
                 "labels": labels, "reference": None,
                 "near_ties": classification_near_ties(logits[name], logits[baseline])}
        if ref_logits is not None:
            vs_ref = compare_logits(logits[name], ref_logits)
            entry["reference"] = {"checkpoint": str(reference), "agreement": vs_ref.agreement,
                                  "max_abs_logit_diff": vs_ref.max_abs_logit_delta,
                                  "mean_abs_logit_diff": vs_ref.mean_abs_logit_delta,
                                  "accuracy": float(np.mean(ref_logits.argmax(1) == truth))}
        entries.append(entry)
    return entries


def classification_near_ties(logits: np.ndarray, baseline: np.ndarray) -> dict[str, Any]:
    """``metrics.near_tie_accounting`` of a classifier's logits against the baseline's: how many
    changed labels were baseline near ties, and the agreement on the rows it is sure of."""
    margins = top2_margins(np.asarray(baseline, np.float64))
    changed = np.asarray(logits).argmax(1) != np.asarray(baseline).argmax(1)
    return near_tie_accounting(margins[changed].tolist(), margins.tolist())


def measure_embeddings(task: Task, variants: Sequence[tuple[str, Any]], baseline: str, eval_path: Any,
                       reference: Any = None, threads: int | None = None) -> list[dict[str, Any]]:
    """Embedding drift per variant on the texts of ``eval_path`` (.txt one per line, or .tsv text column).

    Cosine of each text's embedding to the baseline's (mean and min) and top-k neighbour-rank
    agreement, through ``TextEmbedder`` (batched by length, as an app runs it); with ``reference``
    (the checkpoint), the same against its float64 numpy forward pass pooled as the pack says.
    Classification keys are kept (None) so report.json keeps one schema.
    """
    from albert_edge.quantize.calibration import read_calibration_texts
    from albert_edge.runtime.embedder import TextEmbedder

    embedders = {name: TextEmbedder.from_file(path, num_threads=threads) for name, path in variants}
    texts = read_calibration_texts(eval_path, min_texts=2)
    vectors = {name: emb.embed_batch(texts) for name, emb in embedders.items()}
    ref_vectors = None if reference is None else _reference_embeddings(reference, embedders[baseline], texts)
    entries = []
    for name, _ in variants:
        d = embedding_drift(vectors[name], vectors[baseline])
        entry = {"variant": name, "examples": len(texts), "task": task.name, "accuracy": None,
                 "agreement": None, "max_abs_logit_diff": None, "mean_abs_logit_diff": None, "mean_kl": None,
                 "labels": None, "mean_cosine": d.mean_cosine, "min_cosine": d.min_cosine,
                 "neighbour_agreement": d.neighbour_agreement, "neighbours_k": d.neighbours_k, "reference": None}
        if ref_vectors is not None:
            r = embedding_drift(vectors[name], ref_vectors)
            entry["reference"] = {"checkpoint": str(reference), "mean_cosine": r.mean_cosine,
                                  "min_cosine": r.min_cosine, "neighbour_agreement": r.neighbour_agreement}
        entries.append(entry)
    return entries


def _reference_embeddings(reference: Any, embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """The float64 numpy reference's embeddings of ``texts`` (one text per forward pass, no padding)."""
    from albert_edge.model import load_checkpoint, reference_forward

    weights = load_checkpoint(reference)
    out = []
    for text in texts:
        sample = batch_one(embedder.encode(text))
        hidden = reference_forward(weights, sample["input_ids"], token_type_ids=sample["token_type_ids"])
        out.append(embedder.task.embeddings({"last_hidden_state": hidden.last_hidden_state},
                                            sample["attention_mask"])[0])
    return np.asarray(out)


def measure_entities(task: Task, variants: Sequence[tuple[str, Any]], baseline: str, eval_path: Any,
                     reference: Any = None, threads: int | None = None) -> list[dict[str, Any]]:
    """Entity F1 and token-tag agreement per variant, on what ``TokenClassifier.predict`` returns.

    ``eval_path`` is a ``.jsonl`` entity file (``tasks.entity_data``): ``accuracy`` is then entity
    F1 against gold; or texts (.txt/.tsv): F1 against the baseline's own entities (1.0 for the
    baseline), as quantize judges unlabelled text. ``agreement`` is the share of tokens whose tag
    equals the baseline's. No numpy-reference comparison (``reference`` is ignored).
    """
    from albert_edge.errors import ModelFileError
    from albert_edge.runtime.token_classifier import TokenClassifier

    models = {name: TokenClassifier.from_file(path, num_threads=threads) for name, path in variants}
    labels = list(models[baseline].labels)
    for model in models.values():
        if list(model.labels) != labels:
            raise ModelFileError(f"{model.source}: labels {list(model.labels)} differ from the baseline's {labels}")
    if str(eval_path).lower().endswith(".jsonl"):
        from albert_edge.tasks.entity_data import check_entity_types, read_entity_jsonl

        examples = read_entity_jsonl(eval_path)
        check_entity_types(examples, labels, str(eval_path))
        texts, gold = [text for text, _ in examples], [set(ents) for _, ents in examples]
    else:
        from albert_edge.quantize.calibration import read_calibration_texts

        texts, gold = read_calibration_texts(eval_path, min_texts=2), None
    tags, found, base_margins = {}, {}, []
    for name, model in models.items():
        if name == baseline:   # the baseline's margins come from the same run as its tags
            runs = [model.token_logits(text) for text in texts]
            tags[name] = [model.tags_from_logits(tokens, logits) for tokens, logits in runs]
            base_margins = [top2_margins(logits) for _, logits in runs]
        else:
            tags[name] = [model.tag(text) for text in texts]
        found[name] = [{(e.start, e.end, e.label) for e in model.entities(text, t)}
                       for text, t in zip(texts, tags[name])]
    entries = []
    for name, _ in variants:
        judge = gold if gold is not None else found[baseline]
        counts = np.sum([entity_counts(f, g) for f, g in zip(found[name], judge)], axis=0) if texts else (0, 0, 0)
        f1 = f1_from_counts(*(int(c) for c in counts))
        vs_base = np.sum([entity_counts(f, b) for f, b in zip(found[name], found[baseline])], axis=0) \
            if texts else np.zeros(3, dtype=int)
        union = int(vs_base[1] + vs_base[2] - vs_base[0])
        same = sum(a.tag == b.tag for ts, bs in zip(tags[name], tags[baseline]) for a, b in zip(ts, bs))
        total = sum(len(ts) for ts in tags[baseline])
        flips = [float(m) for ts, bs, ms in zip(tags[name], tags[baseline], base_margins)
                 for a, b, m in zip(ts, bs, ms) if a.tag != b.tag]
        entries.append({"variant": name, "examples": len(texts), "task": task.name, "accuracy": f1,
                        "entity_f1": f1, "f1_against": "gold" if gold is not None else "baseline entities",
                        "agreement": same / total if total else 1.0, "tokens": total,
                        "entity_agreement": int(vs_base[0]) / union if union else 1.0, "entities": union,
                        "entity_f1_vs_baseline": f1_from_counts(*(int(c) for c in vs_base)), "max_abs_logit_diff": None,
                        "mean_abs_logit_diff": None, "mean_kl": None, "labels": labels, "reference": None,
                        "near_ties": near_tie_accounting(flips, [float(m) for ms in base_margins for m in ms])})
    return entries


def measure_answers(task: Task, variants: Sequence[tuple[str, Any]], baseline: str, eval_path: Any,
                    reference: Any = None, threads: int | None = None) -> list[dict[str, Any]]:
    """SQuAD exact match / token F1 and span agreement per variant, on what
    ``QuestionAnswerer.answer`` returns.

    ``eval_path`` is a SQuAD-style ``.jsonl`` (``tasks.qa_data``): with answers, ``accuracy`` is
    F1 against gold; without, F1 against the baseline's own answers (1.0 for the baseline), as
    quantize judges. ``agreement`` is the share of questions whose answer span (offsets) equals
    the baseline's. No numpy-reference comparison (``reference`` is ignored).
    """
    from albert_edge.errors import DataError
    from albert_edge.runtime.question_answerer import QuestionAnswerer
    from albert_edge.tasks.qa_data import read_qa_jsonl

    if not str(eval_path).lower().endswith(".jsonl"):
        raise DataError(f"{eval_path}: a question-answering model is judged on a {QA_JSONL_KIND} file")
    examples = read_qa_jsonl(eval_path)
    labelled = all(e.answers for e in examples)
    answers, margins = {}, []
    for name, path in variants:
        model = QuestionAnswerer.from_file(path, num_threads=threads)
        if name == baseline:   # the baseline's margins come from the same run as its answers
            pairs = [model.answer_with_margin(e.question, e.context) for e in examples]
            answers[name], margins = [a for a, _ in pairs], [m for _, m in pairs]
        else:
            answers[name] = [model.answer(e.question, e.context) for e in examples]
    entries = []
    for name, _ in variants:
        golds = ([[t for t, _ in e.answers] for e in examples] if labelled
                 else [[a.text] for a in answers[baseline]])
        em = float(np.mean([exact_match(a.text, g) for a, g in zip(answers[name], golds)]))
        f1 = float(np.mean([token_f1(a.text, g) for a, g in zip(answers[name], golds)]))
        same = float(np.mean([(a.start, a.end) == (b.start, b.end)
                              for a, b in zip(answers[name], answers[baseline])]))
        em_base = float(np.mean([exact_match(a.text, [b.text]) for a, b in zip(answers[name], answers[baseline])]))
        f1_base = float(np.mean([token_f1(a.text, [b.text]) for a, b in zip(answers[name], answers[baseline])]))
        entries.append({"variant": name, "examples": len(examples), "task": task.name,
                        "accuracy": f1, "f1": f1, "exact_match": em,
                        "f1_against": "gold" if labelled else "baseline answers", "agreement": same,
                        "exact_match_vs_baseline": em_base, "f1_vs_baseline": f1_base,
                        "max_abs_logit_diff": None, "mean_abs_logit_diff": None, "mean_kl": None,
                        "labels": None, "reference": None,
                        "near_ties": near_tie_accounting(
                            [m for a, b, m in zip(answers[name], answers[baseline], margins)
                             if (a.start, a.end) != (b.start, b.end)], margins)})
    return entries


#: Near-tie accounting beside every label-, entity- and span-level table: how many predictions changed
#: against the baseline, how many of those the baseline itself barely made, and the agreement on the rest.
NEAR_TIE_COLUMNS = (Column("changed", "near_ties.changed", "d"),
                    Column("of them near ties", "near_ties.near_tie_changes", "d"),
                    Column("agreement where baseline is sure", "near_ties.confident_agreement", ".2f", percent=True))

#: Task name -> how the bench judges it; tasks without an entry are judged as quantize judges them.
RUNTIME_DRIFT: dict[str, BenchDrift] = {
    SequenceClassification.name: BenchDrift(measure_labels, "Drift against the baseline", (
        Column("examples", "examples", "d"), Column("accuracy", "accuracy", ".2f", percent=True),
        Column("agreement", "agreement", ".2f", percent=True), Column("max abs Δlogit", "max_abs_logit_diff", ".3g"),
        Column("mean abs Δlogit", "mean_abs_logit_diff", ".3g"),
        Column("vs reference: max abs Δlogit", "reference.max_abs_logit_diff", ".3g"), *NEAR_TIE_COLUMNS)),
    FeatureExtraction.name: BenchDrift(measure_embeddings, "Embedding drift against the baseline", (
        Column("texts", "examples", "d"), Column("mean cosine", "mean_cosine", ".5f"),
        Column("min cosine", "min_cosine", ".5f"), Column("top-k neighbours kept", "neighbour_agreement", ".1f", True),
        Column("k", "neighbours_k", "d"), Column("vs reference: mean cosine", "reference.mean_cosine", ".5f"),
        Column("vs reference: min cosine", "reference.min_cosine", ".5f"))),
    TokenClassification.name: BenchDrift(measure_entities, "Entity drift (token classification; F1 against {f1_against})", (
        Column("texts", "examples", "d"), Column("tokens", "tokens", "d"),
        Column("entity F1", "entity_f1", ".2f", percent=True),
        Column("token tags equal to baseline", "agreement", ".2f", percent=True), *NEAR_TIE_COLUMNS)),
    QuestionAnswering.name: BenchDrift(measure_answers, "Answer drift (question answering; EM / F1 against {f1_against})", (
        Column("questions", "examples", "d"), Column("exact match", "exact_match", ".2f", percent=True),
        Column("F1", "f1", ".2f", percent=True),
        Column("answer spans equal to baseline", "agreement", ".2f", percent=True), *NEAR_TIE_COLUMNS)),
}


def markdown_table(title: str, first: str, columns: Sequence[Column], entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """A report.md section: ``title``, then one row per entry (``first`` heads the variant column)."""
    return [f"## {title}", "", "| " + " | ".join([first, *(c.header for c in columns)]) + " |",
            "|---|" + "---:|" * len(columns),
            *("| " + " | ".join([str(e.get("variant")), *(c.cell(e, "–") for c in columns)]) + " |" for e in entries),
            ""]


class _Blank(dict):
    """format_map mapping whose missing keys read as "-"."""

    def __missing__(self, key: str) -> str:
        return "-"


def drift_markdown(title: str, columns: Sequence[Column], entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The bench report's drift section for ``entries`` of one task: ``title`` filled from the first
    entry, ``columns`` or, when none are declared, every number of the entries."""
    from albert_edge.tasks.base import scalar_columns

    first = dict(entries[0]) if entries else {}
    return markdown_table(title.format_map(_Blank(first)), "variant", columns or scalar_columns(entries), entries)
