"""Python ``logging`` chatter from libraries goes to the chatter log too (issue #27 cause 18, #30).

ONNX Runtime's quantizer logs "Please consider to run pre-processing before quantization" through the
root logger; with no handler configured, ``logging.warning`` adds one on the user's stderr, so three such
lines arrived before albert-edge's own one-line error. Run in a fresh interpreter: pytest's own logging
handlers on the root logger would hide the problem.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = """
import logging, sys
from pathlib import Path
from albert_edge.chatter import chatter_to_log
log = Path(sys.argv[1])
with chatter_to_log(log):
    logging.warning("Please consider to run pre-processing before quantization")
    print("albert-edge's own line", file=sys.stderr)
logging.getLogger("after").warning("outside the block this reaches stderr")
"""


def test_root_logger_warnings_inside_the_block_go_to_the_log(tmp_path: Path) -> None:
    log = tmp_path / "chatter.log"
    result = subprocess.run([sys.executable, "-c", SCRIPT, str(log)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "pre-processing" not in result.stderr
    assert "albert-edge's own line" in result.stderr
    assert "outside the block this reaches stderr" in result.stderr
    assert "WARNING:root:Please consider to run pre-processing" in log.read_text(encoding="utf-8")
