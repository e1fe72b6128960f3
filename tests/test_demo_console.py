"""quiet_console: fd-level chatter lands in the log, the demo's own lines on the terminal."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, sys, warnings
from albert_edge.demo.console import quiet_console
with quiet_console(sys.argv[1]) as console:
    os.write(2, b"I0000 port.cc:153] oneDNN custom operations are on\\n")
    os.write(1, b"INFO: Created TensorFlow Lite XNNPACK delegate for CPU.\\n")
    print("python-level chatter")
    warnings.warn("tf.lite.Interpreter is deprecated")
    print("## the report", file=console)
print("after: back on stdout")
"""


def test_chatter_goes_to_the_log_and_the_report_to_the_terminal(tmp_path):
    log = tmp_path / "chatter.log"
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(log)], capture_output=True, text=True, check=True)
    assert proc.stdout.splitlines() == ["## the report", "after: back on stdout"]
    assert proc.stderr == ""
    text = log.read_text()
    for line in ("oneDNN", "XNNPACK delegate", "python-level chatter", "deprecated"):
        assert line in text


def test_verbose_leaves_the_descriptors_alone(tmp_path, capfd):
    from albert_edge.demo.console import quiet_console

    with quiet_console(tmp_path / "unused.log", enabled=False) as console:
        print("shown", file=console)
    assert "shown" in capfd.readouterr().out and not (tmp_path / "unused.log").exists()
