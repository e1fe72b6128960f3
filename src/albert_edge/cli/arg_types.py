"""argparse ``type=`` converters shared by subcommands: every numeric option is read through one.

Each converter checks a range from ``albert_edge.inputs.option_ranges`` (the same ranges the option
objects check), so a NaN, zero, negative or 400-digit value is one usage line and exit 2 before
any library sees it. ``tests/test_cli_numeric_options.py`` fails when an option uses a bare
``int``/``float``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from albert_edge.inputs import option_ranges as ranges
from albert_edge.inputs.option_ranges import NumberRange


def number_in(allowed: NumberRange, name: str) -> Callable[[str], int | float]:
    """An argparse converter reading one number in ``allowed``; ``name`` shows in ``--help`` errors."""

    def convert(text: str) -> int | float:
        try:
            return allowed.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name
    convert.range = allowed  # type: ignore[attr-defined]  # read by the walking test
    return convert


positive_int = number_in(ranges.COUNT, "positive_int")
count_or_zero = number_in(ranges.COUNT_OR_ZERO, "count_or_zero")
threads = number_in(ranges.THREADS, "threads")
batch_size = number_in(ranges.BATCH_SIZE, "batch_size")
seq_len = number_in(ranges.SEQ_LEN, "seq_len")
model_seq_len = number_in(ranges.MODEL_SEQ_LEN, "model_seq_len")
fallback_steps = number_in(ranges.FALLBACK_STEPS, "fallback_steps")
seed = number_in(ranges.SEED, "seed")
stride = number_in(ranges.STRIDE, "stride")
accuracy_points = number_in(ranges.ACCURACY_POINTS, "accuracy_points")
share = number_in(ranges.SHARE, "share")
share_below_one = number_in(ranges.SHARE_BELOW_ONE, "share_below_one")
open_share = number_in(ranges.OPEN_SHARE, "open_share")
cosine = number_in(ranges.COSINE, "cosine")
logit_margin = number_in(ranges.LOGIT_MARGIN, "logit_margin")
size_mb = number_in(ranges.SIZE_MB, "size_mb")
seconds = number_in(ranges.SECONDS, "seconds")
learning_rate = number_in(ranges.LEARNING_RATE, "learning_rate")
weight_decay = number_in(ranges.WEIGHT_DECAY, "weight_decay")
epochs = number_in(ranges.EPOCHS, "epochs")
head_groups = number_in(ranges.HEAD_GROUPS, "head_groups")


def _int_list(text: str, allowed: NumberRange, what: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected comma-separated integers, e.g. 1,2,4") from None
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive integers")
    if not all(allowed.admits(v) for v in values):
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected {what}")
    return values


def positive_int_list(text: str) -> list[int]:
    """``"1,2,4"`` → ``[1, 2, 4]`` thread counts; argparse turns the error into one usage line."""
    return _int_list(text, ranges.THREADS, f"positive integers, each {ranges.THREADS.expected()}")


positive_int_list.range = ranges.THREADS  # type: ignore[attr-defined]


def seq_len_list(text: str) -> list[int | str]:
    """``"real,128"`` → ``["real", 128]``: positive integers and/or ``real``."""
    values: list[int | str] = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        if item == "real":
            values.append("real")
        elif item.isdigit() and len(item) < 7 and ranges.SEQ_LEN.admits(int(item)):
            values.append(int(item))
        else:
            raise argparse.ArgumentTypeError(f"{item[:40]!r}: expected a positive integer or 'real' "
                                             f"(integers at most {ranges.SEQ_LEN.high:g})")
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive integers and/or 'real'")
    return values


seq_len_list.range = ranges.SEQ_LEN  # type: ignore[attr-defined]
