"""Commands import without POSIX-only modules (``resource``, ``fcntl``, ``termios``), as on Windows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (SRC, os.environ.get("PYTHONPATH")) if p)}

SCRIPT = """
import sys
for name in ("resource", "fcntl", "termios"):
    sys.modules[name] = None  # `import resource` now raises ImportError, as on Windows
import albert_edge.bench_latency.runner, albert_edge.bench_latency.worker, albert_edge.demo.pipeline
import albert_edge.cli.bench_cmd, albert_edge.cli.demo_cmd, albert_edge.cli.predict_cmd
from albert_edge.bench_latency.memory import max_rss_mb, process_usage
usage = process_usage()
assert usage.ru_utime + usage.ru_stime > 0 and usage.ru_nivcsw == 0, usage
assert max_rss_mb() >= 0
print("ok")
"""


def test_bench_and_demo_import_without_posix_only_modules():
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300,
                          env=ENV)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


POSIX_ONLY = {"resource", "fcntl", "termios", "pwd", "grp", "tty", "pty", "posix", "crypt", "spwd", "syslog"}


def test_no_module_imports_a_posix_only_module_at_its_top():
    """A module-level ``import resource`` (or fcntl, termios, ...) breaks importing it on Windows; such
    imports belong inside the function that needs them, behind a platform check."""
    import ast

    found = []
    for path in sorted(Path(SRC, "albert_edge").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in tree.body:  # module level only; function bodies are imported when called
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
            found += [f"{path.relative_to(SRC)}:{node.lineno} {n}" for n in names if n.split(".")[0] in POSIX_ONLY]
    assert found == []
