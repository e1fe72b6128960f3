"""Token classification (NER): one label per token, the classifier applied to every position.

Head weights (canonical): ``classifier.kernel`` [H, num_labels], ``classifier.bias`` [num_labels];
no pooler is used (Hugging Face ``*ForTokenClassification`` stores none; the TF1 NER scripts keep
BERT's unused ``bert/pooler`` which the graph then leaves out). The signature's one output is
``logits`` [batch, seq, num_labels], as optimum's token-classification export names it.
Post-processing (runtime ``TokenClassifier``): softmax, argmax, BIO/BIOES decoding
(``tasks.entities``) to spans with character offsets, overlapping windows for long texts.

Drift: token-label agreement with the baseline over real tokens, |Δlogit|, and entity-level F1 of
the variant's decoded entities against the baseline's (``labels`` bound) or, with gold per-token
label ids, both against the gold ones.

Detection: the classifier without a pooler (all HF token classifiers), or config.json
``architectures`` naming ``*ForTokenClassification``. A TF1 NER checkpoint has the same variable
names as a TF1 sentence classifier (``output_weights``/``output_bias``), so it needs
``--task token_classification``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from albert_edge.tasks.base import ClassifierHeadTask, Column, TaskDrift, check_same_shape
from albert_edge.tasks.entities import decode_tags, entity_counts, f1_from_counts
from albert_edge.tasks.eval_format import EvalFormat, Samples
from albert_edge.tasks.metrics import Budget, f1_and_agreement_failures, f1_and_agreement_hints

#: Gold label id of a token that is not judged (HF's ignore index), e.g. a ## continuation.
IGNORE = -100


def declares_token_classification(checkpoint: str | os.PathLike[str] | None) -> bool:
    """True when the config.json beside a Hugging Face ``checkpoint`` names a *ForTokenClassification."""
    if checkpoint is None:
        return False
    path = Path(checkpoint)
    config = (path if path.is_dir() else path.parent) / "config.json"
    if not config.is_file():
        return False
    from albert_edge.errors import AlbertEdgeError
    from albert_edge.jsonfile import load_json_file

    try:
        architectures = load_json_file(config, AlbertEdgeError).get("architectures") or []
    except (AlbertEdgeError, OSError, AttributeError):
        return False
    return any(isinstance(a, str) and a.endswith("ForTokenClassification") for a in architectures)


def sequences(values: np.ndarray) -> list[np.ndarray]:
    """Split ``judged_values`` rows back into one [tokens, 1 + labels] block per text (position 0 starts one)."""
    starts = np.flatnonzero(values[:, 0] == 0)
    return [values[a:b] for a, b in zip(starts, list(starts[1:]) + [len(values)])]


@dataclass
class TokenDrift(TaskDrift):
    """Drift of a token classifier against the baseline on the same texts.

    ``agreement``: share of real tokens ([CLS]/[SEP] excluded) whose argmax label equals the
    baseline's. ``entity_f1``: the variant's entities against the baseline's (unlabelled) or against
    gold (labelled, then ``baseline_entity_f1`` is fp32's own); None when label names are unknown.
    ``f1_drop``: points lost vs the baseline (unlabelled: 100 * (1 - entity_f1)).
    """

    examples: int
    tokens: int
    agreement: float
    max_abs_logit: float
    mean_abs_logit: float
    entity_f1: float | None
    baseline_entity_f1: float | None
    f1_drop: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    columns: ClassVar[tuple[Column, ...]] = (
        Column("ent F1", "entity_f1", ".4f"), Column("drop pt", "f1_drop", ".2f"),
        Column("agree %", "agreement", ".1f", percent=True), Column("max|dlogit|", "max_abs_logit", ".4f"))

    def budget_failures(self, budget: Budget) -> list[str]:
        return f1_and_agreement_failures(budget, self.f1_drop, "entity", self.agreement, self.tokens, "token")

    def relax_hints(self, budget: Budget) -> list[str]:
        return f1_and_agreement_hints(budget, self.f1_drop, self.agreement, self.tokens)

    def summary(self) -> str:
        f1 = "" if self.entity_f1 is None else f", entity F1 {100 * self.entity_f1:.1f}"
        return f"token agreement {100 * self.agreement:.1f}%{f1}"


class EntityJsonlFormat(EvalFormat):
    """A token classifier's labelled eval file: the JSONL entity file (``tasks.entity_data``)."""

    def labelled_samples(self, path: Any, tokenizer: Any, max_seq_len: int, labels: tuple[str, ...] | None = None,
                         max_examples: int | None = None) -> Samples | None:
        """Samples and gold label ids (in ``labels``' order) per real token."""
        from albert_edge.errors import DataError
        from albert_edge.tasks.entity_data import encode_labelled, read_entity_jsonl

        if labels is None:
            raise DataError(f"{path}: judging entity F1 needs the model's label names")
        examples = read_entity_jsonl(path)[:max_examples]
        return encode_labelled(examples, tokenizer, max_seq_len, labels, str(path))


class TokenClassification(ClassifierHeadTask):
    """Per-token logits; entities are decoded from them by the runtime."""

    name: ClassVar[str] = "token_classification"
    head_prefixes: ClassVar[tuple[str, ...]] = ("classifier.",)
    required_weights: ClassVar[tuple[str, ...]] = ("classifier.kernel", "classifier.bias")
    eval_format: ClassVar[EvalFormat] = EntityJsonlFormat()
    # Same contract as sentence classification: the head is one dense layer on the hidden states
    # that are themselves held to 1e-4 (fp32); fp16 weights move logits by ~1e-3.
    tolerances: ClassVar[dict[str, dict[str, float]]] = {
        "fp32": {"logits": 1e-4, "hidden": 1e-4},
        "fp16": {"logits": 2e-2, "hidden": 6e-2},
    }

    @classmethod
    def detect(cls, weights: Any) -> bool:
        return "classifier.kernel" in weights.tensors and "pooler.kernel" not in weights.tensors

    def outputs(self) -> tuple[str, ...]:
        return ("logits",)

    def output_shapes(self, config: Any, weights: Any) -> dict[str, list[str | int]]:
        return {"logits": ["batch", "sequence", self.num_labels(weights)]}

    def head(self, ops: Any, sequence: Any, attention_mask: Any) -> dict[str, Any]:
        """The classifier at every position: [B, S, C] logits."""
        return {"logits": ops.named(ops.token_dense(sequence, "classifier"), "logits")}

    def parity_expected(self, reference: Any, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
        return {"logits": reference.token_logits, "hidden": reference.last_hidden_state}

    @property
    def parity_required(self) -> tuple[str, ...]:
        return ("logits",)

    def judged_values(self, outputs: Mapping[str, np.ndarray], attention_mask: np.ndarray) -> np.ndarray:
        """One row per real token: [position in its text, logits...]; position 0 ([CLS]) starts a text,
        which lets ``drift`` regroup tokens into texts after rows of different lengths are stacked."""
        logits = np.asarray(outputs["logits"], dtype=np.float64)
        rows = []
        for b in range(logits.shape[0]):
            keep = np.flatnonzero(np.asarray(attention_mask[b]) > 0)
            rows.append(np.concatenate([keep[:, None].astype(np.float64), logits[b, keep]], axis=1))
        return np.concatenate(rows) if rows else np.zeros((0, 1 + logits.shape[-1]))

    def drift(self, values: np.ndarray, baseline: np.ndarray, labels: np.ndarray | None = None) -> TokenDrift:
        return token_drift(values, baseline, self.labels, labels)


def token_drift(values: np.ndarray, baseline: np.ndarray, names: Sequence[str] | None,
                gold: np.ndarray | None = None) -> TokenDrift:
    """Agreement and entity F1 of ``values`` against ``baseline`` (rows from ``judged_values``);
    ``gold`` is one label id per row (IGNORE for unjudged tokens) when the texts are labelled."""
    values, baseline = np.asarray(values, dtype=np.float64), np.asarray(baseline, dtype=np.float64)
    check_same_shape(values, baseline, ("token logits", "baseline token logits"))
    texts_v, texts_b = sequences(values), sequences(baseline)
    gold_texts = np.split(np.asarray(gold), np.flatnonzero(values[:, 0] == 0)[1:]) if gold is not None else None
    agree = total = 0
    counts = np.zeros(3, dtype=np.int64)
    base_counts = np.zeros(3, dtype=np.int64)
    for i, (v, b) in enumerate(zip(texts_v, texts_b)):
        inner = slice(1, max(1, len(v) - 1))  # drop [CLS] and the final [SEP]
        pv, pb = v[inner, 1:].argmax(-1), b[inner, 1:].argmax(-1)
        agree += int(np.sum(pv == pb))
        total += len(pv)
        if names is None:
            continue
        ents_v = decode_tags([names[k] for k in pv])
        ents_b = decode_tags([names[k] for k in pb])
        if gold_texts is None:
            counts += entity_counts(ents_v, ents_b)
        else:
            g = np.asarray(gold_texts[i])[inner]
            judged = g != IGNORE
            ents_g = decode_tags([names[k] for k in g[judged]])
            counts += entity_counts(decode_tags([names[k] for k in pv[judged]]), ents_g)
            base_counts += entity_counts(decode_tags([names[k] for k in pb[judged]]), ents_g)
    delta = np.abs(values[:, 1:] - baseline[:, 1:])
    agreement = agree / total if total else 1.0
    f1 = base_f1 = drop = None
    if names is not None:
        f1 = f1_from_counts(*counts)
        if gold is not None:
            base_f1 = f1_from_counts(*base_counts)
            drop = 100.0 * (base_f1 - f1)
        else:
            drop = 100.0 * (1.0 - f1)
    return TokenDrift(len(texts_v), total, agreement, float(delta.max()) if delta.size else 0.0,
                      float(delta.mean()) if delta.size else 0.0, f1, base_f1, drop)
