"""Run an exported model on sample inputs and compare it with the numpy reference.

The float64 reference (``albert_edge.model.reference.reference_forward``) is the judge. Each file
runs in the interpreter an app would use -- LiteRT's signature runner for .tflite, ONNX Runtime
for .onnx -- at several batch sizes and sequence lengths, with and without padding, and at
1 and 2 threads, so the dynamic-shape paths and the mask are exercised, not just [1, 128].

A classifier's signature has only ``logits``; its hidden states are read from the same graph:
LiteRT keeps the named intermediate tensor (``experimental_preserve_all_tensors``), and for
ONNX the existing ``last_hidden_state`` tensor is exposed as an extra output of an in-memory copy.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from albert_edge.convert.tf_graph import HIDDEN_TENSOR_NAME, INPUT_NAMES
from albert_edge.errors import ConversionError
from albert_edge.tasks import PARITY_KEYS, SequenceClassification, Task, get_task

# Max |difference| allowed against the float64 reference, per variant: each task states its own
# (``Task.tolerances``); this is the classification task's table, kept under its old name.
TOLERANCES: dict[str, dict[str, float]] = SequenceClassification.tolerances
DEFAULT_THREADS = (1, 2)


@dataclass(frozen=True)
class ParityCase:
    """One sample batch: ``batch`` rows of ``seq`` tokens; ``padded`` rows end in padding."""

    batch: int
    seq: int
    padded: bool


def default_cases(max_seq_len: int = 128) -> tuple[ParityCase, ...]:
    """Batch 1 unpadded and batch 3 padded at seq 7, 64 and max_seq_len (each capped at max_seq_len)."""
    lengths = sorted({min(n, max_seq_len) for n in (7, 64, max_seq_len)})
    return tuple(case for seq in lengths for case in (ParityCase(1, seq, False), ParityCase(3, seq, True)))


def sample_inputs(config: Any, case: ParityCase, seed: int = 0) -> dict[str, np.ndarray]:
    """int32 [batch, seq] inputs; padded rows keep a decreasing number of real tokens (at least 1)."""
    rng = np.random.default_rng([seed, case.batch, case.seq, int(case.padded)])
    ids = rng.integers(1, config.vocab_size, size=(case.batch, case.seq)).astype(np.int32)
    mask = np.ones_like(ids)
    types = np.zeros_like(ids)
    for row in range(case.batch):
        length = case.seq
        if case.padded:
            length = max(1, case.seq - (row + 1) * case.seq // (case.batch + 1))
        ids[row, length:] = 0
        mask[row, length:] = 0
        if config.type_vocab_size > 1 and length > 2:
            types[row, length // 2 : length] = 1
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


@dataclass(frozen=True)
class ParitySamples:
    """Sample inputs and their reference outputs, computed once and shared by every file checked.

    The float64 reference dominates the cost of a parity check, so convert_checkpoint builds one
    ``ParitySamples`` per checkpoint and passes it to each ``check_parity`` call.
    """

    cases: tuple[ParityCase, ...]
    inputs: tuple[dict[str, np.ndarray], ...]
    expected: tuple[Any, ...]  # albert_edge.model.reference.ReferenceOutput per case


def make_samples(weights: Any, cases: Iterable[ParityCase] | None = None, seed: int = 0) -> ParitySamples:
    """Inputs for ``cases`` (default: ``default_cases`` up to 128 or max_position_embeddings) and their reference."""
    from albert_edge.model.reference import reference_forward

    cases = tuple(cases or default_cases(min(128, weights.config.max_position_embeddings)))
    inputs = tuple(sample_inputs(weights.config, case, seed) for case in cases)
    return ParitySamples(cases, inputs, tuple(reference_forward(weights, **x) for x in inputs))


@dataclass
class ParityResult:
    """Measured drift of one exported file against the reference, and whether it is within tolerance."""

    file: str
    format: str
    variant: str
    task: str
    max_abs_logit: float | None
    max_abs_hidden: float | None
    max_abs_pooled: float | None
    tolerance: dict[str, float]
    threads: tuple[int, ...]
    cases: list[dict[str, Any]] = field(default_factory=list)
    #: Every measured max |difference| by parity key ("logits", "hidden", "pooled", "embedding").
    max_abs: dict[str, float] = field(default_factory=dict)
    #: Parity keys the task requires to have been measured.
    required: tuple[str, ...] = ()

    @property
    def max_abs_embedding(self) -> float | None:
        return self.max_abs.get("embedding")

    @property
    def passed(self) -> bool:
        """Every measured difference is finite and within tolerance, and the task's outputs were measured."""
        measured = {"logits": self.max_abs_logit, "hidden": self.max_abs_hidden, "pooled": self.max_abs_pooled,
                    **self.max_abs}
        if any(measured.get(key) is None for key in self.required):
            return False
        # A key without its own bound (pooled output) is held to the hidden-state bound.
        limits = {key: self.tolerance.get(key, self.tolerance.get("hidden")) for key in measured}
        return all(np.isfinite(diff) and diff <= limits[key] for key, diff in measured.items()
                   if diff is not None and limits[key] is not None)

    def failure_line(self) -> str:
        measured = ", ".join(f"max |d{key}| {_fmt(value)}" for key, value in self.max_abs.items())
        return f"{self.file}: parity check failed: {measured} vs tolerance {self.tolerance}"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["threads"] = list(self.threads)
        out["passed"] = self.passed
        return out


def check_parity(
    model: bytes | str | os.PathLike[str],
    weights: Any,
    *,
    variant: str = "fp32",
    task: Task | str | None = None,
    samples: ParitySamples | None = None,
    tolerance: Mapping[str, float] | None = None,
    threads: Iterable[int] = DEFAULT_THREADS,
    name: str | None = None,
) -> ParityResult:
    """Run ``model`` (a .tflite/.onnx path or its bytes) against ``reference_forward(weights, ...)``.

    ``samples`` defaults to ``make_samples(weights)`` (batch 1 and 3, seq 7/64/128, padded rows).
    ``tolerance`` defaults to the task's ``tolerances[variant]`` (keys are parity keys: "logits",
    "hidden", "pooled", "embedding"); quantized variants must pass their own. Never raises on drift: callers decide (``convert_checkpoint`` raises).
    """
    from albert_edge.runtime.pack import model_kind

    data = model if isinstance(model, (bytes, bytearray)) else Path(model).read_bytes()
    label = name or ("<bytes>" if isinstance(model, (bytes, bytearray)) else os.fspath(model))
    fmt = model_kind(bytes(data))
    if fmt not in ("tflite", "onnx"):
        raise ConversionError(f"{label}: not a .tflite or .onnx model")
    task = get_task(task, weights)
    if tolerance is None:
        if variant not in task.tolerances:
            raise ConversionError(f"{label}: no default tolerance for variant {variant!r}; pass tolerance=")
        tolerance = task.tolerances[variant]
    samples = samples or make_samples(weights)
    threads = tuple(threads)
    run = _tflite_runner if fmt == "tflite" else _onnx_runner
    worst: dict[str, float] = {}
    case_rows = []
    for position, num_threads in enumerate(threads):
        # Hidden states are read through a second, debug interpreter; once (first thread count) is enough.
        runner = run(bytes(data), task, num_threads, label, position == 0)
        for case, inputs, ref in zip(samples.cases, samples.inputs, samples.expected):
            got = runner(inputs)
            diffs = _diffs(got, task.parity_expected(ref, inputs["attention_mask"]), label, case)
            for key, value in diffs.items():
                # Not max(): max(0.0, nan) is 0.0, so a model with NaN outputs "passed" parity.
                worst[key] = float(np.maximum(worst.get(key, 0.0), value))
            case_rows.append({**asdict(case), "threads": num_threads, **diffs})
    return ParityResult(file=label, format=fmt, variant=variant, task=task.name,
                        max_abs_logit=worst.get("logits"), max_abs_hidden=worst.get("hidden"),
                        max_abs_pooled=worst.get("pooled"), tolerance=dict(tolerance), threads=threads,
                        cases=case_rows, max_abs=worst, required=task.parity_required)


def _diffs(got: Mapping[str, np.ndarray], expected: Mapping[str, Any], label: str, case: ParityCase) -> dict[str, float]:
    out = {}
    for key, want in expected.items():
        if key not in got or want is None:
            continue
        have = np.asarray(got[key], dtype=np.float64)
        if have.shape != want.shape:
            raise ConversionError(f"{label}: output {key} has shape {list(have.shape)} for batch {case.batch} "
                                  f"seq {case.seq}, expected {list(want.shape)}")
        out[key] = float(np.max(np.abs(have - want))) if have.size else 0.0
    return out


def _tflite_runner(data: bytes, task: Task, num_threads: int, label: str, with_hidden: bool):
    from ai_edge_litert.interpreter import Interpreter

    try:
        runner = Interpreter(model_content=data, num_threads=num_threads).get_signature_runner("serving_default")
        probe = None
        if "last_hidden_state" not in task.outputs() and with_hidden:
            with warnings.catch_warnings():
                # LiteRT warns that keeping intermediates costs memory; that is the point here.
                warnings.simplefilter("ignore", UserWarning)
                probe = Interpreter(model_content=data, num_threads=num_threads, experimental_preserve_all_tensors=True)
    except (ValueError, RuntimeError) as exc:
        raise ConversionError(f"{label}: LiteRT cannot load the model ({str(exc).strip().splitlines()[0]})") from None
    hidden_index = None
    if probe is not None:
        hidden = next((t for t in probe.get_tensor_details() if t["name"] == HIDDEN_TENSOR_NAME), None)
        hidden_index = None if hidden is None else hidden["index"]
        # In a fully quantized model the tensor holds integers; compare its dequantized values.
        scale, zero_point = (hidden["quantization"] if hidden is not None and hidden["dtype"] != np.float32
                             else (1.0, 0))
        probe_runner = probe.get_signature_runner("serving_default")

    # A batch-one graph (GraphOptions(batch_one=True)) reshapes with constants: rows run one by one.
    batch_one = all(d["shape_signature"][0] == 1 for d in runner.get_input_details().values())

    def invoke(call, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        feed = {name: inputs[name] for name in INPUT_NAMES}
        rows = len(feed["input_ids"])
        if not batch_one or rows == 1:
            return call(**feed)
        outs = [call(**{k: v[i : i + 1] for k, v in feed.items()}) for i in range(rows)]
        return {k: np.concatenate([o[k] for o in outs]) for k in outs[0]}

    def run(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            out = invoke(runner, inputs)
            got = {PARITY_KEYS.get(name, name): out[name] for name in task.outputs()}
            if hidden_index is not None:
                rows = range(len(inputs["input_ids"])) if batch_one else [slice(None)]
                parts = []
                for row in rows:
                    probe_runner(**{name: inputs[name][row if isinstance(row, slice) else slice(row, row + 1)]
                                    for name in INPUT_NAMES})
                    parts.append(probe.get_tensor(hidden_index))
                raw = np.concatenate(parts)
                got["hidden"] = (raw.astype(np.float64) - zero_point) * scale if scale != 1.0 or zero_point else raw
        except (ValueError, RuntimeError, KeyError) as exc:
            raise ConversionError(f"{label}: LiteRT failed to run the serving signature ({str(exc).strip().splitlines()[0]})") from None
        return got

    return run


def _onnx_runner(data: bytes, task: Task, num_threads: int, label: str, with_hidden: bool):
    import onnxruntime as ort

    from albert_edge.convert.onnx_graph import HIDDEN_OUTPUT

    if "last_hidden_state" not in task.outputs() and with_hidden:
        data = _with_hidden_output(data)
    options = ort.SessionOptions()
    options.intra_op_num_threads = num_threads
    options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # noqa: BLE001 - ORT raises its own untyped Fail/InvalidGraph errors
        raise ConversionError(f"{label}: ONNX Runtime cannot load the model ({str(exc).strip().splitlines()[0]})") from None
    names = [o.name for o in session.get_outputs()]
    rename = {**{name: PARITY_KEYS.get(name, name) for name in task.outputs()}, HIDDEN_OUTPUT: "hidden"}

    def run(inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        try:
            values = session.run(names, {name: inputs[name] for name in INPUT_NAMES})
        except Exception as exc:  # noqa: BLE001 - ORT raises its own untyped RuntimeException
            raise ConversionError(f"{label}: ONNX Runtime failed to run ({str(exc).strip().splitlines()[0]})") from None
        return {rename[n]: v for n, v in zip(names, values) if n in rename}

    return run


def _with_hidden_output(data: bytes) -> bytes:
    """The same ModelProto with the existing ``last_hidden_state`` tensor also listed as an output."""
    import onnx
    from onnx import TensorProto, helper

    from albert_edge.convert.onnx_graph import HIDDEN_OUTPUT

    model = onnx.load_from_string(data)
    if HIDDEN_OUTPUT not in {o.name for o in model.graph.output} and any(
            HIDDEN_OUTPUT in n.output for n in model.graph.node):
        model.graph.output.append(helper.make_tensor_value_info(HIDDEN_OUTPUT, TensorProto.FLOAT, None))
    return model.SerializeToString()


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"
