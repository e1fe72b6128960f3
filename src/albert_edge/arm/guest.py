"""One model on a list of texts with our TextClassifier; the same code on x86 and under qemu.

Why one function for both sides: the x86 reference and the emulated ARM run must differ only
in the kernels underneath, so both go through ``run_job`` (batch 1, each text at its real
length, one interpreter thread, the classifier's own ``run_inputs``). Under qemu it runs as
``python -m albert_edge.arm.guest JOB OUT`` with only numpy and the interpreter wheels
installed, so it imports nothing but the runtime.

Instruction counting: ``Marker`` issues an otherwise unused syscall (number and magic in
insn_count.c) which the TCG plugin logs with its running instruction count. For the first
``count_limit`` texts the invoke is run a second time between two markers -- the second run,
because the first one at a new shape also resizes tensors and re-plans XNNPACK, which a phone
app pays once, not per text. Empty marker pairs measure the markers' own cost, which the
host subtracts.
"""

from __future__ import annotations

import ctypes
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

MARKER_NR = 2784
MARKER_MAGIC = 0x414C4245
CALIBRATION_PAIRS = 5


class Marker:
    """Tags a point in the instruction stream (a no-op syscall the plugin logs)."""

    def __init__(self) -> None:
        self._syscall = ctypes.CDLL(None).syscall
        self._syscall.restype = ctypes.c_long
        self.next_tag = 0

    def __call__(self) -> int:
        tag = self.next_tag
        self.next_tag += 1
        self._syscall(ctypes.c_long(MARKER_NR), ctypes.c_long(MARKER_MAGIC), ctypes.c_long(tag))
        return tag


def _padded(clf, enc, width: int) -> dict[str, np.ndarray]:
    """One text padded to ``width`` as the runtime pads a batch (pad id, mask 0)."""
    ids = np.full((1, width), clf.tokenizer.pad_id, np.int32)
    ids[0, : enc.length] = enc.input_ids[: enc.length]
    types = np.zeros((1, width), np.int32)
    types[0, : enc.length] = enc.token_type_ids[: enc.length]
    mask = np.zeros((1, width), np.int32)
    mask[0, : enc.length] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def run_job(job: dict, marker: Callable[[], int] | None = None) -> dict:
    """Logits for every text; with a marker, tagged invokes for the instruction counts.

    ``job``: model (path), texts, count_limit (texts counted at their real length),
    count_padded (texts counted padded to ``pad_to``), pad_to.
    """
    from albert_edge.runtime import TextClassifier

    clf = TextClassifier.from_file(job["model"], num_threads=1)
    encs = clf.encode_all(job["texts"])
    result: dict = {"labels": list(clf.labels), "backend": clf.backend_name, "lengths": [e.length for e in encs],
                    "logits": [], "calibration": [], "counted": [], "counted_padded": [], "repeat_mismatch": 0}
    if marker is not None:
        result["calibration"] = [[marker(), marker()] for _ in range(CALIBRATION_PAIRS)]
    for i, (_, inputs) in enumerate(clf.iter_batches(encs, batch_size=1, bucket=False)):
        logits = clf.run_inputs(inputs)
        result["logits"].append(logits[0].tolist())
        if marker is not None and i < job["count_limit"]:
            begin = marker()
            again = clf.run_inputs(inputs)
            end = marker()
            result["counted"].append({"index": i, "length": encs[i].length, "tags": [begin, end]})
            result["repeat_mismatch"] += int(not np.array_equal(again, logits))
    width = min(int(job.get("pad_to", 128)), clf.max_seq_len)
    result["pad_to"] = width
    if marker is not None:
        for i in range(min(job.get("count_padded", 0), len(encs))):
            inputs = _padded(clf, encs[i], width)
            clf.run_inputs(inputs)   # first run at this shape: resize and plan
            begin = marker()
            clf.run_inputs(inputs)
            end = marker()
            result["counted_padded"].append({"index": i, "length": width, "tags": [begin, end]})
    return result


def main(argv: list[str]) -> int:
    """``python -m albert_edge.arm.guest JOB.json OUT.json`` (inside qemu-aarch64)."""
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    result = run_job(job, Marker())
    Path(argv[1]).write_text(json.dumps(result), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
