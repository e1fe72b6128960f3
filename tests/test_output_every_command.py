"""Every command, into a folder holding its previous run plus foreign files, leaves exactly its new set
plus the foreign files; and every file it writes opens as its user would open it (issue #37).

For each command: the new run into an empty folder gives the expected set; the same new run into a
folder where a different run of that command wrote before (another format, mode or option) and
where the user put files of their own must end with exactly that set plus the user's files,
byte-identical. Each written file is then opened: a model through the runtime class of its task
(pack checked against the graph, one input run), a report as JSON.
About 60 s (tiny random models; TensorFlow commands skip without it).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from albert_edge.cli import main
from tests.support.open_output import open_written, short_classifier, written_files

FOREIGN = {"notes.txt": b"the user's notes", "mine/keep.bin": b"the user's own sub-folder"}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """A 32-position classifier checkpoint, calibration texts and its converted fp32 files."""
    root = tmp_path_factory.mktemp("every")
    ckpt, calib = short_classifier(root, seed=0)
    converted = root / "converted"
    assert main(["convert", str(ckpt), "--out", str(converted), "--labels", "neg,pos", "--no-progress"]) == 0
    return {"ckpt": ckpt, "calib": calib, "converted": converted}


def _quantize(mode: str, formats: str) -> Callable[[dict[str, Path], Path], list]:
    return lambda i, out: ["quantize", i["ckpt"], "--calib", i["calib"], "--mode", mode, "--formats", formats,
                           "--labels", "neg,pos", "--rounds", "1", "--threads", "1", "--out", out]


def _bench(seq_len: str) -> Callable[[dict[str, Path], Path], list]:
    return lambda i, out: ["bench", i["converted"] / "model_fp32.tflite", "--threads", "1", "--seq-len", seq_len,
                           "--runs", "2", "--warmup", "0", "--rounds", "1", "--out", out]


def _card_setup(i: dict[str, Path], out: Path) -> None:
    shutil.copy(i["converted"] / "conversion_report.json", out / "conversion_report.json")


# command: (prepare the folder, the previous run's argv, the new run's argv)
CASES: dict[str, tuple] = {
    "convert": (None,
                lambda i, out: ["convert", i["ckpt"], "--out", out, "--fp16", "--labels", "neg,pos"],
                lambda i, out: ["convert", i["ckpt"], "--out", out, "--formats", "onnx", "--labels", "neg,pos"]),
    "quantize": (None, _quantize("dynamic", "tflite,onnx"), _quantize("fp16", "tflite")),
    "quantize-onnx-only": (None, _quantize("dynamic", "tflite"), _quantize("dynamic", "onnx")),
    "repack": (None,
               lambda i, out: ["repack", i["converted"] / "model_fp32.tflite", "--from", i["ckpt"], "--labels",
                               "neg,pos", "--out", out / "model.tflite", "--variant", "first"],
               lambda i, out: ["repack", i["converted"] / "model_fp32.tflite", "--from",
                               i["converted"] / "model_fp32.tflite", "--out", out / "model.tflite"]),
    "card": (_card_setup, lambda i, out: ["card", out, "--title", "first"], lambda i, out: ["card", out]),
    "bench": (None, _bench("8,16"), _bench("8")),
    "android-assets": (None,
                       lambda i, out: ["android-assets", i["converted"] / "model_fp32.tflite", out],
                       lambda i, out: ["android-assets", i["converted"] / "model_fp32.tflite", out, "--no-logits"]),
}


def _run(argv: list) -> None:
    code = main([str(a) for a in argv] + ["--no-progress"])
    assert code == 0, argv


@pytest.mark.parametrize("command", list(CASES))
def test_a_run_leaves_exactly_its_new_set_plus_the_users_files_and_each_opens(inputs, tmp_path, command):
    setup, previous, new = CASES[command]
    fresh, mixed = tmp_path / "fresh", tmp_path / "mixed"
    for folder in (fresh, mixed):
        folder.mkdir()
        if setup:
            setup(inputs, folder)
    _run(new(inputs, fresh))
    expected = set(written_files(fresh))
    _run(previous(inputs, mixed))
    # Commands whose set has fixed names (one file, a report quartet) differ in content only.
    assert set(written_files(mixed)) != expected or command in ("card", "repack", "bench"), "the runs must differ"
    for name, data in FOREIGN.items():
        (mixed / name).parent.mkdir(parents=True, exist_ok=True)
        (mixed / name).write_bytes(data)
    _run(new(inputs, mixed))
    after = written_files(mixed)
    assert set(after) == expected | set(FOREIGN), sorted(set(after) ^ (expected | set(FOREIGN)))
    assert all(after[name].read_bytes() == data for name, data in FOREIGN.items())
    for name in expected:
        if name not in ("conversion_report.json",) or command != "card":
            open_written(after[name])
