"""from_file maps the model file instead of reading it, and the interpreter maps it by path (#39).

What could go wrong with two mappings of one path: the interpreter opening a file other than the one the
pack and the graph were checked in. A path replaced after the load leaves the runtime on the checked
file; a path replaced while the interpreter opens it is refused in one line.
"""

from __future__ import annotations

import os

import pytest
from tests.support.runtime_models import write_models

from albert_edge.errors import ModelFileError
from albert_edge.runtime import TaskModel, TextClassifier
from albert_edge.runtime.pack import MappedModel, map_model_file

TEXT = "这家酒店服务很好"


@pytest.fixture()
def models(tmp_path):
    return write_models(tmp_path, max_seq_len=16)


def test_from_file_maps_the_file_and_answers_as_from_bytes(models):
    path = models["tflite"]
    mapped = TextClassifier.from_file(path, num_threads=1)
    assert isinstance(mapped._pool.first._flatbuffer, MappedModel)   # the interpreter got the path, not a copy
    assert mapped.predict(TEXT) == TextClassifier.from_bytes(path.read_bytes(), str(path), num_threads=1).predict(TEXT)
    onnx = TaskModel.from_file(models["onnx"], num_threads=1)
    assert onnx.predict(TEXT) == TaskModel.from_bytes(models["onnx"].read_bytes(), num_threads=1).predict(TEXT)


def test_a_file_replaced_after_the_load_leaves_the_runtime_on_the_checked_one(models, tmp_path):
    path = models["tflite"]
    clf = TextClassifier.from_file(path, num_threads=1, pool_size=2)
    before = clf.predict(TEXT)
    (tmp_path / "other").write_bytes(b"not a model at all")
    os.replace(tmp_path / "other", path)   # how the project's writers replace a file
    first = clf._pool.borrow()
    second = clf._pool.borrow()            # the pool grows: built from the mapping, which still holds the old file
    assert second is not first and not isinstance(second._flatbuffer, MappedModel)
    clf._pool.give_back(first)
    clf._pool.give_back(second)
    assert clf.predict(TEXT) == before
    with pytest.raises(ModelFileError, match="not a model file"):
        TextClassifier.from_file(path, num_threads=1)


def test_a_file_replaced_while_the_interpreter_opens_it_is_refused(models, monkeypatch):
    answers = iter([True, False])   # unchanged before the interpreter opens the path, changed after
    monkeypatch.setattr(MappedModel, "unchanged", lambda self: next(answers))
    with pytest.raises(ModelFileError, match=r"bag\.tflite: the model file changed while it was being loaded"):
        TextClassifier.from_file(models["tflite"], num_threads=1)


def test_files_that_cannot_be_mapped_fail_as_before(tmp_path):
    (tmp_path / "empty.tflite").write_bytes(b"")
    assert map_model_file(tmp_path / "empty.tflite") == b""
    with pytest.raises(ModelFileError, match="not a model file"):
        TextClassifier.from_file(tmp_path / "empty.tflite")
    with pytest.raises(ModelFileError, match="missing.tflite"):
        TextClassifier.from_file(tmp_path / "missing.tflite")
    with pytest.raises(ModelFileError, match="not a regular file"):
        TextClassifier.from_file(tmp_path)


def _resident_kb(path) -> int:
    """kB of ``path`` resident in this process, summed over every mapping of it (/proc/self/smaps)."""
    import re

    blocks = re.split(r"\n(?=[0-9a-f]+-[0-9a-f]+ )", open("/proc/self/smaps").read())
    return sum(int(re.search(r"\nRss:\s+(\d+) kB", b).group(1)) for b in blocks if b.split("\n")[0].endswith(str(path)))


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux's per-mapping RSS")
@pytest.mark.parametrize("kind", ["tflite", "onnx"])
def test_the_file_is_resident_at_most_once_after_the_load(models, kind):
    # The readers' mapping and the interpreter's (LiteRT maps the path too) must not both count the file in RSS:
    # the kernel maps whole page-cache folios, so a few reads would otherwise make all of it resident twice.
    path = models[kind]
    model = TaskModel.from_file(path, num_threads=1)
    model.predict(TEXT)
    assert _resident_kb(path) <= -(-path.stat().st_size // 4096) * 4


def test_damaged_files_load_the_same_mapped_as_read(models, tmp_path):
    # The interpreter now opens the path (LiteRT's file loader) where it was given bytes: on every damaged copy
    # from_file must refuse exactly what from_bytes refuses, with the same message, or answer the same.
    import random

    from albert_edge.errors import AlbertEdgeError

    original = models["tflite"].read_bytes()
    rng = random.Random(39)
    outcomes = {"refused": 0, "answered": 0}
    for case in range(120):
        bad = bytearray(original)
        if case % 4 == 0:
            bad = bad[: rng.randrange(8, len(bad))]
        else:
            for _ in range(rng.choice((1, 3))):   # mostly the graph's tables and the pack, at the end
                bad[rng.randrange(len(bad) // 2, len(bad))] = rng.randrange(256)
        path = tmp_path / f"damaged{case}.tflite"
        path.write_bytes(bytes(bad))
        results = []
        for load in (lambda: TextClassifier.from_file(path, num_threads=1),
                     lambda: TextClassifier.from_bytes(bytes(bad), str(path), num_threads=1)):
            try:
                results.append(("answer", load().predict(TEXT)))
            except AlbertEdgeError as exc:
                results.append(("refused", str(exc)))
        assert results[0] == results[1], f"case {case}: {results}"
        outcomes["refused" if results[0][0] == "refused" else "answered"] += 1
    assert outcomes["refused"] > 30 and outcomes["answered"] > 5, outcomes



def test_the_mapped_file_seeks_and_reads_as_bytesio(tmp_path):
    # zipfile reads the pack through it: any difference from BytesIO would change a damaged pack's message.
    import io
    import mmap
    import random

    from albert_edge.runtime.pack import _MappedFile

    (tmp_path / "f").write_bytes(bytes(range(256)) * 3)
    with open(tmp_path / "f", "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    files = (io.BytesIO(bytes(mapped)), _MappedFile(mapped))
    rng = random.Random(39)
    for _ in range(3000):
        op = rng.choice(("seek", "read", "tell"))
        offset, whence, size = rng.randint(-1000, 1000), rng.choice((0, 1, 2)), rng.choice((-1, None, rng.randint(0, 900)))
        got = []
        for f in files:
            try:
                got.append(f.seek(offset, whence) if op == "seek" else f.read(size) if op == "read" else f.tell())
            except ValueError as exc:
                got.append(("ValueError", str(exc)))
        assert got[0] == got[1], (op, offset, whence, size, got)
