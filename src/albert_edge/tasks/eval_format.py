"""How a task reads an eval file in its own labelled format, as one object the task holds.

Quantize and bench judge a variant on an eval file: either the task's own labelled format (a
classifier's TSV, a NER or QA ``.jsonl``: samples plus gold values) or plain texts judged against
fp32 only. What the format is -- which files it claims, the label names they define, how they
become samples -- is data about the file, not about the head, so it lives here rather than as
methods of ``Task``: a task holds one ``EvalFormat`` (``Task.eval_format``) and a task without a
labelled format holds this default, which claims ``.jsonl`` files and reads none of them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

#: Judge samples (batch-1 int32 inputs) and their gold values, in ``Task.judged_values`` row order.
Samples = tuple[list[dict[str, np.ndarray]], np.ndarray]


class EvalFormat:
    """The default: a ``.jsonl`` eval file is the task's own format, and the task reads none."""

    #: What quantize's report calls an eval file in the task's own labelled format, and the
    #: judge set when no eval file is given (texts judged against fp32 only).
    labelled_kind: ClassVar[str] = "labelled task file (.jsonl)"
    unlabelled_kind: ClassVar[str] = "unlabelled texts"

    def reads_labelled(self, path: Any) -> bool:
        """Whether an eval file at ``path`` is in the task's own labelled format (``labelled_samples``)
        rather than plain texts judged against fp32: a ``.jsonl`` unless the format says otherwise."""
        return str(path).lower().endswith(".jsonl")

    def labels_from_eval(self, path: Any) -> list[str] | None:
        """Label names an eval file defines (read early, so a bad file fails before any output);
        None when the task takes its names only from the checkpoint."""
        return None

    def labelled_samples(self, path: Any, tokenizer: Any, max_seq_len: int, labels: tuple[str, ...] | None = None,
                         max_examples: int | None = None) -> Samples | None:
        """Judge samples and gold values from an eval file in this format (``reads_labelled``), gold
        label ids in the order of ``labels`` (the task's bound label names); None when the task has
        no such format."""
        return None
