"""Token classification (NER): one label per token, the classifier applied to every position.

Head weights (canonical): ``classifier.kernel`` [H, num_labels], ``classifier.bias`` [num_labels];
no pooler is used (Hugging Face ``*ForTokenClassification`` stores none; the TF1 NER scripts keep
BERT's unused ``bert/pooler`` which the graph then leaves out). The signature's one output is
``logits`` [batch, seq, num_labels], as optimum's token-classification export names it.
Post-processing (runtime ``TokenClassifier``): softmax, argmax, BIO/BIOES decoding
(``tasks.entities``) to spans with character offsets, overlapping windows for long texts.

Drift: token-label agreement with the baseline over real tokens, |Δlogit|, entity-level F1 and
agreement of the variant's decoded entities against the baseline's (``labels`` bound) and, with
gold per-token label ids, both models' entity F1 against the gold ones. The gate judges entities
(what an app shows), not tags; changed tags are counted by fp32's own top-2 margin (near ties).

Detection: the classifier without a pooler (all HF token classifiers), or config.json
``architectures`` naming ``*ForTokenClassification``. A TF1 NER checkpoint has the same variable
names as a TF1 sentence classifier (``output_weights``/``output_bias``), so it needs
``--task token_classification``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from albert_edge.tasks.base import ClassifierHeadTask, Column, TaskDrift, check_same_shape
from albert_edge.tasks.entities import decode_tags, entity_counts, f1_from_counts
from albert_edge.tasks.eval_format import EvalFormat, Samples
from albert_edge.tasks.metrics import (
    Budget,
    f1_and_agreement_failures,
    f1_and_agreement_hints,
    f1_and_agreement_shortfall,
    f1_and_agreement_unjudged,
    near_tie_accounting,
    top2_margins,
)
from albert_edge.tasks.sequence_classification import flips_by_margin

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
    from albert_edge.inputs.jsonfile import load_json_file

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

    What a user sees is entities, not tags: one changed tag can split an entity or drop it, so
    the gate judges ``entity_agreement``, the share of the ``entities`` found by either model
    (exact span and type) that both found, by its Wilson lower bound; tag agreement decides only
    when there are no label names or no entity at all. ``entity_f1_vs_baseline`` is the variant's
    entities against fp32's also when gold is given. ``flip_margins``: fp32's top-1 minus top-2
    logit of every changed tag (near-tie accounting, ``to_dict``'s ``near_ties``).
    """

    examples: int
    tokens: int
    agreement: float
    max_abs_logit: float
    mean_abs_logit: float
    entity_f1: float | None
    baseline_entity_f1: float | None
    f1_drop: float | None
    entity_agreement: float | None = None
    entities: int = 0
    entity_f1_vs_baseline: float | None = None
    flip_margins: list[float] = field(default_factory=list, repr=False)
    #: fp32's margin of every judged tag, kept only to count the confident ones.
    margins: list[float] = field(default_factory=list, repr=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["flip_margins"], d["margins"]
        d["near_ties"] = near_tie_accounting(self.flip_margins, self.margins)
        d["flips_by_margin"] = flips_by_margin(self.flip_margins)
        return d

    columns: ClassVar[tuple[Column, ...]] = (
        Column("ent F1", "entity_f1", ".4f"), Column("drop pt", "f1_drop", ".2f"),
        Column("ent agree %", "entity_agreement", ".1f", percent=True),
        Column("agree %", "agreement", ".1f", percent=True),
        Column("near-tie flips", "near_ties.near_tie_changes", "d"),
        Column("sure agree %", "near_ties.confident_agreement", ".1f", percent=True),
        Column("max|dlogit|", "max_abs_logit", ".4f"))

    def judged_agreement(self) -> tuple[float, int, str]:
        """(agreement, units, unit name) the gate judges: entities when any were decoded, else tags."""
        if self.entity_agreement is not None and self.entities > 0:
            return self.entity_agreement, self.entities, "entity"
        return self.agreement, self.tokens, "token"

    def budget_failures(self, budget: Budget) -> list[str]:
        agreement, n, unit = self.judged_agreement()
        return f1_and_agreement_failures(budget, self.f1_drop, "entity", agreement, n, unit)

    def unjudged(self, budget: Budget) -> str | None:
        agreement, n, unit = self.judged_agreement()
        return f1_and_agreement_unjudged(budget, self.f1_drop, agreement, n, unit)

    def relax_hints(self, budget: Budget) -> list[str]:
        agreement, n, _ = self.judged_agreement()
        return f1_and_agreement_hints(budget, self.f1_drop, agreement, n)

    def shortfall(self, budget: Budget) -> float:
        """Entity F1 points lost beyond ``max_drop`` plus the points the entity agreement's lower
        bound misses ``min_agreement`` by (tag agreement when no entity is decoded)."""
        agreement, n, _ = self.judged_agreement()
        return f1_and_agreement_shortfall(budget, self.f1_drop, agreement, n)

    def summary(self) -> str:
        f1 = "" if self.entity_f1 is None else f", entity F1 {100 * self.entity_f1:.1f}"
        ents = "" if self.entity_agreement is None else (f"entity agreement {100 * self.entity_agreement:.1f}% "
                                                         f"of {self.entities}, ")
        near = near_tie_accounting(self.flip_margins, self.margins)
        return (f"{ents}token agreement {100 * self.agreement:.1f}%{f1}, {near['near_tie_changes']} of "
                f"{near['changed']} changed tags near ties")


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
    pipeline_tag: ClassVar[str | None] = "token-classification"
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
    counts = np.zeros(3, dtype=np.int64)  # variant vs gold (labelled) or vs fp32
    base_counts = np.zeros(3, dtype=np.int64)  # fp32 vs gold
    vs_fp32 = np.zeros(3, dtype=np.int64)  # variant vs fp32, always
    margins: list[float] = []
    flip_margins: list[float] = []
    for i, (v, b) in enumerate(zip(texts_v, texts_b)):
        inner = slice(1, max(1, len(v) - 1))  # drop [CLS] and the final [SEP]
        pv, pb = v[inner, 1:].argmax(-1), b[inner, 1:].argmax(-1)
        margin = top2_margins(b[inner, 1:])
        margins += margin.tolist()
        flip_margins += margin[pv != pb].tolist()
        agree += int(np.sum(pv == pb))
        total += len(pv)
        if names is None:
            continue
        ents_v, ents_b = decode_tags([names[k] for k in pv]), decode_tags([names[k] for k in pb])
        vs_fp32 += entity_counts(ents_v, ents_b)
        if gold_texts is None:
            continue
        g = np.asarray(gold_texts[i])[inner]
        judged = g != IGNORE
        ents_g = decode_tags([names[k] for k in g[judged]])
        counts += entity_counts(decode_tags([names[k] for k in pv[judged]]), ents_g)
        base_counts += entity_counts(decode_tags([names[k] for k in pb[judged]]), ents_g)
    delta = np.abs(values[:, 1:] - baseline[:, 1:])
    agreement = agree / total if total else 1.0
    f1 = base_f1 = drop = f1_fp32 = entity_agreement = None
    union = 0
    if names is not None:
        f1_fp32 = f1_from_counts(*vs_fp32)
        union = int(vs_fp32[1] + vs_fp32[2] - vs_fp32[0])
        entity_agreement = float(vs_fp32[0]) / union if union else 1.0
        if gold is not None:
            f1, base_f1 = f1_from_counts(*counts), f1_from_counts(*base_counts)
            drop = 100.0 * (base_f1 - f1)
        else:
            f1 = f1_fp32
            drop = 100.0 * (1.0 - f1)
    return TokenDrift(len(texts_v), total, agreement, float(delta.max()) if delta.size else 0.0,
                      float(delta.mean()) if delta.size else 0.0, f1, base_f1, drop, entity_agreement, union, f1_fp32,
                      flip_margins, margins)
