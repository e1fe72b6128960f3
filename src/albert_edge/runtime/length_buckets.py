"""Length buckets: one interpreter per padded width, so a new text length never reshapes a graph.

Why: an interpreter fed [1, 46] after [1, 31] re-prepares its XNNPACK runtime for the new shape,
and that costs more than the work it saves on short texts (benchmarks/suites/speed_goals.py: the
sample's int8 file at the test set's real lengths ran at ~0.5x of its pad-to-128 time while the
same length repeated ran at ~0.38x). A text is instead padded up to the smallest bucket width
that holds it and runs on that bucket's own interpreter, whose shape never changes after its
first call. Padding is masked (attention mask 0, the tokenizer's pad id, segment 0), so only
positions past the text change, and per-position outputs are cut back to the fed length.

The price is memory: each bucket holds its own tensor arena and XNNPACK's packed weights
(about 8 MB per bucket for the sample's int8 file, 20 MB for fp32), so buckets are opt-in
(``length_buckets=`` on the runtime classes) and interpreters are built on a bucket's first use.
Batches wider than one, files without an ``attention_mask`` input and lengths past the last
bucket run on a general interpreter that resizes as before.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from albert_edge.errors import BackendError
from albert_edge.runtime.backends import Backend

# Defaults for ``length_buckets=True``: finer where texts are short (most of them), coarse above.
DEFAULT_BUCKETS: tuple[int, ...] = (16, 32, 48, 64, 96, 128)
MASK_INPUT = "attention_mask"


def checked_buckets(buckets: Sequence[int] | bool | None, max_seq_len: int) -> tuple[int, ...]:
    """Sorted bucket widths within 1..max_seq_len (True: DEFAULT_BUCKETS cut to max_seq_len); () when off."""
    if buckets is None or buckets is False:
        return ()
    if buckets is True:
        widths = [w for w in DEFAULT_BUCKETS if w < max_seq_len] + [max_seq_len]
    else:
        try:
            widths = [int(w) for w in buckets]
        except (TypeError, ValueError):
            raise BackendError(f"length_buckets {buckets!r}: expected a list of positive ints") from None
    if not widths or any(w < 1 or w > max_seq_len for w in widths):
        raise BackendError(f"length_buckets {list(widths)}: expected widths in 1..{max_seq_len} (the model's max_seq_len)")
    return tuple(sorted(set(widths)))


class BucketedBackend(Backend):
    """A Backend that runs batch-1 inputs padded to a bucket width, on one interpreter per width."""

    def __init__(self, factory: Callable[[], Backend], buckets: Sequence[int], pad_id: int = 0) -> None:
        self._factory = factory
        self.buckets = tuple(buckets)
        self._pad_id = pad_id
        self.general = factory()
        self.name = self.general.name
        self.num_threads = self.general.num_threads
        self.source = self.general.source
        self.input_names = self.general.input_names
        self.output_names = self.general.output_names
        self._by_width: dict[int, Backend] = {}

    def width_for(self, length: int) -> int | None:
        """The bucket a [1, length] input runs in, or None (the general interpreter)."""
        return next((w for w in self.buckets if w >= length), None)

    def interpreters(self) -> int:
        """How many interpreters exist now (the general one and the buckets used so far)."""
        return 1 + len(self._by_width)

    def _run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        ids = np.asarray(inputs[self.input_names[0]])
        batch, length = ids.shape[0], ids.shape[-1]
        width = self.width_for(length) if batch == 1 and ids.ndim == 2 and MASK_INPUT in self.input_names else None
        if width is None:
            return self.general.run(inputs)
        backend = self._by_width.get(width)
        if backend is None:
            backend = self._by_width[width] = self._factory()
        padded = {}
        for name in self.input_names:
            value = np.asarray(inputs[name], np.int32)
            fill = self._pad_id if name == "input_ids" else 0
            out = np.full((1, width), fill, np.int32)
            out[:, :length] = value
            padded[name] = out
        result = backend.run(padded)
        # Per-position outputs ([1, width, ...]) are cut back to the text; pooled ones stay as they are.
        return {k: (v[:, :length] if v.ndim >= 3 and v.shape[1] == width else v) for k, v in result.items()}

    def ops_info(self) -> dict[str, Any]:
        info = self.general.ops_info()
        info["length_buckets"] = list(self.buckets)
        info["interpreters"] = self.interpreters()
        return info
