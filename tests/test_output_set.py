"""A run that fails while writing leaves the previous run's files and report exactly as they were
(issue #14, cause 8 and the ``.partial`` minor). A full disk is tested on a real 1 MB tmpfs when
mounting is permitted (root), and with an ENOSPC injected into the writes everywhere.
About 10 s (a few in-process ONNX conversions of a tiny model).
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.errors import OutputError
from albert_edge.model import AlbertConfig, random_weights, write_hf_checkpoint
from albert_edge.outputs.claim import MANIFEST
from albert_edge.outputs.output_set import OutputSet, clean_leftovers

CONFIG = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=48, max_position_embeddings=64)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(115)]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    directory = write_hf_checkpoint(random_weights(CONFIG, num_labels=2, seed=3), tmp_path_factory.mktemp("hf"))
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory


def convert(capsys, checkpoint: Path, out: Path, *extra: str) -> tuple[int, list[str]]:
    code = main(["convert", str(checkpoint), "--out", str(out), "--formats", "onnx", "--max-seq-len", "16", *extra])
    return code, capsys.readouterr().err.strip().splitlines()


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every entry of ``directory`` (hidden ones too) with its bytes; folders as b'<dir>'."""
    return {p.name: (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(directory.iterdir())}


def dead_pid() -> int:
    """The pid of a process that has exited (so leftovers carrying it belong to no live run)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# --- the module itself ------------------------------------------------------------------------------

def test_files_appear_together_only_when_the_block_completes(tmp_path):
    with OutputSet(tmp_path) as staged:  # a previous run's file (one albert-edge wrote, so it may be replaced)
        staged.write_bytes("a.bin", b"old a")
    with OutputSet(tmp_path) as staged:
        assert staged.write_bytes("a.bin", b"new a") == tmp_path / "a.bin"
        staged.write_text("report.json", "{}")
        assert (tmp_path / "a.bin").read_bytes() == b"old a" and not (tmp_path / "report.json").exists()
    assert {k: v for k, v in snapshot(tmp_path).items() if k != MANIFEST} == {"a.bin": b"new a", "report.json": b"{}"}
    assert oct((tmp_path / "a.bin").stat().st_mode & 0o777) == "0o644"


def test_a_failure_inside_the_block_discards_the_new_set(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"old a")
    with pytest.raises(KeyboardInterrupt):
        with OutputSet(tmp_path) as staged:
            staged.write_bytes("a.bin", b"new a")
            raise KeyboardInterrupt
    assert snapshot(tmp_path) == {"a.bin": b"old a"}


def test_a_sub_folder_file_is_part_of_the_set_and_rolled_back_with_it(tmp_path):
    from albert_edge.outputs.swap import roll_back, swap

    with OutputSet(tmp_path) as staged:
        assert staged.write_bytes("variants/a.bin", b"old a") == tmp_path / "variants" / "a.bin"
        staged.write_text("report.json", "old")
        assert not (tmp_path / "variants").exists()  # nothing appears before the block completes
    assert (tmp_path / "variants" / "a.bin").read_bytes() == b"old a"
    with OutputSet(tmp_path) as staged:
        staged.write_bytes("variants/b.bin", b"new b")
        staged.write_text("report.json", "old")  # a run replaces its whole previous set: it rewrites what stays
        staged.remove_stale("variants/a.bin")
    assert sorted(p.name for p in (tmp_path / "variants").iterdir()) == ["b.bin"]
    # A swap killed half-way is undone by the next run, sub-folder files included.
    staging = tmp_path / ".staging-test"
    (staging / "variants").mkdir(parents=True)
    (staging / "variants" / "b.bin").write_bytes(b"newer b")
    (staging / "report.json").write_text("new")
    swap(staging, tmp_path, ["variants/b.bin", "report.json"], [])
    (staging / "swap.done.json").rename(staging / "swap.json")  # as if killed before the commit point
    assert roll_back(staging, tmp_path)
    assert (tmp_path / "variants" / "b.bin").read_bytes() == b"new b"
    assert (tmp_path / "report.json").read_text() == "old"


@pytest.mark.parametrize("name", ["../a.bin", "/tmp/a.bin", "variants/../../a.bin", "variants/", "a\\b.bin"])
def test_a_name_leaving_the_folder_is_refused(tmp_path, name):
    with OutputSet(tmp_path) as staged:
        with pytest.raises(ValueError, match="must be a new file name"):
            staged.write_bytes(name, b"x")


def test_a_sub_folder_file_albert_edge_did_not_write_is_never_replaced(tmp_path):
    (tmp_path / "variants").mkdir()
    (tmp_path / "variants" / "a.bin").write_bytes(b"the user's")
    with pytest.raises(OutputError, match="did not write"):
        with OutputSet(tmp_path) as staged:
            staged.write_bytes("variants/a.bin", b"ours")
    assert (tmp_path / "variants" / "a.bin").read_bytes() == b"the user's"


def test_enospc_is_one_output_error_naming_the_final_file(tmp_path, monkeypatch):
    def full(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full)
    with pytest.raises(OutputError, match=r"a.bin: cannot write: no space left on device"):
        with OutputSet(tmp_path) as staged:
            staged.write_bytes("a.bin", b"x")
    monkeypatch.undo()
    assert snapshot(tmp_path) == {}


def test_leftovers_of_dead_runs_are_removed_and_live_ones_kept(tmp_path):
    dead, live = dead_pid(), os.getpid()
    names = [f".model_fp32.tflite.p{dead}.abc123.partial", ".model_fp32.onnx.x1y2z3.partial",
             f".model.ckpt.p{dead}.partial-1a2b3c4d.index", ".model.ckpt.partial-1a2b3c4d.data-00000-of-00001",
             f".model_fp32.onnx.p{live}.qqq.partial"]
    for name in names:
        (tmp_path / name).write_bytes(b"half")
    (tmp_path / f".albert-edge-staging-{dead}-abc").mkdir()
    (tmp_path / f".albert-edge-staging-{dead}-abc" / "model_fp32.onnx").write_bytes(b"half")
    (tmp_path / "model_fp32.onnx").write_bytes(b"keep")
    (tmp_path / ".hidden_user_file").write_bytes(b"keep")
    clean_leftovers(tmp_path)
    assert sorted(snapshot(tmp_path)) == sorted([".hidden_user_file", f".model_fp32.onnx.p{live}.qqq.partial",
                                                 "model_fp32.onnx"])


# --- convert -------------------------------------------------------------------------------------------

def test_a_failed_write_keeps_the_previous_run_exactly(checkpoint, tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    assert convert(capsys, checkpoint, out)[0] == 0
    before = snapshot(out)
    assert set(before) == {"model_fp32.onnx", "conversion_report.json", MANIFEST}
    real = Path.write_bytes

    def fail_on_report(self, data):
        if self.name == "conversion_report.json":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", fail_on_report)
    code, err = convert(capsys, checkpoint, out, "--fp16")
    monkeypatch.undo()
    assert code == 2 and len(err) == 1 and "conversion_report.json: cannot write: no space left" in err[0], err
    assert snapshot(out) == before


def test_the_next_run_cleans_a_killed_runs_leftovers(checkpoint, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    dead = dead_pid()
    (out / f".model_fp32.onnx.p{dead}.abc.partial").write_bytes(b"half")
    (out / f".albert-edge-staging-{dead}-xyz").mkdir()
    assert convert(capsys, checkpoint, out)[0] == 0
    assert sorted(p.name for p in out.iterdir()) == [MANIFEST, "conversion_report.json", "model_fp32.onnx"]


@pytest.fixture()
def small_disk(tmp_path):
    """A 1 MB tmpfs at tmp_path/disk, unmounted afterwards; skipped where mounting is not permitted."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if shutil.which("mount") is None or shutil.which("umount") is None:
        pytest.skip("no mount/umount command here")
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {result.stderr.strip()[:80]}")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_is_one_line_and_keeps_the_previous_run(checkpoint, small_disk, capsys):
    out = small_disk / "out"
    assert convert(capsys, checkpoint, out)[0] == 0
    before = snapshot(out)
    stat = os.statvfs(small_disk)
    filler = small_disk / "filler"
    filler.write_bytes(b"\0" * max(0, stat.f_bavail * stat.f_frsize - 20_000))  # room for less than one model
    code, err = convert(capsys, checkpoint, out)
    assert code == 2 and len(err) == 1, err
    assert "no space left on device" in err[0] and str(out) in err[0]
    assert snapshot(out) == before
    filler.unlink()
    assert convert(capsys, checkpoint, out)[0] == 0
    assert sorted(os.listdir(out)) == [MANIFEST, "conversion_report.json", "model_fp32.onnx"]


def test_checkpoint_writers_clean_a_killed_writers_leftovers(tmp_path):
    dead = dead_pid()
    leftovers = [f".model.safetensors.p{dead}.abc.partial", f".model.ckpt.p{dead}.partial-1a2b3c4d.index"]
    for name in leftovers:
        (tmp_path / name).write_bytes(b"half")
    write_hf_checkpoint(random_weights(CONFIG, num_labels=2, seed=3), tmp_path)
    assert not any((tmp_path / name).exists() for name in leftovers)
