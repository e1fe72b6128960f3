"""Set up the aarch64 emulation environment from the registries: cached, pinned, hash-checked.

Why: the files albert-edge writes ship to ARM phones, whose int8 kernels (NEON, dot-product,
i8mm) differ from the x86 ones every other figure comes from. Debian's ``qemu-user`` runs
the aarch64 wheels of LiteRT and ONNX Runtime in an arm64 Python taken from Debian's arm64
packages, so the ARM kernels can be checked on this machine before a phone exists.

What it does (each step skipped when its result is already in the cache):

1. ``qemu-user`` (the dynamic ``qemu-aarch64``, which loads TCG plugins) via apt-get.
2. ``dpkg --add-architecture arm64`` + ``apt-get update`` when arm64 is not configured yet.
3. The arm64 ``.deb`` files pinned in ``arm_lock.json`` via ``apt-get download`` (apt checks the
   signed Release chain; the lock's sha256 is checked too), unpacked with ``dpkg -x``.
4. The aarch64 wheels pinned in ``arm_lock.json`` via ``pip download --require-hashes``,
   unpacked with ``pip install --target`` into the sysroot.
5. ``insn_count.c`` compiled with gcc into a TCG plugin, and loaded once to prove the qemu
   here speaks its plugin API.

The sysroot directory is named after a hash of the lock, written under a temporary name and
renamed when complete, so an interrupted setup never leaves a half-built sysroot in use.
Run it alone with ``python -m albert_edge.arm.setup_env``; ``albert-edge arm-check`` calls it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from albert_edge.arm.env import PYTHON, SITE_PACKAGES, ArmEnv  # ArmEnv re-exported: callers name it from here
from albert_edge.errors import AlbertEdgeError

PLUGIN_API_VERSION = 1   # what insn_count.c declares (QEMU 7.2's QEMU_PLUGIN_VERSION)


class ArmSetupError(AlbertEdgeError):
    """A step of the aarch64 environment setup cannot be done (named in the message)."""


def cache_dir() -> Path:
    """``$ALBERT_EDGE_ARM_CACHE`` or ``~/.cache/albert-edge/arm``."""
    env = os.environ.get("ALBERT_EDGE_ARM_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "albert-edge" / "arm"


def load_lock() -> dict:
    """The pinned wheel files, deb versions and their sha256 (shipped beside this module)."""
    return json.loads(resources.files("albert_edge.arm").joinpath("arm_lock.json").read_text(encoding="utf-8"))


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _run(step: str, cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    """Run one command; a failure becomes ArmSetupError naming the step and the tool's last line."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    except FileNotFoundError:
        raise ArmSetupError(f"arm setup: {step}: {cmd[0]} is not installed") from None
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stderr + proc.stdout).splitlines() if ln.strip() and not ln.startswith("W:")]
        last = lines[-1].strip() if lines else f"exit status {proc.returncode}"
        raise ArmSetupError(f"arm setup: {step} failed ({' '.join(cmd[:4])} ...): {last}")
    return proc


def _log(message: str) -> None:
    print(f"arm setup: {message}", file=sys.stderr, flush=True)


def _apt_env() -> dict[str, str]:
    return {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}


def ensure_qemu(lock: dict) -> tuple[Path, str]:
    """The dynamic qemu-aarch64 (package qemu-user), installed with apt-get when missing."""
    qemu = shutil.which("qemu-aarch64")
    if qemu is None:
        if os.geteuid() != 0:
            raise ArmSetupError("arm setup: qemu-aarch64 is missing and installing it (apt-get install qemu-user) needs root")
        _log("installing qemu-user with apt-get")
        _run("apt-get update", ["apt-get", "update", "-q"], env=_apt_env())
        _run("apt-get install qemu-user", ["apt-get", "install", "-y", "-q", "--no-install-recommends", *lock["host_packages"]], env=_apt_env())
        qemu = shutil.which("qemu-aarch64")
        if qemu is None:
            raise ArmSetupError("arm setup: apt-get installed qemu-user but qemu-aarch64 is not on PATH")
    out = _run("qemu-aarch64 --version", [qemu, "--version"]).stdout
    match = re.search(r"version (\S+)", out)
    return Path(qemu), match.group(1) if match else out.splitlines()[0]


def ensure_arm64_arch() -> None:
    """Make apt know arm64 packages (dpkg --add-architecture arm64 + apt-get update)."""
    arches = _run("dpkg --print-foreign-architectures", ["dpkg", "--print-foreign-architectures"]).stdout.split()
    if "arm64" in arches:
        return
    if os.geteuid() != 0:
        raise ArmSetupError("arm setup: apt has no arm64 architecture and adding it (dpkg --add-architecture arm64) needs root")
    _log("adding the arm64 architecture to apt")
    _run("dpkg --add-architecture arm64", ["dpkg", "--add-architecture", "arm64"])
    _run("apt-get update", ["apt-get", "update", "-q"], env=_apt_env())


def _deb_file(directory: Path, package: str, version: str) -> Path:
    # apt-get download names files pkg_version_arch.deb with the epoch's ':' written as %3a.
    return directory / f"{package}_{version.replace(':', '%3a')}_arm64.deb"


def _policies(packages: list[str]) -> dict[str, tuple[str | None, set[str]]]:
    """package -> (candidate version, versions apt knows) for arm64, from one apt-cache call."""
    out = subprocess.run(["apt-cache", "policy", *(f"{p}:arm64" for p in packages)], capture_output=True, text=True).stdout
    result: dict[str, tuple[str | None, set[str]]] = {}
    for block in re.split(r"^(?=\S)", out, flags=re.M):
        head = re.match(r"(\S+?)(?::arm64)?:\n", block)
        if not head:
            continue
        candidate = re.search(r"Candidate:\s*(\S+)", block)
        known = set(re.findall(r"^\s+(?:\*\*\* )?(\S+) \d+\n", block, flags=re.M))
        result[head.group(1)] = (candidate.group(1) if candidate and candidate.group(1) != "(none)" else None, known)
    return result


def _download(directory: Path, specs: list[str]) -> subprocess.CompletedProcess:
    # One apt-get call for all packages: each call re-reads apt's cache (seconds on a busy machine).
    return subprocess.run(["apt-get", "download", *specs], cwd=directory, capture_output=True, text=True)


def ensure_debs(lock: dict, directory: Path) -> dict[str, Path]:
    """Download (or reuse) every pinned arm64 .deb; returns package -> file.

    A Debian point release replaces a superseded version on the mirrors, so a pin can become
    undownloadable; then the current version is taken (apt still verifies its signature),
    a warning names both versions, and the versions actually used go into every report.
    """
    directory.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    wanted: dict[str, str] = {}
    for entry in lock["debs"]:
        path = _deb_file(directory, entry["package"], entry["version"])
        if path.exists() and sha256(path) == entry["sha256"]:
            files[entry["package"]] = path
        else:
            path.unlink(missing_ok=True)
            wanted[entry["package"]] = entry["version"]
    if not wanted:
        return files
    _log(f"downloading {len(wanted)} arm64 package(s) with apt-get")
    if _download(directory, [f"{p}:arm64={v}" for p, v in wanted.items()]).returncode != 0:
        _run("apt-get update", ["apt-get", "update", "-q"], env=_apt_env())
        if _download(directory, [f"{p}:arm64={v}" for p, v in wanted.items()]).returncode != 0:
            policies = _policies(list(wanted))
            for package, version in list(wanted.items()):
                candidate, known = policies.get(package, (None, set()))
                if version in known:
                    continue
                if candidate is None:
                    raise ArmSetupError(f"arm setup: apt knows no arm64 {package} (pinned {version} in arm_lock.json)")
                _log(f"warning: {package}:arm64 {version} (pinned) is no longer on the mirror; using {candidate}")
                wanted[package] = candidate
            _run("apt-get download (arm64 packages)", ["apt-get", "download", *(f"{p}:arm64={v}" for p, v in wanted.items())],
                 cwd=directory)
    pinned = {e["package"]: e for e in lock["debs"]}
    for package, version in wanted.items():
        path = _deb_file(directory, package, version)
        if not path.exists():
            raise ArmSetupError(f"arm setup: apt-get download left no {path.name}")
        if version == pinned[package]["version"] and sha256(path) != pinned[package]["sha256"]:
            path.unlink()
            raise ArmSetupError(f"arm setup: {package}:arm64 {version}: sha256 differs from arm_lock.json")
        files[package] = path
    return files


def ensure_wheels(lock: dict, directory: Path) -> list[Path]:
    """Download (or reuse) every pinned aarch64 wheel with pip, sha256 enforced by --require-hashes."""
    directory.mkdir(parents=True, exist_ok=True)
    missing = [w for w in lock["wheels"] if not ((directory / w["file"]).exists() and sha256(directory / w["file"]) == w["sha256"])]
    if missing:
        _log(f"downloading {len(missing)} aarch64 wheel(s) with pip")
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as req:
            for w in missing:
                req.write(f"{w['name']}=={w['version']} --hash=sha256:{w['sha256']}\n")
        platforms = [arg for p in lock["platforms"] for arg in ("--platform", p)]
        try:
            _run("pip download (aarch64 wheels)", [
                sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "--require-hashes",
                *platforms, "--python-version", lock["python"], "--implementation", "cp", "-d", str(directory), "-r", req.name,
            ])
        finally:
            os.unlink(req.name)
    paths = []
    for w in lock["wheels"]:
        path = directory / w["file"]
        if not path.exists() or sha256(path) != w["sha256"]:
            raise ArmSetupError(f"arm setup: {path}: missing or its sha256 differs from arm_lock.json")
        paths.append(path)
    return paths


def _lock_key(lock: dict, debs: dict[str, Path]) -> str:
    text = json.dumps({"wheels": lock["wheels"], "debs": sorted(p.name for p in debs.values())}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def ensure_sysroot(lock: dict, root: Path, debs: dict[str, Path], wheels: list[Path]) -> Path:
    """An arm64 Python with our interpreters installed, built once per lock content."""
    sysroot = root / f"sysroot-{_lock_key(lock, debs)}"
    if (sysroot / ".complete").exists():
        return sysroot
    _log(f"building {sysroot}")
    staging = Path(tempfile.mkdtemp(dir=root, prefix=".sysroot-"))
    try:
        for deb in debs.values():
            _run(f"dpkg -x {deb.name}", ["dpkg", "-x", str(deb), str(staging)])
        platforms = [arg for p in lock["platforms"] for arg in ("--platform", p)]
        _run("pip install --target (aarch64 wheels)", [
            sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--only-binary=:all:", *platforms,
            "--python-version", lock["python"], "--implementation", "cp", "--target", str(staging / SITE_PACKAGES), *map(str, wheels),
        ])
        if not (staging / PYTHON).exists():
            raise ArmSetupError(f"arm setup: the arm64 packages did not provide {PYTHON}")
        (staging / ".complete").write_text(json.dumps(sorted(p.name for p in [*debs.values(), *wheels])) + "\n")
        shutil.rmtree(sysroot, ignore_errors=True)
        staging.rename(sysroot)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return sysroot


def ensure_plugin(root: Path, qemu: Path, sysroot: Path) -> tuple[Path, tuple[int, int]]:
    """Compile insn_count.c (cached by source hash) and prove this qemu loads it.

    Returns the plugin and qemu's (min, current) plugin API versions, which the plugin
    records at load time; a qemu whose range excludes PLUGIN_API_VERSION is refused.
    """
    source = resources.files("albert_edge.arm").joinpath("insn_count.c").read_bytes()
    plugin = root / f"insn_count-{hashlib.sha256(source).hexdigest()[:16]}.so"
    if not plugin.exists():
        compiler = shutil.which("gcc") or shutil.which("cc")
        if compiler is None:
            raise ArmSetupError("arm setup: compiling the instruction-counting plugin needs gcc (apt-get install gcc)")
        with tempfile.TemporaryDirectory() as tmp:
            src = Path(tmp) / "insn_count.c"
            src.write_bytes(source)
            out = Path(tmp) / "insn_count.so"
            _run("gcc insn_count.c", [compiler, "-shared", "-fPIC", "-O2", "-Wall", "-o", str(out), str(src)])
            shutil.move(str(out), plugin)
    with tempfile.TemporaryDirectory() as tmp:
        counts = Path(tmp) / "counts.txt"
        _run("loading the TCG plugin into qemu-aarch64", [
            str(qemu), "-L", str(sysroot), "-plugin", f"{plugin},out={counts}", str(sysroot / PYTHON), "-I", "-c", "pass",
        ])
        first = counts.read_text().split("\n", 1)[0].split()
    if len(first) < 3 or first[0] != "api":
        raise ArmSetupError(f"arm setup: {plugin}: the plugin loaded but wrote no API line")
    api = (int(first[1]), int(first[2]))
    if not api[0] <= PLUGIN_API_VERSION <= api[1]:
        raise ArmSetupError(f"arm setup: {qemu} speaks plugin API {api[0]}..{api[1]}, insn_count.c declares {PLUGIN_API_VERSION}")
    return plugin, api


def check_imports(env: ArmEnv, workdir: Path) -> None:
    """The emulated Python imports numpy, both interpreters and what reading a file's standard metadata
    needs (flatbuffers, LiteRT's schema): every file convert/quantize write carries that metadata."""
    from albert_edge.arm.cpus import make_root, probe

    root = make_root(env, probe(env, "cortex-a72"), workdir / "check-cortex-a72")
    _run("importing numpy, flatbuffers, ai_edge_litert and onnxruntime under qemu-aarch64", [
        str(env.qemu), "-cpu", "cortex-a72", "-L", str(root), str(root / PYTHON), "-I", "-c",
        f"import sys; sys.path.insert(0, {str(env.site_packages)!r}); "
        "import numpy, flatbuffers, ai_edge_litert.interpreter, ai_edge_litert.schema_py_generated, onnxruntime",
    ])


def _deb_version(path: Path) -> str:
    return path.name.split("_")[1].replace("%3a", ":")


def ensure_environment(root: Path | None = None) -> ArmEnv:
    """Every step above, in order; fast (hash checks only) when everything is cached."""
    root = cache_dir() if root is None else root
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ArmSetupError(f"arm setup: {root}: cache directory cannot be created ({exc.strerror})") from None
    lock = load_lock()
    qemu, qemu_version = ensure_qemu(lock)
    debs_dir, wheels_dir = root / "debs", root / "wheels"
    have_debs = all(_deb_file(debs_dir, d["package"], d["version"]).exists() for d in lock["debs"])
    if not have_debs:
        ensure_arm64_arch()
    debs = ensure_debs(lock, debs_dir)
    wheels = ensure_wheels(lock, wheels_dir)
    sysroot = ensure_sysroot(lock, root, debs, wheels)
    plugin, api = ensure_plugin(root, qemu, sysroot)
    packages = {"qemu-user": qemu_version}
    packages.update({f"{name}:arm64": _deb_version(path) for name, path in debs.items()})
    packages.update({w["name"]: w["version"] for w in lock["wheels"]})
    env = ArmEnv(qemu=qemu, qemu_version=qemu_version, sysroot=sysroot, plugin=plugin, plugin_api=api, packages=packages)
    stamp = sysroot / ".imports-checked"
    if not stamp.exists():
        check_imports(env, root)
        stamp.write_text("numpy, ai_edge_litert and onnxruntime import under qemu-aarch64\n")
    return env


def main() -> int:
    """``python -m albert_edge.arm.setup_env``: set up (or verify) and print where it is."""
    try:
        env = ensure_environment()
    except AlbertEdgeError as exc:
        print(str(exc), file=sys.stderr)
        return exc.exit_code
    print(f"qemu-aarch64 {env.qemu_version} ({env.qemu}), plugin API {env.plugin_api[0]}..{env.plugin_api[1]}")
    print(f"sysroot {env.sysroot}")
    print(f"plugin {env.plugin}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
