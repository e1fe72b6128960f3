"""``QuantizeOptions``: what ``quantize_checkpoint`` builds, how it judges and times, and the budget.

The options check themselves when made (and again when ``dataclasses.replace`` changes one), so a
bad value is refused with one line naming its flag before any file is read or written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from albert_edge.inputs import option_ranges as ranges
from albert_edge.errors import QuantizationError
from albert_edge.quantize.auto import Budget

if TYPE_CHECKING:
    from albert_edge.convert.tf_graph import GraphOptions
    from albert_edge.tasks import Task

MODES = ("dynamic", "int8", "int16x8", "fp16", "auto")
#: The int4-weight variants (issue #28): in no mode's list, as on x86 they buy size, not speed
#: (benchmarks/decisions/0010-int4-weights-and-onnx-int8.md); built when named in ``variants`` / ``--variants``,
#: and by auto's size search when ``max_size_mb`` rules int8 out (decisions/0151-int4-in-auto.md).
INT4_VARIANTS = ("dynamic_int4", "onnx_int4")
#: What ``auto`` ranks the variants within budget by (``--prefer``): latency, or the shipped file's size.
PREFER = ("speed", "size")
FORMATS = ("tflite", "onnx")


def parse_formats(formats: str | Iterable[str]) -> tuple[str, ...]:
    """"tflite,onnx" or an iterable -> validated, de-duplicated tuple in the given order."""
    items = [f.strip().lower() for f in (formats.split(",") if isinstance(formats, str) else formats) if f.strip()]
    bad = [f for f in items if f not in FORMATS]
    if bad or not items:
        raise QuantizationError(f"--formats {','.join(items) or '(empty)'}: expected a comma list of {', '.join(FORMATS)}")
    return tuple(dict.fromkeys(items))


@dataclass(frozen=True)
class QuantizeOptions:
    """What ``quantize_checkpoint`` builds, how it judges and times, and the budget it chooses by.

    ``mode="auto"`` starts from the fastest quantized variants, falls back the worst-ranked int8
    ops to float until drift fits the budget, and marks the fastest variant within budget as
    chosen. ``variants`` overrides the mode's TFLite variant list (benchmarks build them all), and
    its ``onnx_``-prefixed names the ONNX list (``onnx_int4``, ``onnx_dynamic_int8_col``, ...);
    ``max_eval_examples`` judges on the first N eval rows only; ``judge_subsample`` (default) judges
    each variant on seeded rows that grow until the budget is decided (``sequential_judge``), False
    on every row. ``task`` (default: detected from
    the weights and a sentence-transformers folder) decides what drift is judged on: logits for a
    classifier (``max_drop``, ``min_agreement``, ``confidence``), sentence embeddings for feature
    extraction (cosine to fp32: ``min_cosine`` for the worst text, ``min_mean_cosine`` for the
    mean; ``eval_tsv`` is then a text file, one text per line). ``formats`` (default: TFLite and
    ONNX, as ``convert``'s) is normalised to a tuple when the options are made. ``prefer="size"``
    makes auto choose the smallest file within budget instead of the fastest; with ``max_size_mb``
    below the int8 file's size, auto also builds the int4 and mixed 4/8 candidates (``size_search``).
    ``attention_head_groups`` writes every TFLite variant's attention for that many groups of heads in turn
    (``GraphOptions.attention_head_groups``, record 0300): less memory at 128 tokens, more ops to run; the
    builds read it through ``graph_options``.
    """

    mode: str = "auto"
    max_drop: float = 0.5
    eval_tsv: str | os.PathLike[str] | None = None
    formats: str | Iterable[str] = FORMATS  # both, as ConvertOptions
    labels: Sequence[str] | None = None
    vocab: str | os.PathLike[str] | None = None
    max_seq_len: int | None = None  # None: 128 capped at the checkpoint's positions (fit_max_seq_len)
    num_threads: int = 2
    seq_len: int = 128
    rounds: int = 30
    min_agreement: float = 0.99
    max_size_mb: float | None = None
    max_fallback_steps: int = 5
    variants: Sequence[str] | None = None
    max_eval_examples: int | None = None
    confidence: float = 0.95
    task: Task | str | None = None
    min_cosine: float = 0.995
    min_mean_cosine: float = 0.999
    tie_margin: float = 0.1
    error_tables: bool = True
    prefer: str = "speed"
    judge_subsample: bool = True
    attention_head_groups: int = 1

    def __post_init__(self) -> None:
        """Refuse a value no run could use, with the flag's name (QuantizationError, one line)."""
        if self.mode not in MODES:
            raise QuantizationError(f"--mode {self.mode!r}: expected one of {', '.join(MODES)}")
        if self.prefer not in PREFER:
            raise QuantizationError(f"--prefer {self.prefer!r}: expected one of {', '.join(PREFER)}")
        if not (isinstance(self.max_drop, (int, float)) and 0 <= self.max_drop <= 100):
            raise QuantizationError(f"--max-drop {self.max_drop!r}: expected accuracy points between 0 and 100")
        object.__setattr__(self, "formats", parse_formats(self.formats))
        for name, value in (("--min-cosine", self.min_cosine), ("--min-mean-cosine", self.min_mean_cosine)):
            if not (isinstance(value, (int, float)) and -1 <= value <= 1):
                raise QuantizationError(f"{name} {value!r}: expected a cosine between -1 and 1")
        if not (isinstance(self.tie_margin, (int, float)) and self.tie_margin >= 0):
            raise QuantizationError(f"--tie-margin {self.tie_margin!r}: expected a logit margin >= 0 "
                                    "(0 turns the rule off)")
        self._check_ranges()
        self._check_variants()

    def _check_variants(self) -> None:
        """``--variants``: known names, each once, at least one; refused before any model is read
        (a misspelt name would otherwise be one error row in a run that exits 0)."""
        if self.variants is None:
            return
        from albert_edge.quantize.onnx_quant import ONNX_VARIANTS
        from albert_edge.quantize.tflite_quant import VARIANTS

        names = list(self.variants)
        known = (*VARIANTS, *ONNX_VARIANTS)
        if not names:
            raise QuantizationError(f"--variants: empty; name one or more of {', '.join(known)} (or leave the flag out "
                                    "for the mode's list)")
        unknown = [name for name in names if name not in known]
        if unknown:
            raise QuantizationError(f"--variants {','.join(unknown)}: unknown; expected names from {', '.join(known)}")
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise QuantizationError(f"--variants: {', '.join(repeated)} named twice; name each variant once")

    def _check_ranges(self) -> None:
        """The ranges the CLI's converters check too (``option_ranges``): NaN, 0 rounds, a negative
        size or fallback count, a confidence of 1.5 are refused here, not deep in a search."""
        for flag, value, allowed in (
                ("--max-drop", self.max_drop, ranges.ACCURACY_POINTS), ("--min-agreement", self.min_agreement, ranges.SHARE),
                ("--confidence", self.confidence, ranges.OPEN_SHARE), ("--tie-margin", self.tie_margin, ranges.LOGIT_MARGIN),
                ("--max-fallback-steps", self.max_fallback_steps, ranges.FALLBACK_STEPS),
                ("--max-size-mb", self.max_size_mb, ranges.SIZE_MB), ("--max-seq-len", self.max_seq_len, ranges.MODEL_SEQ_LEN),
                ("seq_len", self.seq_len, ranges.SEQ_LEN), ("--threads", self.num_threads, ranges.THREADS),
                ("--rounds", self.rounds, ranges.COUNT), ("max_eval_examples", self.max_eval_examples, ranges.COUNT),
                ("--attention-head-groups", self.attention_head_groups, ranges.HEAD_GROUPS)):
            ranges.check_optional(flag, value, allowed, QuantizationError)

    @property
    def format_list(self) -> tuple[str, ...]:
        """``formats`` as the validated tuple ``__post_init__`` stored (typed for the steps that loop over it)."""
        return tuple(self.formats)

    def graph_options(self) -> GraphOptions:
        """The TFLite graph options every variant of the run is converted from (each recipe then picks its
        batch dimension: ``tflite_quant.variant_graph``)."""
        from albert_edge.convert.tf_graph import GraphOptions

        return GraphOptions(attention_head_groups=self.attention_head_groups)

    def budget(self) -> Budget:
        """The budget the auto choice and the ``meets_budget`` marks are judged by."""
        return Budget(float(self.max_drop), float(self.min_agreement),
                      None if self.max_size_mb is None else int(self.max_size_mb * 1e6), float(self.confidence),
                      float(self.min_cosine), float(self.min_mean_cosine), float(self.tie_margin))
