"""pyproject.toml as a user on another platform meets it (#30): markers, ranges, pins, metadata.

- ``[convert]`` installs exactly one TensorFlow on Linux, macOS and Windows: ``tensorflow-cpu`` has no
  macOS wheel, so macOS gets ``tensorflow`` (its CPU build) through an environment marker.
- Every exact pin in constraints.txt (what CI installs) lies inside the range pyproject.toml states, so the
  tested versions are ones a plain ``pip install`` may pick.
- The metadata has no placeholder: the LICENSE file it names exists, and project URLs, if any, are real
  (the repository has no public home yet, so there are none).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PROJECT = PYPROJECT["project"]

PLATFORMS = {
    "linux": {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix"},
    "darwin": {"sys_platform": "darwin", "platform_system": "Darwin", "os_name": "posix"},
    "win32": {"sys_platform": "win32", "platform_system": "Windows", "os_name": "nt"},
}


def _requirements(extra: str | None = None) -> list[Requirement]:
    """The requirements of the core (``extra`` None) or of an extra, its albert-edge[...] references expanded."""
    specs = PROJECT["dependencies"] if extra is None else PROJECT["optional-dependencies"][extra]
    out = []
    for spec in specs:
        req = Requirement(spec)
        if canonicalize_name(req.name) == "albert-edge":
            for inner in sorted(req.extras):
                out += _requirements(inner)
        else:
            out.append(req)
    return out


def _installed_on(requirements: list[Requirement], platform: str) -> set[str]:
    env = {"python_version": "3.11", "python_full_version": "3.11.7", "extra": "", **PLATFORMS[platform]}
    return {canonicalize_name(r.name) for r in requirements if r.marker is None or r.marker.evaluate(env)}


@pytest.mark.parametrize("platform,expected", [("linux", "tensorflow-cpu"), ("darwin", "tensorflow"),
                                               ("win32", "tensorflow-cpu")])
def test_convert_installs_exactly_one_tensorflow_per_platform(platform, expected):
    installed = _installed_on(_requirements("convert"), platform)
    assert installed & {"tensorflow", "tensorflow-cpu"} == {expected}
    assert {"ai-edge-litert", "onnxruntime", "onnx"} <= installed


def test_every_constraint_pin_lies_in_its_pyproject_range():
    ranges: dict[str, list[Requirement]] = {}
    for extra in [None, *PROJECT["optional-dependencies"]]:
        for req in _requirements(extra):
            ranges.setdefault(canonicalize_name(req.name), []).append(req)
    outside, unpinned = [], []
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, version = re.fullmatch(r"([A-Za-z0-9_.-]+)==([^\s;]+)", line).groups()
        reqs = ranges.get(canonicalize_name(name))
        if reqs is None:
            unpinned.append(name)
        outside += [f"{name}=={version} not in {r}" for r in reqs or () if not r.specifier.contains(version, True)]
    assert outside == [] and unpinned == []


def test_metadata_names_real_files_and_no_placeholder():
    assert all((ROOT / name).is_file() for name in PROJECT["license-files"])
    for label, url in PROJECT.get("urls", {}).items():
        assert url.startswith("https://") and not re.search(r"example\.|your-|<|TODO", url), (label, url)
    assert any(c.startswith("Operating System :: MacOS") for c in PROJECT["classifiers"])
