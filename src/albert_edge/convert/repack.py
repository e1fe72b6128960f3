"""Re-attach the pack to a model file an outside tool rewrote (``albert-edge repack``).

Tools that rewrite a model keep the graph but not what albert-edge carries beside it: litert-quantizer
writes a new flatbuffer without the ZIP appended to ours (keeping the ``TFLITE_METADATA`` entry that names
its files), and an ONNX tool may write ``metadata_props`` anew. ``repack_model`` takes the pack from the
file the model was made from (a packed ``.tflite`` / ``.onnx``) or from its checkpoint (built as ``convert``
builds it), checks that the rewritten graph is still that model -- input and output names, each output's
rank and last dimension, the word table's rows against the vocab and the original's, the position table --
then writes the pack back: for a ``.tflite`` with standard metadata rebuilt (``attach_standard_metadata``,
so MediaPipe reads the file again), for an ``.onnx`` as ``metadata_props``. The result is read back and
checked like any model file before it is written, through an ``OutputSet`` (never half-written, never over
a file albert-edge did not write).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from albert_edge.errors import ConversionError, ModelFileError
from albert_edge.outputs.output_set import OutputSet
from albert_edge.runtime.consistency import (
    GraphFacts,
    check_model_consistency,
    checked_pack,
    graph_facts,
)
from albert_edge.runtime.flatbuffer import read_tflite_graph
from albert_edge.runtime.onnx_proto import read_onnx_graph
from albert_edge.runtime.pack import (
    LABELS_MEMBER,
    SETTINGS_MEMBER,
    TOKENIZER_FILES,
    ModelPack,
    model_kind,
    read_model_bytes,
    read_pack_bytes,
    tflite_flatbuffer_view,
)
from albert_edge.runtime.tflite_metadata import (
    PROBABILITIES_OUTPUT,
    fixed_seq_len,
    read_standard_metadata,
)
from albert_edge.tokenizer import load_tokenizer

# Narrowest weight type present -> the variant tag a repacked file gets when it differs from its source.
_WEIGHT_TAGS = (("int4", "int4"), ("int8", "int8"), ("uint8", "int8"), ("float16", "fp16"), ("float32", "fp32"))


@dataclass(frozen=True)
class Reference:
    """What the rewritten graph must still be: the pack to attach and the original graph's facts."""

    pack: ModelPack
    described: str  # "packed model X" or "checkpoint X", for error lines
    inputs: frozenset[str] | None
    outputs: dict[str, tuple[int, ...]]
    embedding_rows: int | None
    position_rows: int | None
    weight_types: tuple[str, ...] | None = None  # a model file's weight dtypes (None for a checkpoint)
    path: str = ""  # the model file or checkpoint the pack came from


@dataclass(frozen=True)
class RepackResult:
    out: Path
    kind: str
    variant: str
    pack_from: str
    checked: list[str] = field(default_factory=list)


def weight_types(data: bytes, source: str) -> tuple[str, ...]:
    """The sorted dtypes of the file's weight tensors of two or more dims (what quantization changes)."""
    if model_kind(data) == "tflite":
        graph = read_tflite_graph(tflite_flatbuffer_view(data), source)
        found = {t.dtype for t in graph.tensors if t.constant and len(t.shape) >= 2}
    else:
        found = {v.dtype for v in read_onnx_graph(data, source).initializers.values() if len(v.shape) >= 2}
    return tuple(sorted(found))


def reference_from_model(path: str, data: bytes) -> Reference:
    """The pack of an albert-edge model file (checked against its own graph) and that graph's facts."""
    pack = checked_pack(data, path)
    facts, _ = graph_facts(data, path)
    return Reference(pack, f"packed model {path}", frozenset(facts.inputs),
                     {name: shape for name, (_, shape) in facts.outputs.items()}, facts.embedding_rows,
                     facts.position_rows, weight_types(data, path), path)


def reference_from_checkpoint(checkpoint: str, target: bytes, model: str, max_seq_len: int | None = None,
                              labels: Sequence[str] | None = None, task: str | None = None,
                              vocab: str | None = None) -> Reference:
    """The pack ``convert`` would write for ``checkpoint``, and the graph facts its weights imply.

    ``max_seq_len`` defaults to the rewritten file's fixed input length (its standard metadata), else
    ``convert``'s default.
    """
    from albert_edge.convert.pipeline import ConvertOptions, build_pack, resolve_model
    from albert_edge.convert.source import ModelSource

    if max_seq_len is None and model_kind(target) == "tflite":
        meta = read_standard_metadata(tflite_flatbuffer_view(target).tobytes(), model)
        max_seq_len = None if meta is None else fixed_seq_len(meta)
    options = ConvertOptions(formats=("tflite",), max_seq_len=max_seq_len,
                             labels=list(labels) if labels else None, vocab=vocab, task=task)
    resolved = resolve_model(ModelSource.load(checkpoint), options)
    weights, config = resolved.weights, resolved.weights.config
    pack = build_pack(weights, resolved.asset, resolved.task, resolved.labels, resolved.max_seq_len)
    shapes = resolved.task.output_shapes(config, weights)
    outputs = {name: tuple(d if isinstance(d, int) else -1 for d in shape) for name, shape in shapes.items()}
    word = weights.tensors.get("embeddings.word")
    return Reference(pack, f"checkpoint {checkpoint}", None, outputs,
                     None if word is None else int(word.shape[0]), int(config.max_position_embeddings),
                     path=checkpoint)


def graph_mismatch(facts: GraphFacts, ref: Reference) -> str | None:
    """The first way the rewritten graph is not the reference's model, or None."""
    if ref.inputs is not None and set(facts.inputs) != set(ref.inputs):
        return f"its graph inputs are {sorted(facts.inputs)}, {ref.described} has {sorted(ref.inputs)}"
    names = set(ref.outputs) | set(ref.pack.outputs)
    if ref.inputs is not None:
        # A .tflite gains a softmax ``probabilities`` output for MediaPipe; an .onnx has none.
        missing = sorted(names - set(facts.outputs) - {PROBABILITIES_OUTPUT})
        extra = sorted(set(facts.outputs) - names - {PROBABILITIES_OUTPUT})
    else:
        missing, extra = sorted(set(ref.pack.outputs) - set(facts.outputs)), []
    if missing or extra:
        return (f"its graph outputs are {sorted(facts.outputs)}, {ref.described} has "
                f"{sorted(names)}")
    for name, want in sorted(ref.outputs.items(), key=lambda item: item[0] not in ref.pack.outputs):
        got = facts.outputs.get(name, (None, None))[1]
        if got is None or not got or not want:
            continue
        if len(got) != len(want) or (got[-1] > 0 and want[-1] > 0 and got[-1] != want[-1]):
            return f"its output {name!r} has shape {list(got)}, {ref.described} has {list(want)}"
    for what, got_rows, want_rows in (("word embedding table", facts.embedding_rows, ref.embedding_rows),
                                      ("position table", facts.position_rows, ref.position_rows)):
        if got_rows is not None and want_rows is not None and got_rows != want_rows:
            return f"its {what} has {got_rows} rows, {ref.described} has {want_rows}"
    return None


def default_variant(data: bytes, source: str, ref: Reference) -> str:
    """The source's variant when the weights kept their types, else ``<narrowest type>_external``."""
    found = weight_types(data, source)
    if ref.weight_types is not None and found == ref.weight_types:
        return ref.pack.variant
    tag = next((t for dtype, t in _WEIGHT_TAGS if dtype in found), "unknown")
    return f"{tag}_external"


def onnx_with_pack(data: bytes, pack: ModelPack, source: str) -> bytes:
    """``data`` with every albert-edge ``metadata_props`` entry replaced by ``pack``'s; other entries kept."""
    import onnx
    from google.protobuf.message import DecodeError

    from albert_edge.convert.onnx_export import attach_onnx_pack

    try:
        proto = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise ModelFileError(f"{source}: not a readable ONNX model ({' '.join(str(exc).split())[:200]})") from None
    # All of ours, not only the keys the new pack has: a stale labels.txt or spiece.model must not survive.
    ours = {SETTINGS_MEMBER, LABELS_MEMBER, *TOKENIZER_FILES.values()}
    kept = [p for p in proto.metadata_props if p.key not in ours]
    del proto.metadata_props[:]
    proto.metadata_props.extend(kept)
    attach_onnx_pack(proto, pack)
    return proto.SerializeToString()


def repacked_bytes(data: bytes, model: str, ref: Reference, variant: str | None = None) -> tuple[bytes, ModelPack]:
    """The model's bytes with ``ref``'s pack attached, after the graph checks; read back and checked."""
    kind = model_kind(data)
    if kind == "unknown":
        raise ModelFileError(f"{model}: not a model file (neither a TFLite flatbuffer 'TFL3' nor an ONNX protobuf)")
    facts, _ = graph_facts(data, model)
    mismatch = graph_mismatch(facts, ref)
    if mismatch:
        raise ModelFileError(f"{model}: not the model of the pack it should get: {mismatch}; nothing written")
    tag = variant or default_variant(data, model, ref)
    source = dict(ref.pack.source)
    source["repacked_from"] = os.path.basename(ref.path.rstrip("/"))  # a name, not a local path
    pack = ref.pack.with_variant(tag, source=source)
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, model)
    check_model_consistency(data, pack, model, tokenizer.vocab_size)
    if kind == "tflite":
        from albert_edge.convert.tflite_metadata import attach_standard_metadata

        out = attach_standard_metadata(data, pack)
    else:
        out = onnx_with_pack(data, pack, model)
    # The result is read like any model file: the pack, its standard metadata and the graph agree.
    if read_pack_bytes(out, model) != pack:
        raise ModelFileError(f"{model}: the repacked file does not read back as the pack written")
    check_model_consistency(out, pack, model, tokenizer.vocab_size)
    return out, pack


_VARIANT_TAG = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")


def check_repack_out(out: str | os.PathLike[str], variant: str | None) -> None:
    """Refuse, before any work, an ``--out`` that is a folder (a single file never replaces one:
    it may hold a whole run and the user's files) and a ``--variant`` that is not a plain tag."""
    from albert_edge.errors import OutputError

    if Path(out).is_dir():
        raise OutputError(f"{out}: is a folder; repack writes one model file: give a file path such as "
                          f"{Path(out) / 'model_repacked.tflite'}")
    if variant is not None and (not _VARIANT_TAG.fullmatch(variant) or ".." in variant):
        raise ConversionError(f"--variant {variant!r}: a variant tag is letters, digits and _ . + - "
                              "(at most 64, e.g. int8_external), not a path")


def repack_model(model: str | os.PathLike[str], source: str | os.PathLike[str], out: str | os.PathLike[str],
                 variant: str | None = None, **checkpoint_options: object) -> RepackResult:
    """Write ``out``: ``model``'s graph with the pack of ``source`` (a packed model file or a checkpoint).

    ``checkpoint_options`` (``max_seq_len``, ``labels``, ``task``, ``vocab``) apply to a checkpoint source.
    """
    model, source = str(model), str(source)
    check_repack_out(out, variant)
    data = read_model_bytes(model)
    source_path = Path(source)
    head = b""
    if source_path.is_file():
        with source_path.open("rb") as fh:
            head = fh.read(8)
    # A checkpoint file's first bytes can look like an ONNX protobuf's; the suffix or TFL3 decides.
    if head[4:8] == b"TFL3" or (source_path.is_file() and source_path.suffix in (".tflite", ".onnx")):
        given = [f"--{k.replace('_', '-')}" for k, v in checkpoint_options.items() if v is not None]
        if given:
            raise ConversionError(f"{', '.join(given)}: only for a checkpoint ORIGINAL; {source} is a model file "
                                  "whose pack is attached as it is")
        ref = reference_from_model(source, read_model_bytes(source))
    else:
        ref = reference_from_checkpoint(source, data, model, **checkpoint_options)  # type: ignore[arg-type]
    blob, pack = repacked_bytes(data, model, ref, variant)
    target = Path(out)
    if target.suffix in (".tflite", ".onnx") and target.suffix != f".{model_kind(blob)}":
        raise ConversionError(f"{target}: {model} is a {model_kind(blob)} model; write it under a "
                              f".{model_kind(blob)} name, not {target.suffix}")
    with OutputSet(target.parent, writer="repack", replaces=False) as staged:
        staged.write_bytes(target.name, blob)
    checked = ["input and output names", "output shapes", "word table rows vs vocab", "position table",
               "pack vs graph", "standard metadata" if model_kind(blob) == "tflite" else "metadata_props"]
    return RepackResult(target, model_kind(blob), pack.variant, ref.described, checked)
