"""The legal range of every numeric option, defined once for the CLI and the Python API.

``cli/arg_types.py`` turns each range into an argparse converter (a bad value is one usage line,
exit 2), and the option objects (``ConvertOptions``, ``QuantizeOptions``, ``BenchOptions``, the
finetune and pretrain settings) check the same range when made, so no NaN, zero, negative or
absurdly large number reaches TensorFlow, LiteRT or ONNX Runtime from either door. Upper bounds
are generous but finite: a 400-digit integer is a typo, not a request.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from albert_edge.errors import AlbertEdgeError, DataError


@dataclass(frozen=True)
class NumberRange:
    """An int or finite-float interval; ``low_open``/``high_open`` exclude the end itself."""

    integer: bool
    low: float
    high: float
    low_open: bool = False
    high_open: bool = False

    def expected(self) -> str:
        """The phrase a refusal ends with, e.g. ``an integer in 1..256``."""
        if self.integer:
            if self.low == 1:
                return f"a positive integer (at most {int(self.high)})"
            return f"an integer in {int(self.low)}..{int(self.high)}"
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"a finite number in {left}{self.low:g}, {self.high:g}{right}"

    def admits(self, value: object) -> bool:
        """Whether ``value`` (already a number) lies in the range; bools and NaN never do."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.integer and not isinstance(value, int):
            return False
        if isinstance(value, float) and not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def parse(self, text: str) -> int | float:
        """``text`` as a number in the range; ``ValueError`` with the expected phrase otherwise."""
        try:
            value: int | float = int(text.strip()) if self.integer else float(text)
        except ValueError:
            raise ValueError(f"{text!r}: expected {self.expected()}") from None
        if not self.admits(value):
            raise ValueError(f"{text[:40]!r}: expected {self.expected()}")
        return value


def check(flag: str, value: object, allowed: NumberRange, error: type[AlbertEdgeError] = DataError) -> None:
    """Raise ``error`` (one line naming ``flag``) unless ``value`` is in ``allowed``."""
    if not allowed.admits(value):
        raise error(f"{flag} {str(value)[:40]}: expected {allowed.expected()}")


def check_optional(flag: str, value: object, allowed: NumberRange,
                   error: type[AlbertEdgeError] = DataError) -> None:
    """``check``, with None meaning "the default" and always accepted."""
    if value is not None:
        check(flag, value, allowed, error)


_BIG = 10**9

#: Interpreter / TensorFlow threads: LiteRT segfaults and ONNX Runtime hangs far above this.
THREADS = NumberRange(True, 1, 256)
#: Texts per call or per training step.
BATCH_SIZE = NumberRange(True, 1, 65536)
#: Tokens per sequence (the tokenizer's length, a benchmark's padded width).
SEQ_LEN = NumberRange(True, 1, 65536)
#: A model's max_seq_len: [CLS] x [SEP] needs three.
MODEL_SEQ_LEN = NumberRange(True, 3, 65536)
#: Groups of attention heads a TFLite graph computes in turn (XNNPACK splits and concatenates at most 4 parts).
HEAD_GROUPS = NumberRange(True, 1, 4)
#: Counts of repetitions: timed runs, rounds, steps, evaluations, examples.
COUNT = NumberRange(True, 1, _BIG)
#: Counts where 0 means "none": warmup calls, texts counted, calibration texts, fallback steps.
COUNT_OR_ZERO = NumberRange(True, 0, _BIG)
#: float-fallback steps of quantize auto (each doubles the ops kept float).
FALLBACK_STEPS = NumberRange(True, 0, 64)
#: Random seeds (NumPy's and TensorFlow's accept 32 bits).
SEED = NumberRange(True, 0, 2**32 - 1)
#: Tokens shared by consecutive windows (the runtime checks it against the window).
STRIDE = NumberRange(True, 0, 65536)
#: Accuracy points a variant may lose.
ACCURACY_POINTS = NumberRange(False, 0, 100)
#: A share of predictions, or a weight between two losses.
SHARE = NumberRange(False, 0, 1)
#: A share that must leave something: warmup share of the steps, dropout rate.
SHARE_BELOW_ONE = NumberRange(False, 0, 1, high_open=True)
#: A probability that must be strictly inside (0, 1): a confidence level, a mask rate, a precision.
OPEN_SHARE = NumberRange(False, 0, 1, low_open=True, high_open=True)
#: A cosine similarity.
COSINE = NumberRange(False, -1, 1)
#: A logit margin (0 turns the tie rule off).
LOGIT_MARGIN = NumberRange(False, 0, 1e6)
#: Megabytes of a model file.
SIZE_MB = NumberRange(False, 0, 1e7, low_open=True)
#: Seconds of wall time.
SECONDS = NumberRange(False, 0, 1e7, low_open=True)
#: AdamW's peak learning rate (0 leaves the weights as they are: a smoke run of the data path).
LEARNING_RATE = NumberRange(False, 0, 10)
#: AdamW's decoupled weight decay.
WEIGHT_DECAY = NumberRange(False, 0, 1)
#: The global gradient norm training clips to.
CLIP_NORM = NumberRange(False, 0, 1e6, low_open=True)
#: Training epochs (fractions allowed: 0.5 is half the data once).
EPOCHS = NumberRange(False, 0, 1e6, low_open=True)
