"""The Python API's option objects refuse what the CLI's converters refuse (issue #27, causes 8, 9, 13, 14).

Both doors read one table (``albert_edge.inputs.option_ranges``); these are the values the hostile
battery found getting through: a NaN learning rate trained into a NaN checkpoint, ``threads=-1``
aborted inside TensorFlow's C++ with an empty stderr, ``rounds=0`` and a batch size of 0 crashed.
"""

from __future__ import annotations

import math

import pytest

from albert_edge.bench_latency.options import BenchOptions
from albert_edge.cli import main
from albert_edge.convert.pipeline import ConvertOptions
from albert_edge.errors import ConfigError, DataError, QuantizationError
from albert_edge.finetune.pretrain import PretrainSettings
from albert_edge.finetune.recipe import check_settings
from albert_edge.finetune.trainer import FinetuneSettings
from albert_edge.inputs.option_ranges import THREADS, NumberRange
from albert_edge.quantize.options import QuantizeOptions


@pytest.mark.parametrize(("field", "value", "flag"), [
    ("learning_rate", math.nan, "--lr"), ("threads", -1, "--threads"), ("batch_size", 0, "--batch-size"),
    ("dropout", 2.0, "--dropout"), ("weight_decay", -0.1, "--weight-decay"), ("epochs", 0.0, "--epochs"),
    ("evals_per_epoch", 0, "--evals-per-epoch"), ("max_steps", 0, "--max-steps"), ("warmup_ratio", math.inf, "--warmup"),
])
def test_finetune_settings_outside_their_range_are_refused_naming_the_flag(field, value, flag):
    with pytest.raises(DataError, match=f"^{flag} "):
        check_settings(FinetuneSettings(**{field: value}))


def test_pretrain_settings_share_the_checks():
    with pytest.raises(DataError, match="^--mask-prob "):
        check_settings(PretrainSettings(mask_prob=1.0))
    check_settings(PretrainSettings(learning_rate=0.0))  # a smoke run that leaves the weights alone


@pytest.mark.parametrize("argv", [["--threads", "-1"], ["--lr", "nan"], ["--batch-size", "0"], ["--dropout", "2"],
                                  ["--weight-decay", "-1"], ["--epochs", "0"], ["--evals-per-epoch", "0"]])
def test_finetune_cli_refuses_before_tensorflow_with_one_line(argv, capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        main(["finetune", "--out", str(tmp_path / "o"), "--train", "t", "--dev", "d", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2 and len(err) == 1 and f"argument {argv[0]}:" in err[0]


@pytest.mark.parametrize(("field", "value", "flag"), [
    ("rounds", 0, "--rounds"), ("confidence", 1.5, "--confidence"), ("max_size_mb", -1.0, "--max-size-mb"),
    ("max_fallback_steps", -1, "--max-fallback-steps"), ("max_drop", math.nan, "--max-drop"),
    ("num_threads", -1, "--threads"), ("min_agreement", 2.0, "--min-agreement"),
    ("attention_head_groups", 5, "--attention-head-groups"), ("attention_head_groups", 0, "--attention-head-groups"),
])
def test_quantize_options_outside_their_range_are_refused(field, value, flag):
    with pytest.raises(QuantizationError, match=f"^{flag} "):
        QuantizeOptions(**{field: value})


@pytest.mark.parametrize(("field", "value", "flag"), [
    ("max_drop", math.nan, "--max-drop"), ("threads", (10**6,), "--threads"), ("runs", 10**12, "--runs"),
    ("max_seconds", math.inf, "--max-seconds"), ("seq_lens", (10**7,), "--seq-len"),
])
def test_bench_options_outside_their_range_are_refused(field, value, flag):
    with pytest.raises(DataError, match=f"{flag}"):
        BenchOptions(**{field: value})


def test_convert_options_refuse_a_huge_length():
    with pytest.raises(ConfigError, match="^--max-seq-len "):
        ConvertOptions(max_seq_len=10**400)


@pytest.mark.parametrize("argv", [["quantize", "ckpt", "--calib", "c", "--rounds", "0"],
                                  ["arm-check", "m", "--eval", "e", "--count", "9" * 400],
                                  ["quantize", "ckpt", "--calib", "c", "--confidence", "1.5"],
                                  ["quantize", "ckpt", "--calib", "c", "--max-size-mb", "-3"],
                                  ["quantize", "ckpt", "--calib", "c", "--max-fallback-steps", "-1"],
                                  ["quantize", "ckpt", "--calib", "c", "--attention-head-groups", "7"],
                                  ["bench", "m.tflite", "--max-drop", "nan"]])
def test_extreme_numbers_are_usage_errors_not_internal_errors(argv, capsys):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1


def test_a_range_admits_its_ends_unless_open_and_never_nan_or_bool():
    share = NumberRange(False, 0, 1, high_open=True)
    assert share.admits(0.0) and not share.admits(1.0) and not share.admits(math.nan) and not share.admits(True)
    assert THREADS.admits(256) and not THREADS.admits(257) and not THREADS.admits(2.0)
    with pytest.raises(ValueError, match="expected a positive integer"):
        THREADS.parse("9" * 5000)  # past Python's int-string limit: still one ValueError
