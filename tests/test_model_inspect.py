"""``albert-edge inspect``: config, parameter count, naming scheme and ignored variables."""

from __future__ import annotations

import json

import pytest

from albert_edge.cli import main
from albert_edge.model import albert_tiny_zh_config, random_weights, write_tf1_checkpoint

pytest.importorskip("tensorflow")


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    directory = tmp_path_factory.mktemp("albert_tiny_zh")
    write_tf1_checkpoint(random_weights(albert_tiny_zh_config(), num_labels=2), directory / "albert_model.ckpt",
                         scheme="brightmart")
    return directory


def test_inspect_prints_scheme_parameter_count_and_config(tiny_checkpoint, capsys):
    assert main(["inspect", str(tiny_checkpoint)]) == 0
    out = capsys.readouterr().out
    assert "scheme:      brightmart-tf1" in out
    assert "parameters:  4,175,778 (4.18 M)" in out  # 4,175,152 for albert_tiny_zh + 626 for the 2-label head
    assert "4 layers over 1 stored block(s), project_then_add, postln, gelu_tanh" in out
    assert "ignored:     0 variable(s)" in out
    assert "task:        sequence_classification" in out
    assert "  vocab_size: 21128" in out


def test_inspect_json_is_machine_readable(tiny_checkpoint, capsys):
    assert main(["inspect", str(tiny_checkpoint), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (info["scheme"], info["num_labels"], info["shared_blocks"]) == ("brightmart-tf1", 2, 1)
    assert info["config"]["hidden_size"] == 312
    assert info["task"] == {"name": "sequence_classification", "config": {}}


def test_inspect_of_a_missing_checkpoint_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "nothing")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "checkpoint not found" in err
