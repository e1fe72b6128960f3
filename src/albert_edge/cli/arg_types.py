"""argparse ``type=`` converters shared by subcommands, so `bench` and `demo` read lists alike."""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """``"4"`` → ``4``; zero, negatives and non-numbers become one argparse usage line."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a positive integer")
    return value


def positive_int_list(text: str) -> list[int]:
    """``"1,2,4"`` → ``[1, 2, 4]``; argparse turns the error into one usage line."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected comma-separated integers, e.g. 1,2,4") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected positive integers")
    return values


def seq_len_list(text: str) -> list[int | str]:
    """``"real,128"`` → ``["real", 128]``: positive integers and/or ``real``."""
    values: list[int | str] = []
    for item in (x.strip() for x in text.split(",") if x.strip()):
        if item == "real":
            values.append("real")
        elif item.isdigit() and int(item) > 0:
            values.append(int(item))
        else:
            raise argparse.ArgumentTypeError(f"{item!r}: expected a positive integer or 'real'")
    return values
