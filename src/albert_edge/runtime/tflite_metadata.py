"""Read the standard TFLite Model Metadata (``TFLITE_METADATA``) of a .tflite and hold it to the graph.

MediaPipe Tasks and the TFLite Task Library find a text model's tokenizer, labels and input binding
in the metadata flatbuffer of ``metadata_schema.fbs`` (file identifier ``M001``), stored in one of the
model's buffers and named by a ``Model.metadata`` entry ``TFLITE_METADATA``; its associated files
(vocab, labels) are members of the ZIP appended to the flatbuffer -- the same ZIP that carries
albert-edge's pack. This module reads that metadata *without TensorFlow*, with the flatc-generated
Python code of both schemas (``ai_edge_litert.schema_py_generated`` for the model,
``albert_edge._vendor`` for the metadata), and

* checks it against the graph (inputs named ``ids``/``mask``/``segment_ids`` bound to the right
  signature inputs, a tokenizer process unit, label files that exist) -- ``metadata_problems``;
* checks it against ``albert_edge.json`` when both exist (one file, one truth) -- ``check_against_pack``;
* tells when the standard metadata alone must stand in for the pack, for files written Model-Maker
  style (tokenizer + labels, no albert-edge extras): ``runtime.pack`` builds that pack
  (``pack_from_standard_metadata``); it imports this module, never the reverse.

The model file is untrusted: every failure of the generated readers on bad offsets becomes one
``ModelFileError`` naming the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from albert_edge.errors import ModelFileError

METADATA_NAME = "TFLITE_METADATA"
METADATA_IDENTIFIER = b"M001"
# MediaPipe's BertPreprocessorCalculator finds the three inputs by these metadata names
# (mediapipe/calculators/tensor/bert_preprocessor_calculator.cc) and feeds them by subgraph position.
INPUT_METADATA_NAMES: dict[str, str] = {"input_ids": "ids", "attention_mask": "mask", "token_type_ids": "segment_ids"}
PROBABILITIES_OUTPUT = "probabilities"
# Caps: a text model's metadata is a few KB; refuse absurd sizes before parsing.
MAX_METADATA_BYTES = 1 << 20
MAX_ITEMS = 256


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


def _schemas() -> tuple[Any, Any]:
    """The generated readers; ai-edge-litert (the interpreter of record) ships the model schema."""
    try:
        from ai_edge_litert import schema_py_generated as model_schema
        from albert_edge._vendor import tflite_metadata_schema_py_generated as metadata_schema
    except ImportError as exc:
        # Name the module that is missing: LiteRT's schema itself imports flatbuffers, and blaming
        # ai-edge-litert for a missing flatbuffers sent the aarch64 guest's users the wrong way.
        missing = getattr(exc, "name", None) or "ai_edge_litert"
        raise ModelFileError(f"reading standard TFLite metadata needs the Python module {missing!r}, which is not "
                             "installed (pip install 'albert-edge[runtime]' installs it)") from None

    return model_schema, metadata_schema


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _metadata_buffer(model: Any, flatbuffer: bytes, source: str) -> bytes | None:
    """The bytes of the ``TFLITE_METADATA`` buffer, or None when the model has none."""
    for i in range(min(model.MetadataLength(), MAX_ITEMS)):
        entry = model.Metadata(i)
        if _text(entry.Name()) != METADATA_NAME:
            continue
        index = entry.Buffer()
        if not 0 <= index < model.BuffersLength():
            raise ModelFileError(f"{source}: {METADATA_NAME} points at buffer {index}, the model has {model.BuffersLength()}")
        buf = model.Buffers(index)
        offset, size = buf.Offset(), buf.Size()
        if offset > 1:  # large models keep buffers outside the flatbuffer
            if size > MAX_METADATA_BYTES or offset + size > len(flatbuffer):
                raise ModelFileError(f"{source}: {METADATA_NAME} buffer spans bytes {offset}..{offset + size}")
            return bytes(flatbuffer[offset : offset + size])
        if buf.DataLength() > MAX_METADATA_BYTES:
            raise ModelFileError(f"{source}: {METADATA_NAME} is {buf.DataLength()} bytes, the limit is {MAX_METADATA_BYTES}")
        return buf.DataAsNumpy().tobytes() if buf.DataLength() else b""
    return None


def _tokenizer(schema: Any, unit: Any) -> tuple[str, str | None]:
    kind = unit.OptionsType()
    if kind == schema.ProcessUnitOptions.BertTokenizerOptions:
        opts = schema.BertTokenizerOptions()
        opts.Init(unit.Options().Bytes, unit.Options().Pos)
        files = [_text(opts.VocabFile(i).Name()) for i in range(min(opts.VocabFileLength(), MAX_ITEMS))]
        return "wordpiece", files[0] if files else None
    if kind == schema.ProcessUnitOptions.SentencePieceTokenizerOptions:
        opts = schema.SentencePieceTokenizerOptions()
        opts.Init(unit.Options().Bytes, unit.Options().Pos)
        files = [_text(opts.SentencePieceModel(i).Name()) for i in range(min(opts.SentencePieceModelLength(), MAX_ITEMS))]
        return "sentencepiece", files[0] if files else None
    return f"process unit type {kind}", None


def _labels_file(schema: Any, tensor: Any) -> str | None:
    for i in range(min(tensor.AssociatedFilesLength(), MAX_ITEMS)):
        f = tensor.AssociatedFiles(i)
        if f.Type() == schema.AssociatedFileType.TENSOR_AXIS_LABELS:
            return _text(f.Name())
    return None


def read_standard_metadata(flatbuffer: bytes, source: str = "<bytes>") -> StandardMetadata | None:
    """Parse the standard metadata of ``flatbuffer`` (the model bytes, pack stripped or not).

    Returns None when the model carries no ``TFLITE_METADATA``. Bad offsets or a metadata buffer
    that is not an ``M001`` flatbuffer raise ModelFileError.
    """
    model_schema, schema = _schemas()
    try:
        model = model_schema.Model.GetRootAs(flatbuffer, 0)
        blob = _metadata_buffer(model, flatbuffer, source)
        if blob is None:
            return None
        if len(blob) < 8 or blob[4:8] != METADATA_IDENTIFIER:
            raise ModelFileError(f"{source}: {METADATA_NAME} is not a metadata flatbuffer (identifier {METADATA_IDENTIFIER.decode()} missing)")
        meta = schema.ModelMetadata.GetRootAs(blob, 0)
        sg = model.Subgraphs(0)
        signature = _signature_names(model)
        in_idx = [int(sg.Inputs(i)) for i in range(min(sg.InputsLength(), MAX_ITEMS))]
        out_idx = [int(sg.Outputs(i)) for i in range(min(sg.OutputsLength(), MAX_ITEMS))]
        shapes, dynamic = [], []
        for t in in_idx:
            tensor = sg.Tensors(t)
            shapes.append(tuple(int(d) for d in tensor.ShapeAsNumpy()) if tensor.ShapeLength() else ())
            sig = tensor.ShapeSignatureAsNumpy() if tensor.ShapeSignatureLength() else None
            dynamic.append(sig is not None and any(int(d) == -1 for d in sig))
        tokenizer = tokenizer_file = None
        inputs: list[str] = []
        outputs: list[str] = []
        labels: list[str | None] = []
        if meta.SubgraphMetadataLength():
            sub = meta.SubgraphMetadata(0)
            if sub.InputProcessUnitsLength():
                tokenizer, tokenizer_file = _tokenizer(schema, sub.InputProcessUnits(0))
            inputs = [_text(sub.InputTensorMetadata(i).Name()) for i in range(min(sub.InputTensorMetadataLength(), MAX_ITEMS))]
            for i in range(min(sub.OutputTensorMetadataLength(), MAX_ITEMS)):
                tensor = sub.OutputTensorMetadata(i)
                outputs.append(_text(tensor.Name()))
                labels.append(_labels_file(schema, tensor))
        files = tuple(_text(meta.AssociatedFiles(i).Name()) for i in range(min(meta.AssociatedFilesLength(), MAX_ITEMS)))
        return StandardMetadata(
            name=_text(meta.Name()), version=_text(meta.Version()), description=_text(meta.Description()),
            min_parser_version=_text(meta.MinParserVersion()), tokenizer=tokenizer, tokenizer_file=tokenizer_file,
            input_names=tuple(inputs), graph_inputs=tuple(signature.get(t, "") for t in in_idx),
            input_shapes=tuple(shapes), input_dynamic=tuple(dynamic), output_names=tuple(outputs),
            graph_outputs=tuple(signature.get(t, "") for t in out_idx), labels_files=tuple(labels),
            associated_files=files,
        )
    except ModelFileError:
        raise
    except Exception as exc:  # generated readers fail with struct/Index/Unicode errors on bad offsets
        raise ModelFileError(f"{source}: standard TFLite metadata is unreadable ({type(exc).__name__})") from None


def _signature_names(model: Any) -> dict[int, str]:
    """Tensor index -> name in the first signature (what our runtime feeds and reads by)."""
    names: dict[int, str] = {}
    if model.SignatureDefsLength():
        sig = model.SignatureDefs(0)
        for i in range(min(sig.InputsLength(), MAX_ITEMS)):
            names[int(sig.Inputs(i).TensorIndex())] = _text(sig.Inputs(i).Name())
        for i in range(min(sig.OutputsLength(), MAX_ITEMS)):
            names[int(sig.Outputs(i).TensorIndex())] = _text(sig.Outputs(i).Name())
    return names


def metadata_problems(meta: StandardMetadata, members: Mapping[str, bytes]) -> list[str]:
    """Ways the metadata disagrees with the graph or the appended files (empty when consistent)."""
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
    problems = metadata_problems(meta, members)
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
