"""Weights -> .onnx: build the graph, check it with ``onnx.checker``, store the pack in metadata_props."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from albert_edge.outputs.atomic import write_bytes_atomic
from albert_edge.convert.onnx_graph import build_onnx_model
from albert_edge.errors import ConversionError


def attach_onnx_pack(model: Any, pack: Any) -> None:
    """Replace ``model.metadata_props`` pack entries with ``pack`` (a runtime ModelPack), in place."""
    from albert_edge.runtime.pack import pack_to_metadata_props

    props = pack_to_metadata_props(pack)
    kept = [(p.key, p.value) for p in model.metadata_props if p.key not in props]
    del model.metadata_props[:]
    for key, value in [*kept, *props.items()]:
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value


def onnx_bytes_with_pack(data: bytes, pack: Any) -> bytes:
    """``data`` (a serialized ModelProto) with ``pack`` in its metadata: the bytes ``attach_onnx_pack`` and
    ``SerializeToString`` give, made without parsing the model when it has no field from ``metadata_props``
    on (the usual case: then the entries are the last fields, and appending their encoding writes them).

    Why: parsing and re-serialising a 390 MiB fp32 model held two more copies of it (quantize packs every
    variant; BERT-base's peak, record 0280). A model with metadata or later fields is parsed, as before.
    """
    import onnx

    from albert_edge.errors import ModelFileError
    from albert_edge.runtime.onnx_proto import MODEL_METADATA_PROPS, top_level_fields
    from albert_edge.runtime.pack import pack_to_metadata_props

    try:
        fields = top_level_fields(data)
    except ModelFileError:
        fields = set()   # not a well-formed message: left to the protobuf parser below
    # The serializer writes fields in number order, so with none from metadata_props on the entries go last.
    if fields and max(fields) < MODEL_METADATA_PROPS:
        props = onnx.ModelProto()
        for key, value in pack_to_metadata_props(pack).items():
            entry = props.metadata_props.add()
            entry.key, entry.value = key, value
        return b"".join((data, props.SerializeToString()))
    model = onnx.load_from_string(data)
    attach_onnx_pack(model, pack)
    return model.SerializeToString()


def deduplicate_initializers(model: Any) -> int:
    """Merge byte-identical initializers in place; returns how many were removed.

    ORT's transformer optimizer gives every fused Attention node its own concatenated QKV weight,
    so an ALBERT whose layers share one block comes out with one copy per layer (the
    onnxruntime#10340 blow-up). Rewiring the copies to one initializer restores a single copy.
    """
    keep: dict[tuple, str] = {}
    rename: dict[str, str] = {}
    survivors = []
    for init in model.graph.initializer:
        key = (init.data_type, tuple(init.dims), init.raw_data or init.SerializeToString())
        if init.raw_data and key in keep:
            rename[init.name] = keep[key]
            continue
        keep.setdefault(key, init.name)
        survivors.append(init)
    if not rename:
        return 0
    del model.graph.initializer[:]
    model.graph.initializer.extend(survivors)
    for node in model.graph.node:
        for i, name in enumerate(node.input):
            if name in rename:
                node.input[i] = rename[name]
    return len(rename)


def onnx_model_bytes(weights: Any, pack: Any = None, fp16: bool = False, task: Any = None) -> bytes:
    """The serialized, checker-validated ModelProto, with ``pack`` in metadata_props when given."""
    import onnx

    model = build_onnx_model(weights, task=task, fp16=fp16)
    if pack is not None:
        attach_onnx_pack(model, pack)
    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
        raise ConversionError(f"{weights.source}: ONNX graph fails onnx.checker: {str(exc).splitlines()[0]}") from None
    return model.SerializeToString()


def export_onnx(
    weights: Any,
    path: str | os.PathLike[str],
    pack: Any = None,
    fp16: bool = False,
    task: Any = None,
) -> Path:
    """Build and write ``path`` atomically (fp16=True stores weights as float16 with Cast to float32)."""
    return write_bytes_atomic(path, onnx_model_bytes(weights, pack, fp16=fp16, task=task))
