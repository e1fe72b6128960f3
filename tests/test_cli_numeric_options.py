"""Every numeric option of every subcommand goes through a range-checked converter (issue #27).

The walk fails when an option with a numeric meaning uses a bare ``int``/``float`` (which lets
NaN, 0, -1 and 400-digit numbers through to TensorFlow / LiteRT / ONNX Runtime); the properties
feed each option random out-of-range, non-finite and huge values and require exit 2 with exactly
one stderr line naming the option, never exit 1 or a traceback.
"""

from __future__ import annotations

import argparse
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from albert_edge.cli import build_parser, main
from albert_edge.inputs.option_ranges import NumberRange

#: What each subcommand needs besides the option under test (parsing stops at the bad value).
REQUIRED: dict[str, list[str]] = {
    "inspect": ["ckpt"], "convert": ["ckpt", "--out", "o"], "quantize": ["ckpt", "--calib", "c"],
    "predict": ["m.tflite"], "embed": ["m.tflite"], "bench": [], "demo": [],
    "pretrain": ["--out", "o", "--text", "t", "--heldout", "h"],
    "finetune": ["--out", "o", "--train", "t", "--dev", "d"],
    "data snownlp": ["--out", "o"], "data stats": ["f.tsv"], "android-assets": [], "arm-check": ["m", "--eval", "e"],
    "card": ["o"], "repack": ["m.tflite", "--from", "x.tflite", "--out", "o.tflite"],
}


def _subparsers(parser: argparse.ArgumentParser, prefix: str = ""):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                full = f"{prefix} {name}".strip()
                nested = list(_subparsers(sub, full))
                yield from nested or [(full, sub)]


def _options():
    """(command, option string, its range) for every option read through a range converter."""
    for command, sub in _subparsers(build_parser()):
        for action in sub._actions:
            allowed = getattr(action.type, "range", None)
            if allowed is not None and action.option_strings:
                yield command, action.option_strings[0], allowed


OPTIONS = sorted(_options(), key=lambda row: (row[0], row[1]))


def test_every_command_is_walked():
    assert {command for command, _ in _subparsers(build_parser())} == set(REQUIRED)


def test_no_option_reads_a_number_with_a_bare_int_or_float():
    bare = []
    for command, sub in _subparsers(build_parser()):
        for action in sub._actions:
            numeric_default = isinstance(action.default, (int, float)) and not isinstance(action.default, bool)
            unchecked = action.type in (int, float) or (numeric_default and not hasattr(action.type, "range"))
            if unchecked and not isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction,
                                                     argparse._CountAction)):
                bare.append(f"{command} {action.option_strings or action.dest}")
    assert bare == []


def test_every_default_lies_in_its_own_range():
    outside = []
    for command, sub in _subparsers(build_parser()):
        for action in sub._actions:
            allowed = getattr(action.type, "range", None)
            defaults = action.default if isinstance(action.default, (list, tuple)) else [action.default]
            for value in defaults:
                if allowed is not None and isinstance(value, (int, float)) and not allowed.admits(value):
                    outside.append(f"{command} {action.option_strings[0]}={value}")
    assert outside == []


def _bad_values(allowed: NumberRange) -> st.SearchStrategy[str]:
    """Text that ``allowed`` must refuse: below, above, non-finite, huge, or a fraction for an int."""
    fixed = st.sampled_from(["nan", "inf", "-inf", "1e400", "9" * 400, "-" + "9" * 400, "", "x"])
    if allowed.integer:
        low, high = int(allowed.low), int(allowed.high)
        numbers = st.integers(max_value=low - 1) | st.integers(min_value=high + 1)
        return fixed | numbers.map(str) | st.sampled_from([f"{low}.5", "1e3"])
    below = st.floats(max_value=allowed.low, exclude_max=not allowed.low_open, allow_nan=False)
    above = st.floats(min_value=allowed.high, exclude_min=not allowed.high_open, allow_nan=False)
    return fixed | (below | above).map(repr)


def _run(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code or 0)


@pytest.mark.parametrize(("command", "option", "allowed"), OPTIONS, ids=[f"{c}{o}" for c, o, _ in OPTIONS])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_out_of_range_value_is_one_usage_line_naming_the_option(command, option, allowed, data, capsys):
    value = data.draw(_bad_values(allowed))
    capsys.readouterr()
    code = _run([*command.split(), *REQUIRED[command], f"{option}={value}"])
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"argument {option}" in lines[0] and "Traceback" not in err, err


@pytest.mark.parametrize(("command", "option", "allowed"), OPTIONS, ids=[f"{c}{o}" for c, o, _ in OPTIONS])
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_a_value_in_range_is_accepted_by_the_converter(command, option, allowed, data):
    parser = build_parser()
    sub = dict(_subparsers(parser))[command]
    action = next(a for a in sub._actions if option in a.option_strings)
    if allowed.integer:
        value = data.draw(st.integers(int(allowed.low), int(allowed.high)))
    else:
        value = data.draw(st.floats(allowed.low, allowed.high, exclude_min=allowed.low_open,
                                    exclude_max=allowed.high_open, allow_nan=False))
    parsed = action.type(str(value) if allowed.integer else repr(value))
    parsed = parsed[0] if isinstance(parsed, list) else parsed
    assert parsed == value or (not allowed.integer and math.isclose(parsed, value))
