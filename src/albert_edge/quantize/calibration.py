"""Calibration text -> the int32 encoder inputs a representative dataset yields.

Calibration must see what the deployed model sees: text tokenized by the model's own
tokenizer into int32 ``input_ids`` / ``attention_mask`` / ``token_type_ids``. Feeding float
ids, or random ids, calibrates activation ranges on inputs the model never gets (the known
trap in TFLite full-integer tutorials), so this module is the only way calibration data is made.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from albert_edge.errors import AlbertEdgeError, DataError
from albert_edge.tokenizer import batch_one

#: Fewer texts than this cannot estimate activation ranges of 4 shared layers reliably.
MIN_CALIBRATION_TEXTS = 16
#: More than this adds conversion time without moving the ranges.
MAX_CALIBRATION_TEXTS = 200
INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


@dataclass(frozen=True)
class CalibrationSet:
    """Encoded calibration samples, one batch-1 dict per text: name -> int32 ``[1, seq]``."""

    samples: tuple[dict[str, np.ndarray], ...]
    source: str

    def __len__(self) -> int:
        return len(self.samples)

    def representative_dataset(self) -> Iterator[dict[str, np.ndarray]]:
        """Generator for ``TFLiteConverter.representative_dataset`` (keyed by signature input name)."""
        for sample in self.samples:
            yield {name: sample[name] for name in INPUT_NAMES}

    def padded_samples(self) -> list[dict[str, np.ndarray]]:
        """The samples a batch-one graph is calibrated on: padded (attention_mask 0) to the longest, and only as
        many as hold the real tokens of the whole set, the longest first, in their order in the set.

        Why padded: TensorFlow's calibrator resizes the inputs one at a time and allocates the graph after each,
        and the batch-one graph checks its shapes at allocation, so a sample of a new length meets a mask of the
        old one ("[1,12,80,80] and [1,1,1,18] are not broadcastable", record 0291). Why fewer: every padded
        sample costs the longest one's compute; all 200 of the sample's texts (59 tokens on average, 128 the
        longest) took int8_fc's conversion from 23.7 to 50.0 CPU s and auto on the sample from 45 to 68 s
        (record 0295). The longest texts waste the least padding, so keeping them (the real tokens' worth of
        padded samples) holds the conversion at the unpadded cost while the ranges still see every position up
        to the longest; the judge measures the variant it gives, as any other.
        """
        width, kept = self.padded_indices()
        return [{name: np.pad(self.samples[i][name], ((0, 0), (0, width - self.samples[i][name].shape[1])))
                 for name in INPUT_NAMES} for i in kept]

    def padded_indices(self) -> tuple[int, list[int]]:
        """(the padded width, the indices ``padded_samples`` keeps, in order); (0, []) for no samples."""
        lengths = [s["input_ids"].shape[1] for s in self.samples]
        if not lengths:
            return 0, []
        width = max(lengths)
        keep = min(len(lengths), -(-sum(lengths) // width))
        return width, sorted(sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))[:keep])

    def padded_dataset(self) -> Iterator[dict[str, np.ndarray]]:
        """``representative_dataset`` for a batch-one graph: ``padded_samples``."""
        yield from self.padded_samples()

    def ordered_dataset(self, order: Sequence[str]):
        """A generator factory yielding ``padded_samples`` as lists in ``order`` (the QuantizationDebugger binds
        by position).

        The debugger sizes its interpreter on the first sample only, so the samples share one width; its error
        tables run each through the float and the quantized graph, so they take the set the calibration took.
        """
        def generate() -> Iterator[list[np.ndarray]]:
            for sample in self.padded_samples():
                yield [sample[name] for name in order]
        return generate


def read_calibration_texts(path: str | os.PathLike[str], min_texts: int = MIN_CALIBRATION_TEXTS) -> list[str]:
    """Texts of a ``.txt`` (one per line) or ``.tsv`` (label<TAB>text[<TAB>text_b]; text_a used) file.

    Raises DataError when the file is unreadable, not UTF-8, or holds fewer than ``min_texts`` texts.
    """
    from albert_edge.inputs.data import NumberedText, read_text_lines, read_tsv

    path = Path(path)
    if not path.is_file():
        raise DataError(f"{path}: calibration file does not exist or is not a file")
    if path.suffix.lower() == ".tsv":
        texts = [NumberedText(ex.text_a, ex.line) for ex in read_tsv(path)]
    else:
        texts = read_text_lines(path)
    if len(texts) < min_texts:
        raise DataError(f"{path}: {len(texts)} calibration texts, expected at least {min_texts} non-blank lines")
    return texts


def encode_calibration(texts: Sequence[str], preprocessor, source: str = "<calibration>",
                       max_texts: int = MAX_CALIBRATION_TEXTS) -> CalibrationSet:
    """Tokenize ``texts`` with the model's ``Preprocessor`` at their real lengths (no padding)."""
    samples = []
    for number, text in enumerate(texts[:max_texts], start=1):
        try:
            enc = preprocessor.encode(text)
        except AlbertEdgeError as exc:
            # Texts read from a file know their line (blank lines and the calibration/judge split
            # make the position in the list a different number); others are named by position.
            line = getattr(text, "line", None)
            where = f"{source}:{line}" if line else f"{source}: text {number}"
            raise DataError(f"{where}: {exc}") from None
        samples.append(batch_one(enc))
    return CalibrationSet(tuple(samples), source)
