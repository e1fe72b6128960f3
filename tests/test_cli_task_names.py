"""Hugging Face task names are accepted wherever a task is named (issue #30: users come from Optimum and
transformers, whose tasks are ``text-classification``, ``token-classification``, ...)."""

from __future__ import annotations

import pytest

from albert_edge.cli import build_parser
from albert_edge.tasks import HF_TASK_NAMES, TASK_NAMES, canonical_task_name, get_task


@pytest.mark.parametrize("command", ["convert", "quantize"])
@pytest.mark.parametrize(("given", "meant"), sorted(HF_TASK_NAMES.items()) + [("token_classification",) * 2])
def test_the_cli_maps_a_hugging_face_task_name_to_ours(command: str, given: str, meant: str) -> None:
    extra = ["--calib", "c.txt"] if command == "quantize" else ["--out", "o"]
    args = build_parser(only=command).parse_args([command, "ckpt", *extra, "--task", given])
    assert args.task == meant


def test_an_unknown_task_name_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        build_parser(only="convert").parse_args(["convert", "ckpt", "--out", "o", "--task", "summarization"])
    assert exit_info.value.code == 2 and "invalid choice: 'summarization'" in capsys.readouterr().err


def test_every_alias_names_a_registered_task_and_the_library_takes_it_too() -> None:
    assert set(HF_TASK_NAMES.values()) <= set(TASK_NAMES)
    assert get_task("question-answering").name == "question_answering"
    assert canonical_task_name("no-such-task") == "no-such-task"
