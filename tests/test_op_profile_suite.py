"""benchmarks/suites/op_profile.py on a tiny packed model: truncated graphs compute the cut op's tensor,
and a run reports per-op costs that add up to its layer and the whole call (figures never asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from tests.support.bench_models import shared_models

from benchmarks.suites.op_profile import SIGNATURE, op_names, truncated

ROOT = Path(__file__).resolve().parents[1]


def feeds(seq_len: int = 6) -> dict[str, np.ndarray]:
    ids = (np.arange(seq_len, dtype=np.int32) % 7 + 1).reshape(1, seq_len)
    return {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}


def test_a_truncated_graph_outputs_the_cut_ops_tensor():
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from ai_edge_litert.tools import flatbuffer_utils as fu

    path = shared_models()["fp32"]
    model = fu.read_model(str(path))
    ops = model.subgraphs[0].operators
    full = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True,
                       experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    full.get_signature_runner(SIGNATURE)(**feeds())   # no delegate: every intermediate tensor readable
    work = Path(tempfile.mkdtemp(prefix="albert-edge-op-profile-test-"))
    names = op_names(model)
    cuts = [i for i, name in enumerate(names) if name in ("FULLY_CONNECTED", "SOFTMAX", "ADD")][:4]
    assert cuts, names
    for cut in cuts:
        part = Interpreter(model_path=str(truncated(path, cut, work)))
        got = next(iter(part.get_signature_runner(SIGNATURE)(**feeds()).values()))
        np.testing.assert_allclose(got, full.get_tensor(int(ops[cut].outputs[0])), rtol=1e-5, atol=1e-6)


def test_a_run_reports_per_op_costs_that_add_up():
    from ai_edge_litert.tools import flatbuffer_utils as fu

    path = shared_models()["int8"]
    names = op_names(fu.read_model(str(path)))
    first = names.index("FULLY_CONNECTED") + 1
    last = len(names) - 2
    proc = subprocess.run([sys.executable, "-m", "benchmarks.suites.op_profile", str(path), "--threads", "1",
                           "--rounds", "2", "--calls", "2", "--seq-len", "8", "--clock", "cpu",
                           "--layer", f"{first}:{last}"],
                          capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    run = json.loads(proc.stdout)["models"][str(path)]
    assert [op["index"] for op in run["layer_ops"]] == list(range(first, last + 1))
    assert [op["op"] for op in run["layer_ops"]] == names[first:last + 1]
    assert sum(op["ms"] for op in run["layer_ops"]) == pytest.approx(run["layer_ms"])
    assert sum(run["layer_by_type_ms"].values()) == pytest.approx(run["layer_ms"])
    assert run["embeddings_ms"] + run["layers"] * run["layer_ms"] + run["rest_ms"] == pytest.approx(run["whole_ms"])
    assert run["rounds"] == 2 and run["whole_ms"] > 0
