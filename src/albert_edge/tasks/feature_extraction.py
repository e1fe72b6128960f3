"""Feature extraction: hidden states, or one sentence embedding per text.

Settings (the pack's ``task_config``): ``pooling`` is "none" (the signature returns
``last_hidden_state`` [batch, seq, H] and the BERT ``pooled_output`` [batch, H], as packs before
task_config did), or "cls" / "mean" / "max" (sentence-transformers' Pooling modes); ``normalize``
L2-normalises the embedding (sentence-transformers' Normalize module); ``pooling_in_graph`` puts
the pooling (and normalisation) into the graph, whose one output is then ``sentence_embedding``
[batch, H], instead of returning ``last_hidden_state`` for the runtime to pool with numpy.

Head weights: only ``pooler.*`` when pooling is "none"; a pooled embedding needs none.
Drift is embedding cosine (mean and min) and top-k neighbour-rank agreement against the baseline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, ClassVar

import numpy as np

from albert_edge.errors import ConversionError, ModelFileError
from albert_edge.model.skeleton import MAX_POOL_MASKED, MEAN_POOL_MIN_COUNT, NORM_EPS, pooler_activation
from albert_edge.tasks.base import Column, Task, TaskDrift, as_rows, check_same_shape
from albert_edge.tasks.metrics import Budget, normal_quantile

POOLING_MODES = ("none", "cls", "mean", "max")
NEIGHBOURS = 5


def pool(hidden: np.ndarray, attention_mask: np.ndarray, mode: str) -> np.ndarray:
    """[B, S, H] hidden states and [B, S] 0/1 mask -> [B, H] float64, as sentence-transformers pools."""
    h = np.asarray(hidden, dtype=np.float64)
    m = np.asarray(attention_mask, dtype=np.float64)[:, :, None]
    if mode == "cls":
        return h[:, 0]
    if mode == "mean":
        return (h * m).sum(axis=1) / np.maximum(m.sum(axis=1), MEAN_POOL_MIN_COUNT)
    if mode == "max":
        return np.where(m > 0, h, MAX_POOL_MASKED).max(axis=1)
    raise ValueError(f"pooling mode {mode!r}: expected one of cls, mean, max")


def l2_normalize(x: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm (floored at 1e-12, like torch's F.normalize). [N, D] -> [N, D]."""
    x = np.asarray(x, dtype=np.float64)
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), NORM_EPS)


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise cosine similarity of [N, D] and [N, D] -> [N]."""
    return np.sum(l2_normalize(a) * l2_normalize(b), axis=-1)


def neighbour_agreement(values: np.ndarray, baseline: np.ndarray, k: int = NEIGHBOURS) -> float:
    """Mean share of each row's top-k cosine neighbours (among the other rows) that both sets agree on.

    1.0 when every text keeps the same k nearest texts; what a search or dedup user would notice.
    """
    n = values.shape[0]
    k = min(k, n - 1)
    if k < 1:
        return 1.0

    def top(x: np.ndarray) -> np.ndarray:
        unit = l2_normalize(x)
        sims = unit @ unit.T
        np.fill_diagonal(sims, -np.inf)
        return np.argsort(-sims, axis=1, kind="stable")[:, :k]

    a, b = top(values), top(baseline)
    return float(np.mean([len(set(a[i]) & set(b[i])) / k for i in range(n)]))


@dataclass
class EmbeddingDrift(TaskDrift):
    """Embedding drift against the baseline: cosine per text (mean, min) and neighbour agreement.

    The mean is judged by its one-sided lower confidence bound (``mean_cosine_bound``: the mean
    minus z standard errors of the per-text cosines), as agreement is judged by its Wilson bound:
    the judge texts are a sample, and a mean that clears the budget by less than its own noise on
    them need not clear it on the next texts. ``cosine_sd`` is the per-text standard deviation.
    """

    examples: int
    mean_cosine: float
    min_cosine: float
    neighbour_agreement: float
    neighbours_k: int
    cosine_sd: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def mean_cosine_bound(self, confidence: float = 0.95) -> float:
        """One-sided lower confidence bound of the mean cosine over texts like the judged ones."""
        if self.examples < 2 or confidence <= 0.5:
            return self.mean_cosine
        return self.mean_cosine - normal_quantile(confidence) * self.cosine_sd / math.sqrt(self.examples)

    def budget_failures(self, budget: Budget) -> list[str]:
        reasons = []
        if self.min_cosine < budget.min_cosine - 1e-12:
            reasons.append(f"min cosine {self.min_cosine:.5f} < {budget.min_cosine:g}")
        confidence = getattr(budget, "confidence", 0.95)
        bound = self.mean_cosine_bound(confidence)
        if bound < budget.min_mean_cosine - 1e-12:
            reasons.append(f"mean cosine {self.mean_cosine:.5f} over {self.examples} texts (lower bound {bound:.5f} "
                           f"at {100 * confidence:g}% confidence) < {budget.min_mean_cosine:g}")
        return reasons

    columns: ClassVar[tuple[Column, ...]] = (
        Column("cos mean", "mean_cosine", ".5f"), Column("cos min", "min_cosine", ".5f"),
        Column("top-k %", "neighbour_agreement", ".1f", percent=True))

    def relax_hints(self, budget: Budget) -> list[str]:
        what = []
        if self.min_cosine < budget.min_cosine:
            what.append(f"--min-cosine {math.floor(self.min_cosine * 1e4) / 1e4:g}")
        bound = self.mean_cosine_bound(getattr(budget, "confidence", 0.95))
        if bound < budget.min_mean_cosine:
            what.append(f"--min-mean-cosine {math.floor(bound * 1e4) / 1e4:g} (or judge on more texts)")
        return what

    def shortfall(self, budget: Budget) -> float:
        """Cosine points (x100) the worst text misses ``min_cosine`` by plus those the mean's lower
        bound misses ``min_mean_cosine`` by; 0 when both pass."""
        worst = budget.min_cosine - self.min_cosine
        mean = budget.min_mean_cosine - self.mean_cosine_bound(getattr(budget, "confidence", 0.95))
        return 100.0 * ((worst if worst > 1e-12 else 0.0) + (mean if mean > 1e-12 else 0.0))

    def summary(self) -> str:
        return (f"cosine mean {self.mean_cosine:.5f} min {self.min_cosine:.5f}, "
                f"top-{self.neighbours_k} neighbours {100 * self.neighbour_agreement:.1f}%")


def embedding_drift(values: np.ndarray, baseline: np.ndarray, k: int = NEIGHBOURS) -> EmbeddingDrift:
    """Cosine and neighbour-rank drift of embeddings [N, H] against ``baseline`` [N, H]."""
    values, baseline = as_rows(values), as_rows(baseline)
    check_same_shape(values, baseline, ("embeddings", "baseline embeddings"))
    cos = cosine_rows(values, baseline)
    return EmbeddingDrift(int(values.shape[0]), float(cos.mean()), float(cos.min()),
                          neighbour_agreement(values, baseline, k), min(k, max(0, values.shape[0] - 1)),
                          float(cos.std(ddof=1)) if len(cos) > 1 else 0.0)


class FeatureExtraction(Task):
    """Hidden states, or a pooled (optionally normalised) sentence embedding."""

    name: ClassVar[str] = "feature_extraction"
    pipeline_tag: ClassVar[str | None] = "feature-extraction"
    # An embedding is a mean of hidden states, so it inherits the hidden bound; normalised
    # embeddings are unit vectors and move less than that.
    tolerances: ClassVar[dict[str, dict[str, float]]] = {
        "fp32": {"hidden": 1e-4, "pooled": 1e-4, "embedding": 1e-4},
        "fp16": {"hidden": 6e-2, "pooled": 2e-2, "embedding": 6e-2},
    }

    def __init__(self, pooling: str = "none", normalize: bool = False, pooling_in_graph: bool = True) -> None:
        if pooling not in POOLING_MODES:
            raise ConversionError(f"pooling {pooling!r}: expected one of {', '.join(POOLING_MODES)}")
        if pooling == "none" and normalize:
            raise ConversionError("normalize needs a pooling mode (cls, mean or max)")
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.pooling_in_graph = bool(pooling_in_graph) and pooling != "none"

    @property
    def head_prefixes(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("pooler.",) if self.pooling == "none" else ()

    @classmethod
    def detect(cls, weights: Any) -> bool:
        return True

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any] | None, source: str = "<task>") -> FeatureExtraction:
        settings = dict(settings or {})
        pooling = settings.get("pooling", "none")
        normalize = settings.get("normalize", False)
        in_graph = settings.get("pooling_in_graph", pooling != "none")
        if pooling not in POOLING_MODES or not isinstance(normalize, bool) or not isinstance(in_graph, bool) or (
                pooling == "none" and normalize):
            raise ModelFileError(f"{source}: pack task_config {settings!r}: expected pooling in "
                                 f"{list(POOLING_MODES)} and boolean normalize / pooling_in_graph")
        return cls(pooling, normalize, in_graph)

    def settings(self) -> dict[str, Any]:
        if self.pooling == "none":
            return {}
        return {"pooling": self.pooling, "normalize": self.normalize, "pooling_in_graph": self.pooling_in_graph}

    @property
    def required_weights(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("pooler.kernel", "pooler.bias") if self.pooling == "none" else ()

    def check_weights(self, weights: Any) -> None:
        """Pooling "none" returns the tanh pooler's output, which DistilBERT, ELECTRA and many sentence
        encoders do not have: the error then says which pooling converts the checkpoint."""
        if self.pooling == "none" and "pooler.kernel" not in weights.tensors:
            raise ConversionError(f"{weights.source}: this {weights.config.model_type} checkpoint has no pooler "
                                  "(pooler.kernel), which --pooling none returns; convert it with --pooling cls, "
                                  "mean or max")
        super().check_weights(weights)

    def outputs(self) -> tuple[str, ...]:
        if self.pooling == "none":
            return ("last_hidden_state", "pooled_output")
        return ("sentence_embedding",) if self.pooling_in_graph else ("last_hidden_state",)

    def output_shapes(self, config: Any, weights: Any) -> dict[str, list[str | int]]:
        h = int(config.hidden_size)
        shapes: dict[str, list[str | int]] = {"last_hidden_state": ["batch", "sequence", h], "pooled_output": ["batch", h],
                                              "sentence_embedding": ["batch", h]}
        return {name: shapes[name] for name in self.outputs()}

    # ------------------------------------------------------------------ the head
    def head(self, ops: Any, sequence: Any, attention_mask: Any) -> dict[str, Any]:
        """BERT's pooler beside the hidden states ("none"), the hidden states alone (pooled by the
        runtime), or the pooled, optionally normalised sentence embedding."""
        if self.pooling == "none":
            pooled = pooler_activation(ops, ops.dense(ops.first_token(sequence), "pooler"), name="pooled_output")
            return {"last_hidden_state": sequence, "pooled_output": pooled}
        if not self.pooling_in_graph:
            return {"last_hidden_state": sequence}
        if self.pooling == "cls":
            x = ops.first_token(sequence)
        elif self.pooling == "mean":
            x = ops.masked_mean(sequence, attention_mask)
        else:
            x = ops.masked_max(sequence, attention_mask)
        if self.normalize:
            x = ops.l2_normalize(x)
        return {"sentence_embedding": ops.named(x, "sentence_embedding")}

    # ------------------------------------------------------------------ post-processing and judging
    def embeddings(self, outputs: Mapping[str, np.ndarray], attention_mask: np.ndarray) -> np.ndarray:
        """[batch, H] float64 sentence embeddings from one run's outputs (pooled here unless the graph did).

        A pack without pooling ("none") is mean-pooled, sentence-transformers' default. A .tflite
        of such a pack also has a ``sentence_embedding`` output, added for MediaPipe only
        (convert/mediapipe_embedding.py); it is not read here, so the pack's pooling stays where it says.
        """
        if self.pooling_in_graph and "sentence_embedding" in outputs:
            return np.asarray(outputs["sentence_embedding"], dtype=np.float64)
        x = pool(outputs["last_hidden_state"], attention_mask, "mean" if self.pooling == "none" else self.pooling)
        return l2_normalize(x) if self.normalize else x

    def parity_expected(self, reference: Any, attention_mask: np.ndarray) -> dict[str, np.ndarray]:
        expected = {"hidden": reference.last_hidden_state}
        if self.pooling == "none":
            expected["pooled"] = reference.pooled_output
        elif self.pooling_in_graph:
            x = pool(reference.last_hidden_state, attention_mask, self.pooling)
            expected["embedding"] = l2_normalize(x) if self.normalize else x
        return expected

    @property
    def parity_required(self) -> tuple[str, ...]:
        if self.pooling == "none":
            return ("hidden", "pooled")
        return ("embedding",) if self.pooling_in_graph else ("hidden",)

    def judged_values(self, outputs: Mapping[str, np.ndarray], attention_mask: np.ndarray) -> np.ndarray:
        return self.embeddings(outputs, attention_mask)

    def drift(self, values: np.ndarray, baseline: np.ndarray, labels: np.ndarray | None = None) -> EmbeddingDrift:
        return embedding_drift(values, baseline)

    def interpret(self, outputs: Mapping[str, np.ndarray], labels: Sequence[str] | None) -> dict[str, Any]:
        """The sentence embedding of one text (batch 1 at its real length: every position is real)."""
        hidden = outputs.get("last_hidden_state")
        mask = np.ones((1, 1 if hidden is None else np.asarray(hidden).shape[1]), np.int32)
        return {"embedding": [round(float(v), 7) for v in self.embeddings(outputs, mask)[0]]}
