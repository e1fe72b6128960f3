"""Where a quantized TFLite graph loses accuracy: a per-op, per-layer-use error table against fp32.

What ai-edge-quantizer's and ONNX Runtime's debug tools report, for any variant the converter
makes (dynamic-range, static int8 with float islands, full int8, fallbacks): both graphs run on the
same calibration texts with ``experimental_preserve_all_tensors`` and every tensor of the variant is
compared with the fp32 tensor of the same name (the converter keeps names across variants; int8
tensors are dequantized with their scale and zero point). Two errors per op:

* ``local``: for each quantized FULLY_CONNECTED (int8 weights or int8 activations), its output
  against the float FC (fp32 weights and bias) applied to the variant's *own float input*, the
  tensor before any QUANTIZE. It isolates what quantizing this one op costs (the input's int8
  rounding, where activation outliers bite, plus the weights' and the output's), so ranking by it
  says which ops to keep float, whatever came before them.
* ``accumulated``: the op's output against fp32's on the same text: what the whole graph up to that
  point has lost. Residual sums and LayerNorm inputs show up here.

Each figure is an SNR in dB (10·log10 of signal power over error power: 40 dB is 1 % RMS error),
a cosine and a max |error|, pooled over the texts. ALBERT applies its shared layer L times: the
table names each FC by the canonical weight it multiplies (matched by value) and the use, ``#k``
being its k-th application; other ops are named after the FC they follow.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

#: Ops that only convert or move data: never rows of the table.
_PLUMBING = {"QUANTIZE", "DEQUANTIZE", "RESHAPE", "SHAPE", "PACK", "STRIDED_SLICE", "CAST", "TRANSPOSE",
             "SQUEEZE", "EXPAND_DIMS", "CONCATENATION", "SPLIT", "GATHER", "SLICE"}
_QUANTIZED = (np.int8, np.uint8, np.int16)


@dataclass
class OpError:
    """One row: the op, its place, and how far its output is from fp32 (None where not measured)."""

    index: int
    op: str
    tensor: str
    where: str
    dtype: str
    quantized: bool
    local_snr_db: float | None = None
    local_cosine: float | None = None
    local_max_abs: float | None = None
    snr_db: float | None = None
    cosine: float | None = None
    max_abs: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: (round(v, 5) if isinstance(v, float) else v) for k, v in asdict(self).items()}


@dataclass
class ErrorTable:
    """The rows of one variant, in graph order, and how they were measured."""

    variant: str
    texts: int
    rows: list[OpError] = field(default_factory=list)

    def ranking(self) -> list[OpError]:
        """Quantized FCs, worst local SNR first: the order in which to keep ops float."""
        measured = [r for r in self.rows if r.quantized and r.local_snr_db is not None]
        return sorted(measured, key=lambda r: r.local_snr_db)

    def worst(self, n: int = 8) -> list[OpError]:
        return self.ranking()[:n]

    def to_dict(self) -> dict[str, Any]:
        return {"variant": self.variant, "texts": self.texts,
                "metrics": "SNR dB / cosine / max|err| vs fp32; local = this op alone, on the variant's own float input",
                "rows": [r.to_dict() for r in self.rows]}

    def lines(self, n: int = 8) -> list[str]:
        """The top offenders, one line each, for the console."""
        out = []
        for r in self.worst(n):
            out.append(f"  {self.variant:<16}{r.where:<44} local SNR {r.local_snr_db:6.1f} dB  cos {r.local_cosine:.5f}  "
                       f"max|err| {r.local_max_abs:8.4f}  | graph SNR {_f(r.snr_db)} dB")
        return out


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


class _Stats:
    """Pooled SNR / cosine / max|err| over many (reference, value) pairs."""

    def __init__(self) -> None:
        self.signal = self.noise = self.dot = self.ref2 = self.val2 = 0.0
        self.max_abs = 0.0

    def add(self, reference: np.ndarray, value: np.ndarray) -> None:
        r, v = reference.astype(np.float64).ravel(), value.astype(np.float64).ravel()
        diff = v - r
        self.signal += float(r @ r)
        self.noise += float(diff @ diff)
        self.dot += float(r @ v)
        self.ref2 += float(r @ r)
        self.val2 += float(v @ v)
        self.max_abs = max(self.max_abs, float(np.abs(diff).max(initial=0.0)))

    def snr_db(self) -> float:
        if self.noise == 0:
            return 200.0
        return float(10 * np.log10(max(self.signal, 1e-30) / self.noise))

    def cosine(self) -> float:
        return float(self.dot / np.sqrt(max(self.ref2 * self.val2, 1e-300)))


def _interpreter(model: bytes):
    import warnings

    from ai_edge_litert.interpreter import Interpreter

    from albert_edge.runtime.pack import strip_tflite_pack

    with warnings.catch_warnings():
        # "intended for debugging purposes only": this is the debugging purpose.
        warnings.simplefilter("ignore", UserWarning)
        return Interpreter(model_content=strip_tflite_pack(bytes(model)), experimental_preserve_all_tensors=True,
                           num_threads=1)


def _run(interpreter, sample: Mapping[str, np.ndarray]) -> None:
    details = interpreter.get_input_details()
    for d in details:
        name = next(n for n in sample if n in d["name"])
        interpreter.resize_tensor_input(d["index"], sample[name].shape)
    interpreter.allocate_tensors()
    for d in details:
        name = next(n for n in sample if n in d["name"])
        interpreter.set_tensor(d["index"], sample[name])
    interpreter.invoke()


def _value(interpreter, detail: Mapping[str, Any]) -> np.ndarray:
    value = interpreter.get_tensor(detail["index"])
    if value.dtype in _QUANTIZED:
        params = detail["quantization_parameters"]
        scales, zeros = params["scales"], params["zero_points"]
        if len(scales) == 1:
            return (value.astype(np.float32) - zeros[0]) * scales[0]
        if len(scales) > 1:
            axis = params["quantized_dimension"]
            shape = [1] * value.ndim
            shape[axis] = -1
            return (value.astype(np.float32) - zeros.reshape(shape)) * scales.reshape(shape)
    return value


def weight_names(fp32_model: bytes, weights: Any) -> dict[str, str]:
    """fp32 FC output tensor name -> canonical kernel name, matched by value ([in, out] vs TFLite's [out, in]).

    Up to a positive scalar: the graph folds 1/sqrt(head_dim) into the query kernel.
    """
    if weights is None:
        return {}
    by_shape: dict[tuple[int, ...], list[tuple[str, np.ndarray]]] = {}
    for name, value in weights.tensors.items():
        if name.endswith("kernel") and np.ndim(value) == 2:
            by_shape.setdefault(tuple(np.shape(value)[::-1]), []).append((name, np.asarray(value, np.float32).T))
    interpreter = _interpreter(fp32_model)
    tensors = {t["index"]: t for t in interpreter.get_tensor_details()}
    names = {}
    for op in interpreter._get_ops_details():
        if op["op_name"] != "FULLY_CONNECTED" or len(op["inputs"]) < 2:
            continue
        detail = tensors[int(op["inputs"][1])]
        try:
            kernel = interpreter.get_tensor(detail["index"])
        except ValueError:
            continue
        for name, value in by_shape.get(tuple(kernel.shape), []):
            factor = float(np.vdot(kernel, value) / max(float(np.vdot(value, value)), 1e-30))
            if factor > 0 and np.allclose(kernel, factor * value, atol=1e-6):
                names[tensors[int(op["outputs"][0])]["name"]] = name
                break
    return names


def error_table(variant: str, model: bytes, fp32_model: bytes, samples: Sequence[Mapping[str, np.ndarray]],
                weights: Any = None, max_texts: int = 24) -> ErrorTable:
    """The table of ``model`` (a quantized variant of ``fp32_model``) on up to ``max_texts`` ``samples``."""
    samples = list(samples)[:max_texts]
    quant, ref = _interpreter(model), _interpreter(fp32_model)
    q_ops, r_ops = quant._get_ops_details(), ref._get_ops_details()
    q_tensors = {t["index"]: t for t in quant.get_tensor_details()}
    r_tensors = {t["index"]: t for t in ref.get_tensor_details()}
    r_by_name = {t["name"]: t for t in r_tensors.values()}
    r_fc = {r_tensors[int(o["outputs"][0])]["name"]: o for o in r_ops if o["op_name"] == "FULLY_CONNECTED"}
    producer = {int(t): o for o in q_ops for t in o["outputs"]}
    canonical = weight_names(fp32_model, weights)

    def float_source(index: int) -> int:
        """The float tensor a QUANTIZE read (the activation before int8 rounding) or a smoothing MUL scaled
        (``fc_smoothing``: the fp32 FC reads the unscaled one), else ``index``."""
        from albert_edge.quantize.fc_smoothing import SMOOTHED_SUFFIX

        op = producer.get(index)
        if op is not None and (op["op_name"] == "QUANTIZE" or (op["op_name"] == "MUL"
                                                               and q_tensors[index]["name"].endswith(SMOOTHED_SUFFIX))):
            return int(op["inputs"][0])
        return index

    rows: list[OpError] = []
    plan: list[tuple[OpError, dict | None, dict | None, int | None]] = []
    uses: dict[str, int] = {}
    last = "embeddings"
    for op in q_ops:
        if not op["outputs"].size or op["op_name"] in _PLUMBING:
            continue
        out = q_tensors[int(op["outputs"][0])]
        inputs = [int(i) for i in op["inputs"] if int(i) >= 0]
        dtypes = [q_tensors[i]["dtype"] for i in inputs] + [out["dtype"]]
        quantized = any(dt in _QUANTIZED for dt in dtypes)
        name = out["name"]
        if op["op_name"] == "FULLY_CONNECTED":
            base = canonical.get(name, f"fc:{name}")
            uses[base] = uses.get(base, 0) + 1
            last = f"{base}#{uses[base]}"
            where = last
        else:
            where = f"{op['op_name'].lower()} after {last}"
        row = OpError(int(op["index"]), op["op_name"], name, where, np.dtype(out["dtype"]).name, bool(quantized))
        reference = r_by_name.get(name)
        if reference is not None and tuple(reference["shape"]) != tuple(out["shape"]) and -1 not in out["shape_signature"]:
            reference = None
        fc = r_fc.get(name) if op["op_name"] == "FULLY_CONNECTED" and quantized else None
        plan.append((row, reference, fc, float_source(inputs[0]) if fc is not None else None))
        rows.append(row)

    outputs = [q_tensors[int(quant._get_op_details(row.index)["outputs"][0])] for row, *_ in plan]
    local = [_Stats() for _ in plan]
    accumulated = [_Stats() for _ in plan]
    for sample in samples:
        _run(quant, sample)
        _run(ref, sample)
        for k, (row, reference, fc, source) in enumerate(plan):
            value = _value(quant, outputs[k])
            if reference is not None:
                expected = ref.get_tensor(reference["index"])
                if expected.shape == value.shape:
                    accumulated[k].add(expected, value)
            if fc is not None:
                x = _value(quant, q_tensors[source])
                kernel = ref.get_tensor(int(fc["inputs"][1]))
                bias = ref.get_tensor(int(fc["inputs"][2])) if len(fc["inputs"]) > 2 and int(fc["inputs"][2]) >= 0 else 0.0
                expected = x.reshape(-1, kernel.shape[1]).astype(np.float32) @ kernel.T + bias
                local[k].add(expected.reshape(value.shape), value)
    for k, (row, reference, fc, _) in enumerate(plan):
        if accumulated[k].signal or accumulated[k].noise:
            row.snr_db, row.cosine, row.max_abs = accumulated[k].snr_db(), accumulated[k].cosine(), accumulated[k].max_abs
        if fc is not None:
            row.local_snr_db, row.local_cosine, row.local_max_abs = local[k].snr_db(), local[k].cosine(), local[k].max_abs
    return ErrorTable(variant, len(samples), rows)

