"""What each variant costs in accuracy: accuracy, agreement and logit drift against the baseline.

Built on albert_edge.evaluate: the same TSV reader, ``compare_logits`` and numpy ``reference_logits``,
but each model's logits are computed once and compared with the baseline's and the reference's,
instead of re-running the baseline for every variant. Not timed: this runs in the parent process.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from albert_edge.errors import ModelFileError


def measure_drift(variants: Sequence[tuple[str, Path]], baseline: str, eval_path: str | os.PathLike[str],
                  reference: str | os.PathLike[str] | None = None, threads: int | None = None) -> list[dict]:
    """One report.json ``accuracy`` entry per variant, in ``variants`` order.

    ``reference`` is a checkpoint (anything ``load_checkpoint`` reads); its numpy float64 forward pass
    on the baseline's encodings is the judge every variant is also compared with. Models whose pack
    task is not classification are judged by ``measure_embedding_drift`` instead.
    """
    from albert_edge.evaluate import compare_logits, read_tsv, reference_logits
    from albert_edge.runtime.pack import read_pack
    from albert_edge.tasks import (
        QuestionAnswering,
        SequenceClassification,
        TokenClassification,
    )

    base_path = dict(variants)[baseline]
    task = read_pack(base_path).task_object(str(base_path))
    if isinstance(task, QuestionAnswering):
        return measure_qa_drift(variants, baseline, eval_path, threads)
    if isinstance(task, TokenClassification):
        return measure_token_drift(variants, baseline, eval_path, threads)
    if not isinstance(task, SequenceClassification):
        return measure_embedding_drift(variants, baseline, eval_path, reference, threads)
    from albert_edge.runtime.classifier import TextClassifier

    classifiers = {name: TextClassifier.from_file(path, num_threads=threads) for name, path in variants}
    labels = list(classifiers[baseline].labels)
    for name, clf in classifiers.items():
        if list(clf.labels) != labels:
            raise ModelFileError(f"{clf.source}: labels {list(clf.labels)} differ from the baseline's {labels}")
    examples = read_tsv(eval_path, labels)
    texts = [e.text_a for e in examples]
    pairs = [e.text_b for e in examples] if all(e.text_b is not None for e in examples) else None
    truth = np.array([labels.index(e.label) for e in examples])

    logits = {}
    encodings = None
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
        drift = compare_logits(logits[name], logits[baseline])
        entry = {"variant": name, "examples": len(examples),
                 "accuracy": float(np.mean(logits[name].argmax(1) == truth)),
                 "agreement": drift.agreement, "max_abs_logit_diff": drift.max_abs_logit_delta,
                 "mean_abs_logit_diff": drift.mean_abs_logit_delta, "mean_kl": drift.mean_kl,
                 "labels": labels, "reference": None}
        if ref_logits is not None:
            vs_ref = compare_logits(logits[name], ref_logits)
            entry["reference"] = {"checkpoint": str(reference), "agreement": vs_ref.agreement,
                                  "max_abs_logit_diff": vs_ref.max_abs_logit_delta,
                                  "mean_abs_logit_diff": vs_ref.mean_abs_logit_delta,
                                  "accuracy": float(np.mean(ref_logits.argmax(1) == truth))}
        entries.append(entry)
    return entries


def measure_embedding_drift(variants: Sequence[tuple[str, Path]], baseline: str, eval_path: str | os.PathLike[str],
                            reference: str | os.PathLike[str] | None = None, threads: int | None = None) -> list[dict]:
    """Embedding drift per variant on the texts of ``eval_path`` (.txt one per line, or .tsv text column).

    Cosine of each text's embedding to the baseline's (mean and min) and top-k neighbour-rank
    agreement; with ``reference`` (the checkpoint), the same against its float64 numpy forward pass
    pooled as the pack says. Classification keys are kept (None) so report.json keeps one schema.
    """
    from albert_edge.quantize.calibration import read_calibration_texts
    from albert_edge.runtime.embedder import TextEmbedder
    from albert_edge.tasks.feature_extraction import embedding_drift

    embedders = {name: TextEmbedder.from_file(path, num_threads=threads) for name, path in variants}
    texts = read_calibration_texts(eval_path, min_texts=2)
    vectors = {name: emb.embed_batch(texts) for name, emb in embedders.items()}
    ref_vectors = None
    if reference is not None:
        ref_vectors = _reference_embeddings(reference, embedders[baseline], texts)
    entries = []
    for name, _ in variants:
        d = embedding_drift(vectors[name], vectors[baseline])
        entry = {"variant": name, "examples": len(texts), "task": "feature_extraction", "accuracy": None,
                 "agreement": None, "max_abs_logit_diff": None, "mean_abs_logit_diff": None, "mean_kl": None,
                 "labels": None, "mean_cosine": d.mean_cosine, "min_cosine": d.min_cosine,
                 "neighbour_agreement": d.neighbour_agreement, "neighbours_k": d.neighbours_k, "reference": None}
        if ref_vectors is not None:
            r = embedding_drift(vectors[name], ref_vectors)
            entry["reference"] = {"checkpoint": str(reference), "mean_cosine": r.mean_cosine,
                                  "min_cosine": r.min_cosine, "neighbour_agreement": r.neighbour_agreement}
        entries.append(entry)
    return entries


def _reference_embeddings(reference: str | os.PathLike[str], embedder, texts: Sequence[str]) -> np.ndarray:
    """The float64 numpy reference's embeddings of ``texts`` (one text per forward pass, no padding)."""
    from albert_edge.model import load_checkpoint, reference_forward

    weights = load_checkpoint(reference)
    out = []
    for text in texts:
        enc = embedder.encode(text)
        ids = np.asarray([enc.input_ids[: enc.length]])
        hidden = reference_forward(weights, ids, token_type_ids=np.asarray([enc.token_type_ids[: enc.length]]))
        out.append(embedder.task.embeddings({"last_hidden_state": hidden.last_hidden_state}, np.ones_like(ids))[0])
    return np.asarray(out)


def measure_token_drift(variants: Sequence[tuple[str, Path]], baseline: str, eval_path: str | os.PathLike[str],
                        threads: int | None = None) -> list[dict]:
    """Token classification: entity F1 and token-tag agreement per variant.

    ``eval_path`` is a ``.jsonl`` entity file (``albert_edge.tasks.entity_data``): ``accuracy`` is then
    entity F1 against gold; or texts (.txt/.tsv): ``accuracy`` is entity F1 against the baseline's
    own entities (1.0 for the baseline), as quantize judges unlabelled text. ``agreement`` is the
    share of tokens whose tag equals the baseline's. Entities are character spans, exactly what
    ``TokenClassifier.predict`` returns. No numpy-reference comparison (``reference`` is None).
    """
    from albert_edge.runtime.token_classifier import TokenClassifier
    from albert_edge.tasks.entities import entity_counts, f1_from_counts

    models = {name: TokenClassifier.from_file(path, num_threads=threads) for name, path in variants}
    labels = list(models[baseline].labels)
    for name, model in models.items():
        if list(model.labels) != labels:
            raise ModelFileError(f"{model.source}: labels {list(model.labels)} differ from the baseline's {labels}")
    if str(eval_path).lower().endswith(".jsonl"):
        from albert_edge.tasks.entity_data import read_entity_jsonl

        examples = read_entity_jsonl(eval_path)
        texts, gold = [text for text, _ in examples], [set(ents) for _, ents in examples]
    else:
        from albert_edge.quantize.calibration import read_calibration_texts

        texts, gold = read_calibration_texts(eval_path, min_texts=2), None
    tags, found = {}, {}
    for name, model in models.items():
        tags[name] = [model.tag(text) for text in texts]
        found[name] = [{(e.start, e.end, e.label) for e in model.entities(text, t)} for text, t in zip(texts, tags[name])]
    entries = []
    for name, _ in variants:
        judge = gold if gold is not None else found[baseline]
        counts = np.sum([entity_counts(f, g) for f, g in zip(found[name], judge)], axis=0) if texts else (0, 0, 0)
        same = sum(a.tag == b.tag for ts, bs in zip(tags[name], tags[baseline]) for a, b in zip(ts, bs))
        total = sum(len(ts) for ts in tags[baseline])
        entries.append({"variant": name, "examples": len(texts), "task": "token_classification",
                        "accuracy": f1_from_counts(*(int(c) for c in counts)), "entity_f1": f1_from_counts(*(int(c) for c in counts)),
                        "f1_against": "gold" if gold is not None else "baseline entities",
                        "agreement": same / total if total else 1.0, "tokens": total, "max_abs_logit_diff": None,
                        "mean_abs_logit_diff": None, "mean_kl": None, "labels": labels, "reference": None})
    return entries


def measure_qa_drift(variants: Sequence[tuple[str, Path]], baseline: str, eval_path: str | os.PathLike[str],
                     threads: int | None = None) -> list[dict]:
    """Question answering: SQuAD exact match / token F1 and span agreement per variant.

    ``eval_path`` is a SQuAD-style ``.jsonl`` (``albert_edge.tasks.qa_data``): with answers,
    ``accuracy`` is F1 against gold; without, F1 against the baseline's own answers (1.0 for the
    baseline), as quantize judges. ``agreement`` is the share of questions whose answer span
    (offsets) equals the baseline's. Answers are exactly what ``QuestionAnswerer.answer`` returns.
    """
    from albert_edge.errors import DataError
    from albert_edge.runtime.question_answerer import QuestionAnswerer
    from albert_edge.tasks.qa_data import read_qa_jsonl
    from albert_edge.tasks.qa_spans import exact_match, token_f1

    if not str(eval_path).lower().endswith(".jsonl"):
        raise DataError(f"{eval_path}: a question-answering model is judged on a SQuAD-style .jsonl file "
                        '({"question", "context", "answers"} per line)')
    examples = read_qa_jsonl(eval_path)
    labelled = all(e.answers for e in examples)
    answers = {}
    for name, path in variants:
        model = QuestionAnswerer.from_file(path, num_threads=threads)
        answers[name] = [model.answer(e.question, e.context) for e in examples]
    entries = []
    for name, _ in variants:
        golds = ([[t for t, _ in e.answers] for e in examples] if labelled
                 else [[a.text] for a in answers[baseline]])
        em = float(np.mean([exact_match(a.text, g) for a, g in zip(answers[name], golds)]))
        f1 = float(np.mean([token_f1(a.text, g) for a, g in zip(answers[name], golds)]))
        same = float(np.mean([(a.start, a.end) == (b.start, b.end) for a, b in zip(answers[name], answers[baseline])]))
        entries.append({"variant": name, "examples": len(examples), "task": "question_answering",
                        "accuracy": f1, "f1": f1, "exact_match": em,
                        "f1_against": "gold" if labelled else "baseline answers", "agreement": same,
                        "max_abs_logit_diff": None, "mean_abs_logit_diff": None, "mean_kl": None, "labels": None,
                        "reference": None})
    return entries
