"""Options may come before, between or after the positionals of every subcommand, as in ``predict`` (#30).

The walk covers every subcommand (nested ones such as ``data stats`` included): each is parsed with
its options first, last, and after its first positional value, and all three must give the same
arguments. Only parsing runs here, never a command.
"""

from __future__ import annotations

import argparse

import pytest

from albert_edge.cli import _parse, build_parser

GLOBAL_FLAGS = {"--debug", "--verbose", "--no-progress", "-h", "--help"}


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                nested = list(_commands(sub, (*prefix, name)))
                yield from nested or [((*prefix, name), sub)]


COMMANDS = sorted(_commands(build_parser()), key=lambda row: row[0])


def _positional_values(sub: argparse.ArgumentParser) -> list[list[str]]:
    """One value per positional (two for a list), named after it so that a swap would show."""
    values = []
    for action in sub._actions:
        if action.option_strings or isinstance(action, argparse._SubParsersAction):
            continue
        count = 2 if action.nargs in ("*", "+") else 1
        values.append([f"{action.dest}{i}.txt" for i in range(count)])
    return values


def _options(sub: argparse.ArgumentParser) -> list[str]:
    """Every required option with a value, one plain string option and one flag of the command's own."""
    chosen = []
    plain = [a for a in sub._actions if a.option_strings and not set(a.option_strings) & GLOBAL_FLAGS]
    required = [a for a in plain if a.required]
    text = next((a for a in plain if isinstance(a, argparse._StoreAction) and a.nargs is None and a.type is None
                 and a.choices is None and not a.required), None)
    flag = next((a for a in plain if isinstance(a, argparse._StoreTrueAction)), None)
    for action in required + [a for a in (text,) if a is not None]:
        chosen += [action.option_strings[0], f"{action.dest}-value"]
    if flag is not None:
        chosen.append(flag.option_strings[0])
    return chosen


@pytest.mark.parametrize("command,sub", COMMANDS, ids=[" ".join(c) for c, _ in COMMANDS])
def test_options_may_come_before_between_or_after_the_positionals(command, sub):
    positionals = _positional_values(sub)
    options = _options(sub)
    assert options or not positionals, f"{command}: no option to move around"
    flat = [v for values in positionals for v in values]
    orders = {"options first": [*command, *options, *flat], "options last": [*command, *flat, *options]}
    if flat:
        orders["options after the first positional"] = [*command, flat[0], *options, *flat[1:]]
    if len(flat) > 1:
        orders["global flag between positionals"] = [*command, flat[0], "--debug", *options, *flat[1:]]
    parsed = {}
    for name, argv in orders.items():
        args = vars(_parse(build_parser(only=command[0]), argv))
        parsed[name] = {k: v for k, v in args.items() if k != "debug"}
    first = parsed["options first"]
    assert all(p == first for p in parsed.values()), f"{command}: {parsed}"
    for action, values in zip((a for a in sub._actions if not a.option_strings
                               and not isinstance(a, argparse._SubParsersAction)), positionals):
        got = first[action.dest]
        assert (got if isinstance(got, list) else [got]) == values


@pytest.mark.parametrize("argv,dest,expected", [
    (["embed", "m.tflite", "--json", "a text"], "texts", ["a text"]),  # the example
    (["predict", "m.tflite", "--json", "one", "--threads", "1", "two"], "texts", ["one", "two"]),
    (["bench", "a.tflite", "--rounds", "3", "b.onnx"], "models", ["a.tflite", "b.onnx"]),
    (["arm-check", "a.tflite", "--eval", "e.tsv", "b.tflite"], "models", ["a.tflite", "b.tflite"]),
    (["android-assets", "m.tflite", "--sentences", "s.txt", "assets"], "assets_dir", "assets"),
    (["quantize", "--mode", "dynamic", "ckpt", "--out", "q"], "checkpoint", "ckpt"),
    (["data", "stats", "--vocab", "v.txt", "f.tsv", "--debug"], "file", "f.tsv"),
])
def test_the_orders_users_type(argv, dest, expected):
    args = _parse(build_parser(only=argv[0]), argv)
    assert getattr(args, dest) == expected


def test_an_unknown_option_is_still_one_usage_line(capsys):
    with pytest.raises(SystemExit) as exc:
        _parse(build_parser(only="embed"), ["embed", "m.tflite", "--jsn", "text"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1 and "--jsn" in err[0]
