"""Emulated CPU models: which to trust, what features they have, and a /proc/cpuinfo to match.

Why a fake /proc/cpuinfo: qemu-user passes the host's x86 /proc/cpuinfo through, and the
cpuinfo library inside XNNPACK and ONNX Runtime crashes on it. It also infers dot-product
support from the MIDR it finds there, so the file must carry the MIDR of the emulated model
(a mismatched one gives illegal-instruction crashes). The MIDR and the HWCAP feature bits are
read from the emulated CPU itself (``mrs x0, midr_el1`` through ctypes, ``getauxval``), not
from a table, so every qemu CPU model gets a consistent file and every report names the
features the kernels could use.

Why ``max`` is refused unless ``sme=off``: with SME enabled, qemu 7.2 gives wrong int8 results
in both LiteRT and ONNX Runtime (see README, "ARM check"); a CPU model whose results are wrong
must not produce figures.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from albert_edge.arm.env import ArmEnv
from albert_edge.errors import AlbertEdgeError

DEFAULT_CPUS = ("neoverse-n1", "cortex-a76", "cortex-a72")

# Linux arm64 AT_HWCAP / AT_HWCAP2 bit names (arch/arm64/include/uapi/asm/hwcap.h), as in /proc/cpuinfo.
HWCAP = ("fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop "
         "sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg").split()
HWCAP2 = ("dcpodp sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svef32mm svef64mm svebf16 "
          "i8mm bf16 dgh rng bti mte ecv afp rpres mte3 sme smei16i64 smef64f64 smei8i32 smef16f32 smeb16f32 "
          "smef32f32 smefa64 wfxt ebf16 sveebf16 cssc rprfm sve2p1").split()

_PROBE = """
import ctypes, json, mmap
buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
buf.write((0xd5380000).to_bytes(4, 'little') + (0xd65f03c0).to_bytes(4, 'little'))  # mrs x0, midr_el1; ret
midr = ctypes.CFUNCTYPE(ctypes.c_uint64)(ctypes.addressof(ctypes.c_char.from_buffer(buf)))()
libc = ctypes.CDLL(None)
libc.getauxval.restype = ctypes.c_ulong
print(json.dumps([midr, libc.getauxval(16), libc.getauxval(26)]))
"""


class CpuModelError(AlbertEdgeError):
    """An emulated CPU model is unknown to this qemu or known to give wrong results."""


@dataclass(frozen=True)
class CpuModel:
    """One ``-cpu`` value as measured: MIDR fields and the feature names Linux would report."""

    spec: str
    midr: int
    features: tuple[str, ...]

    @property
    def kernel_family(self) -> str:
        """The int8 GEMM family the features allow (what the instruction counts reflect)."""
        if "i8mm" in self.features:
            return "i8mm"
        if "asimddp" in self.features:
            return "dot-product"
        return "NEON"

    def cpuinfo(self, processors: int) -> str:
        """A Linux arm64 /proc/cpuinfo text for ``processors`` identical cores."""
        block = (
            "processor\t: {n}\nBogoMIPS\t: 50.00\nFeatures\t: " + " ".join(self.features) + "\n"
            f"CPU implementer\t: 0x{(self.midr >> 24) & 0xFF:02x}\nCPU architecture: 8\n"
            f"CPU variant\t: 0x{(self.midr >> 20) & 0xF:x}\nCPU part\t: 0x{(self.midr >> 4) & 0xFFF:03x}\n"
            f"CPU revision\t: {self.midr & 0xF}\n\n"
        )
        return "".join(block.format(n=n) for n in range(processors))

    def to_json(self) -> dict:
        return {"cpu": self.spec, "midr": f"0x{self.midr:08x}", "features": list(self.features), "int8_kernels": self.kernel_family}


def available_models(env: ArmEnv) -> list[str]:
    """The names ``qemu-aarch64 -cpu help`` lists."""
    out = subprocess.run([str(env.qemu), "-cpu", "help"], capture_output=True, text=True).stdout
    return [line.strip() for line in out.splitlines()[1:] if line.strip()]


def check_spec(spec: str, known: list[str]) -> str:
    """Validate one ``--cpu`` value; refuses unknown models and ``max`` with SME enabled."""
    name, *props = [part.strip() for part in spec.split(",")]
    if name not in known:
        raise CpuModelError(f"--cpu {spec}: qemu-aarch64 has no CPU model {name!r} (it has: {', '.join(known)})")
    if name == "max" and "sme=off" not in props:
        raise CpuModelError(
            f"--cpu {spec}: refused: with SME enabled qemu 7.2 computes wrong int8 results (logits off by ~1.5 in both "
            "LiteRT and ONNX Runtime; see README 'ARM check'); use max,sme=off"
        )
    return ",".join([name, *props])


def probe(env: ArmEnv, spec: str) -> CpuModel:
    """Read MIDR_EL1 and AT_HWCAP/AT_HWCAP2 inside the emulated CPU."""
    proc = subprocess.run([str(env.qemu), "-cpu", spec, "-L", str(env.sysroot), str(env.python), "-I", "-c", _PROBE],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise CpuModelError(f"--cpu {spec}: qemu-aarch64 cannot run this CPU model ({last})")
    midr, hwcap, hwcap2 = json.loads(proc.stdout)
    features = [n for i, n in enumerate(HWCAP) if hwcap >> i & 1] + [n for i, n in enumerate(HWCAP2) if hwcap2 >> i & 1]
    return CpuModel(spec=spec, midr=midr, features=tuple(features))


def make_root(env: ArmEnv, model: CpuModel, directory: Path) -> Path:
    """A ``-L`` root for one CPU model: the sysroot's top level linked in, plus its own proc/cpuinfo.

    One root per model keeps runs under different models independent (qemu resolves guest
    paths under ``-L`` first, so the guest opens our cpuinfo instead of the host's).
    """
    directory.mkdir(parents=True, exist_ok=True)
    for entry in env.sysroot.iterdir():
        if entry.name.startswith(".") or entry.name == "proc":
            continue
        link = directory / entry.name
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(entry)
    (directory / "proc").mkdir(exist_ok=True)
    (directory / "proc" / "cpuinfo").write_text(model.cpuinfo(os.cpu_count() or 1))
    return directory
