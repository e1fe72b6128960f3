"""What a quantized graph really runs: ops by dtype, Quantize/Dequantize count, XNNPACK coverage.

An op count alone hides why int8 can be slower than float: the same op kind runs in XNNPACK
in float and on the slow builtin kernels in int8. So the census keys ops as ``OP:dtype`` (dtype
of the first input), and ``xnnpack_coverage`` reports, after the default XNNPACK delegate has
been applied, which nodes it took, how many partitions it made and which op kinds it left on
the builtin kernels.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

#: TFLite TensorType enum -> short name.
_DTYPES = {0: "f32", 1: "f16", 2: "i32", 3: "u8", 4: "i64", 6: "bool", 7: "i16", 9: "i8", 17: "i4"}


@dataclass
class TfliteCensus:
    """``ops`` is ``OP:dtype`` -> count; ``quantize``/``dequantize`` count the conversion ops."""

    ops: dict[str, int]
    quantize: int
    dequantize: int
    delegated_nodes: int
    total_nodes: int
    partitions: int
    not_delegated: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def tflite_op_dtypes(model: bytes) -> dict[str, int]:
    """``OP:dtype`` -> count over the main subgraph, read from the flatbuffer.

    dtype is that of the op's first (activation) input; ``+w_i8`` marks a float op with int8
    weights (the dynamic-range "hybrid" form), e.g. ``FULLY_CONNECTED:f32+w_i8``; ``+w_i4`` one with int4
    weights (``dynamic_int4``), which would otherwise read as a float op.
    """
    from ai_edge_litert import schema_py_generated as schema
    from albert_edge.runtime.pack import strip_tflite_pack

    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    root = schema.Model.GetRootAsModel(strip_tflite_pack(bytes(model)), 0)
    codes = []
    for i in range(root.OperatorCodesLength()):
        code = root.OperatorCodes(i)
        codes.append(max(code.BuiltinCode(), code.DeprecatedBuiltinCode()))
    graph = root.Subgraphs(0)
    counts: Counter = Counter()
    for i in range(graph.OperatorsLength()):
        op = graph.Operators(i)
        name = names.get(codes[op.OpcodeIndex()], str(codes[op.OpcodeIndex()]))
        types = [graph.Tensors(op.Inputs(j)).Type() if op.Inputs(j) >= 0 else -1 for j in range(op.InputsLength())]
        key = f"{name}:{_DTYPES.get(types[0], types[0]) if types else '-'}"
        if types and types[0] == 0 and 9 in types[1:]:
            key += "+w_i8"  # hybrid (dynamic-range) kernel: float activations, int8 weights
        elif types and types[0] == 0 and 17 in types[1:]:
            key += "+w_i4"  # the same with int4 weights (``dynamic_int4``)
        counts[key] += 1
    return dict(sorted(counts.items()))


def xnnpack_coverage(model: bytes, num_threads: int = 2, seq_len: int = 128) -> tuple[int, int, int, dict[str, int]]:
    """(delegated nodes, original nodes, delegate partitions, op kind -> count left on builtins).

    LiteRT lists the original nodes followed by one DELEGATE node per partition; a DELEGATE
    node covers every original node between its inputs and outputs, found by walking producers
    back from its outputs until its inputs.
    """
    from ai_edge_litert.interpreter import Interpreter
    from albert_edge.runtime.pack import strip_tflite_pack

    interpreter = Interpreter(model_content=strip_tflite_pack(bytes(model)), num_threads=num_threads)
    for detail in interpreter.get_input_details():
        interpreter.resize_tensor_input(detail["index"], [1, seq_len])
    interpreter.allocate_tensors()
    ops = interpreter._get_ops_details()
    original = [o for o in ops if o["op_name"] != "DELEGATE"]
    delegates = [o for o in ops if o["op_name"] == "DELEGATE"]
    producer = {int(t): o for o in original for t in o["outputs"]}
    covered: set[int] = set()
    for node in delegates:
        stop = {int(t) for t in node["inputs"]}
        stack = [int(t) for t in node["outputs"]]
        while stack:
            tensor = stack.pop()
            if tensor in stop or tensor not in producer:
                continue
            op = producer[tensor]
            if op["index"] in covered:
                continue
            covered.add(op["index"])
            stack.extend(int(t) for t in op["inputs"])
    left = Counter(o["op_name"] for o in original if o["index"] not in covered)
    return len(covered), len(original), len(delegates), dict(sorted(left.items()))


def census_tflite_variant(model: bytes, num_threads: int = 2) -> TfliteCensus:
    """The full census of one .tflite variant (bytes, pack tail allowed)."""
    ops = tflite_op_dtypes(model)
    delegated, total, partitions, left = xnnpack_coverage(model, num_threads)
    return TfliteCensus(
        ops=ops,
        quantize=sum(n for k, n in ops.items() if k.startswith("QUANTIZE:")),
        dequantize=sum(n for k, n in ops.items() if k.startswith("DEQUANTIZE:")),
        delegated_nodes=delegated, total_nodes=total, partitions=partitions, not_delegated=left,
    )


def census_onnx_variant(model: bytes) -> dict[str, Any]:
    """ONNX op census plus the QuantizeLinear/DequantizeLinear and integer-matmul counts."""
    from albert_edge.convert.census import census_onnx

    ops = census_onnx(model)
    return {"ops": ops, "quantize": ops.get("QuantizeLinear", 0) + ops.get("DynamicQuantizeLinear", 0),
            "dequantize": ops.get("DequantizeLinear", 0),
            "integer_matmuls": sum(n for k, n in ops.items() if "MatMulInteger" in k or "QLinearMatMul" in k
                                   or "DynamicQuantizeMatMul" in k or "MatMulIntegerToFloat" in k
                                   or "MatMulNBits" in k)}


def is_quantized_tflite(model: bytes) -> bool:
    """True if any op of the model already runs on int8/int16/uint8 inputs or dequantizes weights."""
    return any(k.split(":")[1].split("+")[0] in ("i8", "i16", "u8") or k.endswith(("+w_i8", "+w_i4"))
               or k.startswith("DEQUANTIZE:")
               for k in tflite_op_dtypes(model))
