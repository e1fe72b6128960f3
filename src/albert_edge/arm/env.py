"""A ready aarch64 environment: where qemu, the sysroot and the plugin are, and what went into them.

``setup_env`` makes one (``ensure_environment``) and ``cpus`` / ``check`` run models in it; the
record lives here so that neither of those modules has to import the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

#: Where, inside the sysroot, the arm64 wheels are installed and the guest Python is.
SITE_PACKAGES = "opt/albert-edge/site-packages"
PYTHON = "usr/bin/python3.11"


@dataclass(frozen=True)
class ArmEnv:
    """A ready environment: where everything is, and the versions that went into it."""

    qemu: Path
    qemu_version: str
    sysroot: Path
    plugin: Path
    plugin_api: tuple[int, int]
    packages: dict[str, str] = field(default_factory=dict)

    @property
    def python(self) -> Path:
        return self.sysroot / PYTHON

    @property
    def site_packages(self) -> Path:
        return self.sysroot / SITE_PACKAGES
