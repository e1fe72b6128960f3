"""Read the standard TFLite Model Metadata (``TFLITE_METADATA``) of a .tflite and hold it to the graph.

MediaPipe Tasks and the TFLite Task Library find a text model's tokenizer, labels and input binding
in the metadata flatbuffer of ``metadata_schema.fbs`` (file identifier ``M001``), stored in one of the
model's buffers and named by a ``Model.metadata`` entry ``TFLITE_METADATA``; its associated files
(vocab, labels) are members of the ZIP appended to the flatbuffer -- the same ZIP that carries
albert-edge's pack. This module reads that metadata *without TensorFlow* and without the flatc-generated
Python code (whose import alone cost 11 ms of every load), with the bounds-checked reader
of ``runtime.flatbuffer``, and

* checks it against the graph (inputs named ``ids``/``mask``/``segment_ids`` bound to the right
  signature inputs, a tokenizer process unit, label files that exist) -- ``metadata_problems``;
* checks it against ``albert_edge.json`` when both exist (one file, one truth) -- ``check_against_pack``;
* tells when the standard metadata alone must stand in for the pack, for files written Model-Maker
  style (tokenizer + labels, no albert-edge extras): ``runtime.pack`` builds that pack
  (``pack_from_standard_metadata``); it imports this module, never the reverse.

The model file is untrusted: every offset is bounds-checked and a bad one becomes one
``ModelFileError`` naming the file.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from albert_edge.errors import ModelFileError
from albert_edge.runtime.flatbuffer import (
    _BUF_DATA,
    _BUF_OFFSET,
    _BUF_SIZE,
    _MODEL_BUFFERS,
    _MODEL_SIGNATURE_DEFS,
    _MODEL_SUBGRAPHS,
    _SG_INPUTS,
    _SG_OUTPUTS,
    _SG_TENSORS,
    _SIG_INPUTS,
    _SIG_OUTPUTS,
    _T_SHAPE,
    _T_SHAPE_SIGNATURE,
    _TMAP_INDEX,
    _TMAP_NAME,
    _Reader,
)

METADATA_NAME = "TFLITE_METADATA"
METADATA_IDENTIFIER = b"M001"
# MediaPipe's BertPreprocessorCalculator finds the three inputs by these metadata names
# (mediapipe/calculators/tensor/bert_preprocessor_calculator.cc) and feeds them by subgraph position.
INPUT_METADATA_NAMES: dict[str, str] = {"input_ids": "ids", "attention_mask": "mask", "token_type_ids": "segment_ids"}
PROBABILITIES_OUTPUT = "probabilities"
# Caps: a text model's metadata is a few KB; refuse absurd sizes before parsing.
MAX_METADATA_BYTES = 1 << 20
MAX_ITEMS = 256

# Field numbers (vtable slot order) of the tables read here: schema.fbs for the model,
# metadata_schema.fbs for the metadata (the same numbers the vendored generated reader uses).
_MODEL_METADATA = 6  # Model.metadata: [Metadata]
_META_NAME, _META_BUFFER = 0, 1  # Metadata
_MM_NAME, _MM_DESCRIPTION, _MM_VERSION, _MM_SUBGRAPH_METADATA, _MM_ASSOCIATED_FILES, _MM_MIN_PARSER_VERSION = 0, 1, 2, 3, 6, 7
_SGM_INPUT_TENSORS, _SGM_OUTPUT_TENSORS, _SGM_INPUT_PROCESS_UNITS = 2, 3, 5  # SubGraphMetadata
_TM_NAME, _TM_ASSOCIATED_FILES = 0, 6  # TensorMetadata
_AF_NAME, _AF_TYPE = 0, 2  # AssociatedFile
_PU_OPTIONS_TYPE, _PU_OPTIONS = 0, 1  # ProcessUnit (union: type byte, then the table)
_BERT_VOCAB_FILE = 0  # BertTokenizerOptions.vocab_file
_SP_MODEL = 0  # SentencePieceTokenizerOptions.sentencePiece_model
_BERT_TOKENIZER, _SENTENCEPIECE_TOKENIZER = 4, 5  # ProcessUnitOptions
TENSOR_AXIS_LABELS = 2  # AssociatedFileType


@dataclass(frozen=True)
class StandardMetadata:
    """What a .tflite's standard metadata says, joined with the graph facts it is checked against."""

    name: str = ""
    version: str = ""
    description: str = ""
    min_parser_version: str = ""
    tokenizer: str | None = None  # "wordpiece" (BertTokenizerOptions) or "sentencepiece"
    tokenizer_file: str | None = None
    input_names: tuple[str, ...] = ()  # metadata names, in subgraph input order
    graph_inputs: tuple[str, ...] = ()  # signature names of the same subgraph inputs
    input_shapes: tuple[tuple[int, ...], ...] = ()
    input_dynamic: tuple[bool, ...] = ()
    output_names: tuple[str, ...] = ()  # metadata names, in subgraph output order
    graph_outputs: tuple[str, ...] = ()  # signature names of the same subgraph outputs
    labels_files: tuple[str | None, ...] = ()  # TENSOR_AXIS_LABELS file per output
    associated_files: tuple[str, ...] = ()  # model-level associated files
    extra: Mapping[str, Any] = field(default_factory=dict)

    def summary_lines(self) -> list[str]:
        """Human-readable lines for ``albert-edge inspect``."""
        lines = [f"name: {self.name!r}, version: {self.version!r}, min_parser_version: {self.min_parser_version}"]
        if self.description:
            lines.append(f"description: {self.description}")
        lines.append(f"tokenizer process unit: {self.tokenizer or 'none'} ({self.tokenizer_file or 'no file'})")
        for i, name in enumerate(self.input_names):
            graph = self.graph_inputs[i] if i < len(self.graph_inputs) else "?"
            shape = list(self.input_shapes[i]) if i < len(self.input_shapes) else "?"
            dyn = "dynamic" if i < len(self.input_dynamic) and self.input_dynamic[i] else "fixed"
            lines.append(f"input {i}: {name} -> graph input {graph} {shape} ({dyn})")
        for i, name in enumerate(self.output_names):
            graph = self.graph_outputs[i] if i < len(self.graph_outputs) else "?"
            labels = self.labels_files[i] if i < len(self.labels_files) else None
            lines.append(f"output {i}: {name} -> graph output {graph}, labels: {labels or 'none'}")
        if self.associated_files:
            lines.append(f"model files: {', '.join(self.associated_files)}")
        return lines


class _MetadataReader(_Reader):
    """The project's bounds-checked flatbuffer reader, failing with the metadata's own message."""

    def fail(self, what: str) -> ModelFileError:
        return ModelFileError(f"{self.source}: standard TFLite metadata is unreadable ({what})")

    def text(self, tab: tuple[int, int, int], index: int, what: str) -> str:
        """A string field as text (invalid UTF-8 replaced, as the generated readers' callers did)."""
        pos = self.ref(tab, index, what)
        if pos is None:
            return ""
        start, n = self.vector(pos, 1, what)
        return bytes(self.data[start : start + n]).decode("utf-8", "replace")

    def tables(self, tab: tuple[int, int, int], index: int, what: str) -> list[tuple[int, int, int]]:
        """A vector of tables, at most MAX_ITEMS of them (a text model's metadata lists a handful)."""
        pos = self.ref(tab, index, what)
        if pos is None:
            return []
        start, n = self.vector(pos, 4, what)
        return [self.table(start + 4 * i + self._unpack("<I", start + 4 * i, what), f"{what}[{i}]")
                for i in range(min(n, MAX_ITEMS))]

    def ints(self, tab: tuple[int, int, int], index: int, what: str) -> tuple[int, ...]:
        """A vector of int32, at most MAX_ITEMS of them."""
        pos = self.ref(tab, index, what)
        if pos is None:
            return ()
        start, n = self.vector(pos, 4, what)
        return tuple(struct.unpack_from(f"<{min(n, MAX_ITEMS)}i", self.data, start))


def _metadata_buffer(r: _MetadataReader, model: tuple[int, int, int]) -> bytes | None:
    """The bytes of the ``TFLITE_METADATA`` buffer, or None when the model has none."""
    for entry in r.tables(model, _MODEL_METADATA, "metadata"):
        if r.text(entry, _META_NAME, "metadata.name") != METADATA_NAME:
            continue
        index = r.scalar(entry, _META_BUFFER, "<I", 0)
        buffers = r.ref(model, _MODEL_BUFFERS, "buffers")
        count = 0 if buffers is None else r.vector(buffers, 4, "buffers")[1]
        if not 0 <= index < count:
            raise ModelFileError(f"{r.source}: {METADATA_NAME} points at buffer {index}, the model has {count}")
        assert buffers is not None
        at = buffers + 4 + 4 * index
        buf = r.table(at + r._unpack("<I", at, "buffers"), f"buffers[{index}]")
        offset, size = r.scalar(buf, _BUF_OFFSET, "<Q", 0), r.scalar(buf, _BUF_SIZE, "<Q", 0)
        if offset > 1:  # large models keep buffers outside the flatbuffer
            if size > MAX_METADATA_BYTES or offset + size > r.size:
                raise ModelFileError(f"{r.source}: {METADATA_NAME} buffer spans bytes {offset}..{offset + size}")
            return bytes(r.data[offset : offset + size])
        pos = r.ref(buf, _BUF_DATA, "metadata buffer data")
        if pos is None:
            return b""
        start, n = r.vector(pos, 1, "metadata buffer data")
        if n > MAX_METADATA_BYTES:
            raise ModelFileError(f"{r.source}: {METADATA_NAME} is {n} bytes, the limit is {MAX_METADATA_BYTES}")
        return bytes(r.data[start : start + n])
    return None


def _tokenizer(m: _MetadataReader, unit: tuple[int, int, int]) -> tuple[str, str | None]:
    kind = m.scalar(unit, _PU_OPTIONS_TYPE, "<B", 0)
    files_field = {_BERT_TOKENIZER: ("wordpiece", _BERT_VOCAB_FILE),
                   _SENTENCEPIECE_TOKENIZER: ("sentencepiece", _SP_MODEL)}.get(kind)
    if files_field is None:
        return f"process unit type {kind}", None
    name, field_index = files_field
    opts_pos = m.ref(unit, _PU_OPTIONS, "process unit options")
    if opts_pos is None:
        return name, None
    opts = m.table(opts_pos, "process unit options")
    files = m.tables(opts, field_index, "tokenizer files")
    return name, m.text(files[0], _AF_NAME, "tokenizer file name") if files else None


def _labels_file(m: _MetadataReader, tensor: tuple[int, int, int]) -> str | None:
    for f in m.tables(tensor, _TM_ASSOCIATED_FILES, "tensor associated_files"):
        if m.scalar(f, _AF_TYPE, "<b", 0) == TENSOR_AXIS_LABELS:
            return m.text(f, _AF_NAME, "associated file name")
    return None


def _signature_names(r: _MetadataReader, model: tuple[int, int, int]) -> dict[int, str]:
    """Tensor index -> name in the first signature (what our runtime feeds and reads by)."""
    names: dict[int, str] = {}
    sigs = r.tables(model, _MODEL_SIGNATURE_DEFS, "signature_defs")
    if sigs:
        for field_index in (_SIG_INPUTS, _SIG_OUTPUTS):
            for entry in r.tables(sigs[0], field_index, "signature tensors"):
                names[r.scalar(entry, _TMAP_INDEX, "<I", 0)] = r.text(entry, _TMAP_NAME, "signature tensor name")
    return names


def _graph_io(r: _MetadataReader, model: tuple[int, int, int]) -> tuple[list[int], list[int], list[tuple[int, ...]], list[bool]]:
    """Subgraph 0's input and output tensor indices, and each input's shape and dynamic flag."""
    subgraphs = r.tables(model, _MODEL_SUBGRAPHS, "subgraphs")
    if not subgraphs:
        raise r.fail("the model has no subgraphs")
    sg = subgraphs[0]
    in_idx = list(r.ints(sg, _SG_INPUTS, "subgraph inputs"))
    out_idx = list(r.ints(sg, _SG_OUTPUTS, "subgraph outputs"))
    pos = r.ref(sg, _SG_TENSORS, "tensors")
    start, count = (0, 0) if pos is None else r.vector(pos, 4, "tensors")
    shapes, dynamic = [], []
    for t in in_idx:
        if not 0 <= t < count:
            raise r.fail(f"subgraph input names tensor {t} of {count}")
        at = start + 4 * t
        tensor = r.table(at + r._unpack("<I", at, "tensors"), f"tensors[{t}]")
        shapes.append(r.ints(tensor, _T_SHAPE, "tensor shape"))
        dynamic.append(any(d == -1 for d in r.ints(tensor, _T_SHAPE_SIGNATURE, "tensor shape_signature")))
    return in_idx, out_idx, shapes, dynamic


def read_standard_metadata(flatbuffer: bytes, source: str = "<bytes>") -> StandardMetadata | None:
    """Parse the standard metadata of ``flatbuffer`` (the model bytes, pack stripped or not).

    Returns None when the model carries no ``TFLITE_METADATA``. Bad offsets or a metadata buffer
    that is not an ``M001`` flatbuffer raise ModelFileError. Read with the project's own
    bounds-checked reader (``runtime.flatbuffer``), not the flatc-generated modules: importing
    those cost 11 ms (with .pyc files) of every app's first load, and they fail on bad offsets
    with whatever Python error the slice gives.
    """
    r = _MetadataReader(flatbuffer, source)
    model = r.table(r._unpack("<I", 0, "root offset"), "Model")
    blob = _metadata_buffer(r, model)
    if blob is None:
        return None
    if len(blob) < 8 or blob[4:8] != METADATA_IDENTIFIER:
        raise ModelFileError(f"{source}: {METADATA_NAME} is not a metadata flatbuffer (identifier {METADATA_IDENTIFIER.decode()} missing)")
    signature = _signature_names(r, model)
    in_idx, out_idx, shapes, dynamic = _graph_io(r, model)
    m = _MetadataReader(blob, source)
    meta = m.table(m._unpack("<I", 0, "metadata root offset"), "ModelMetadata")
    tokenizer = tokenizer_file = None
    inputs: list[str] = []
    outputs: list[str] = []
    labels: list[str | None] = []
    subs = m.tables(meta, _MM_SUBGRAPH_METADATA, "subgraph_metadata")
    if subs:
        sub = subs[0]
        units = m.tables(sub, _SGM_INPUT_PROCESS_UNITS, "input_process_units")
        if units:
            tokenizer, tokenizer_file = _tokenizer(m, units[0])
        inputs = [m.text(t, _TM_NAME, "input tensor name") for t in m.tables(sub, _SGM_INPUT_TENSORS, "input_tensor_metadata")]
        for tensor in m.tables(sub, _SGM_OUTPUT_TENSORS, "output_tensor_metadata"):
            outputs.append(m.text(tensor, _TM_NAME, "output tensor name"))
            labels.append(_labels_file(m, tensor))
    files = tuple(m.text(f, _AF_NAME, "associated file name") for f in m.tables(meta, _MM_ASSOCIATED_FILES, "associated_files"))
    return StandardMetadata(
        name=m.text(meta, _MM_NAME, "name"), version=m.text(meta, _MM_VERSION, "version"),
        description=m.text(meta, _MM_DESCRIPTION, "description"),
        min_parser_version=m.text(meta, _MM_MIN_PARSER_VERSION, "min_parser_version"),
        tokenizer=tokenizer, tokenizer_file=tokenizer_file,
        input_names=tuple(inputs), graph_inputs=tuple(signature.get(t, "") for t in in_idx),
        input_shapes=tuple(shapes), input_dynamic=tuple(dynamic), output_names=tuple(outputs),
        graph_outputs=tuple(signature.get(t, "") for t in out_idx), labels_files=tuple(labels),
        associated_files=files,
    )


def metadata_problems(meta: StandardMetadata, members: Mapping[str, bytes], tokenizer_unit: bool = True) -> list[str]:
    """Ways the metadata disagrees with the graph or the appended files (empty when consistent).

    ``tokenizer_unit`` False: the pack's tokenizer has no MediaPipe process unit (byte-level BPE), so
    its absence is no problem."""
    problems: list[str] = []
    if len(meta.input_names) != len(meta.graph_inputs):
        problems.append(f"metadata describes {len(meta.input_names)} inputs, the graph has {len(meta.graph_inputs)}")
    wanted = {v: k for k, v in INPUT_METADATA_NAMES.items()}
    for name, graph in zip(meta.input_names, meta.graph_inputs):
        if wanted.get(name) != graph:
            problems.append(f"metadata input {name!r} sits on graph input {graph!r}, expected {wanted.get(name, 'no input')!r}")
    if len(meta.output_names) != len(meta.graph_outputs):
        problems.append(f"metadata describes {len(meta.output_names)} outputs, the graph has {len(meta.graph_outputs)}")
    for name, graph in zip(meta.output_names, meta.graph_outputs):
        if name != graph:
            problems.append(f"metadata output {name!r} sits on graph output {graph!r}")
    if meta.tokenizer not in ("wordpiece", "sentencepiece"):
        if tokenizer_unit:
            problems.append(f"no tokenizer process unit ({meta.tokenizer or 'none'})")
    elif not meta.tokenizer_file or meta.tokenizer_file not in members:
        problems.append(f"tokenizer file {meta.tokenizer_file!r} is not among the appended files")
    for name in (*[f for f in meta.labels_files if f], *meta.associated_files):
        if name not in members:
            problems.append(f"associated file {name!r} is not among the appended files")
    shapes = {s for s in meta.input_shapes}
    if len(shapes) > 1:
        problems.append(f"inputs have different shapes {sorted(shapes)}")
    return problems


def fixed_seq_len(meta: StandardMetadata) -> int | None:
    """The sequence length MediaPipe pads/truncates to: the inputs' static ``[1, N]``, else None."""
    if not meta.input_shapes or any(meta.input_dynamic):
        return None
    shape = meta.input_shapes[0]
    return shape[1] if len(shape) == 2 and shape[0] == 1 else None


def check_against_pack(meta: StandardMetadata, pack: Any, members: Mapping[str, bytes], source: str) -> None:
    """Raise one ModelFileError when the standard metadata and ``albert_edge.json`` disagree."""
    problems = metadata_problems(meta, members, pack.tokenizer_type in ("wordpiece", "sentencepiece"))
    if meta.tokenizer in ("wordpiece", "sentencepiece") and meta.tokenizer != pack.tokenizer_type:
        problems.append(f"tokenizer is {meta.tokenizer} in the metadata but {pack.tokenizer_type} in albert_edge.json")
    if meta.tokenizer_file and meta.tokenizer_file != pack.tokenizer_file:
        problems.append(f"tokenizer file is {meta.tokenizer_file} in the metadata but {pack.tokenizer_file} in albert_edge.json")
    seq = fixed_seq_len(meta)
    if seq is not None and seq != pack.max_seq_len:
        problems.append(f"inputs are fixed at length {seq} but albert_edge.json says max_seq_len {pack.max_seq_len}")
    for out, labels_file in zip(meta.output_names, meta.labels_files):
        if labels_file and labels_file in members and pack.labels is not None:
            text = members[labels_file].decode("utf-8", "replace")
            found = tuple(line.strip() for line in text.splitlines() if line.strip())
            if found != tuple(pack.labels):
                problems.append(f"labels of output {out!r} ({labels_file}) disagree with albert_edge.json labels")
    for name in pack.outputs:
        if meta.graph_outputs and name not in meta.graph_outputs:
            problems.append(f"albert_edge.json output {name!r} is not a graph output")
    if problems:
        raise ModelFileError(f"{source}: standard metadata disagrees with the file: {problems[0]}"
                             + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
