"""Op census of exported models: op type -> count, read without TensorFlow.

The census is how the report proves a file runs on the stock interpreter: a TFLite model must
hold only builtin ops (no ``Flex*`` / custom ops, no EINSUM), and an ONNX census shows whether
ORT's fusions (Attention, SkipLayerNormalization, ...) took.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from albert_edge.errors import ConversionError

# TFLite op names the interpreter of record cannot run without the Flex delegate or a custom op,
# plus ops the contract bans because the builtin kernels for them are slow or missing on phones.
FORBIDDEN_TFLITE_OPS = ("EINSUM", "ONE_HOT")


def census_tflite(model: bytes | str | os.PathLike[str]) -> dict[str, int]:
    """Op type -> count of a .tflite (bytes or path), via LiteRT's op details, sorted by count.

    LiteRT lists the main subgraph's ops only; the ops of the others (a WHILE's condition and body:
    ``GraphOptions.shared_layer_loop``) are read from the flatbuffer and counted too, so that the
    non-builtin check sees them.
    """
    from ai_edge_litert.interpreter import Interpreter

    try:
        if isinstance(model, (bytes, bytearray)):
            interpreter = Interpreter(model_content=bytes(model))
        else:
            interpreter = Interpreter(model_path=os.fspath(model))
        ops = interpreter._get_ops_details()
    except (ValueError, RuntimeError) as exc:
        raise ConversionError(f"{_label(model)}: LiteRT cannot load the model for the op census ({_first_line(exc)})") from None
    counts = Counter(str(op["op_name"]) for op in ops)
    counts.update(op.name for graph in _called_subgraphs(model) for op in graph.ops)
    return _sorted(counts)


def _called_subgraphs(model: bytes | str | os.PathLike[str]) -> list[Any]:
    """Every subgraph but the first (the one LiteRT's op details list), as ``read_tflite_subgraphs`` reads them."""
    from albert_edge.runtime.flatbuffer import read_tflite_subgraphs
    from albert_edge.runtime.pack import map_model_file, tflite_flatbuffer_view

    data = bytes(model) if isinstance(model, (bytes, bytearray)) else map_model_file(model)   # mapped, not read
    return read_tflite_subgraphs(tflite_flatbuffer_view(data), _label(model))[1:]


def census_onnx(model: Any) -> dict[str, int]:
    """Op type -> count of an ``onnx.ModelProto`` (or path/bytes), with ``domain:`` for contrib ops."""
    import onnx

    if isinstance(model, (bytes, bytearray)):
        model = onnx.load_from_string(bytes(model))
    elif not isinstance(model, onnx.ModelProto):
        model = onnx.load(os.fspath(model))
    return _sorted(Counter(f"{n.domain}:{n.op_type}" if n.domain not in ("", "ai.onnx") else n.op_type
                           for n in model.graph.node))


def non_builtin_tflite_ops(census: dict[str, int]) -> list[str]:
    """Ops in a TFLite census that stock LiteRT builtins do not cover or that the contract bans."""
    return sorted(op for op in census
                  if op.startswith("Flex") or op in ("CUSTOM", "DELEGATE") or op in FORBIDDEN_TFLITE_OPS)


def _sorted(counts: Counter) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _label(model: Any) -> str:
    return "<tflite bytes>" if isinstance(model, (bytes, bytearray)) else os.fspath(model)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
