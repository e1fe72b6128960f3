"""Write standard TFLite Model Metadata into an exported .tflite, so MediaPipe Tasks runs it unchanged.

What MediaPipe's text classifier needs (read from its source, see README "Use it in MediaPipe"):

* three int32 inputs whose *metadata* names are ``ids``, ``mask``, ``segment_ids``; it feeds them by
  the position of those names in the metadata list, which is the subgraph's input order
  (bert_preprocessor_calculator.cc);
* inputs of static shape ``[1, N]``: with a ``-1`` in the shape signature it neither truncates nor
  pads, so a text longer than the position table fails (text_preprocessing_graph.cc); with ``[1, N]``
  it truncates to N and pads with 0;
* the tokenizer as the first input process unit (BertTokenizerOptions or
  SentencePieceTokenizerOptions) whose vocab is an associated file (tokenizer_utils.cc);
* float outputs, one classification head per output tensor, labels from a TENSOR_AXIS_LABELS file;
  scores are reported as the tensor holds them -- no softmax (classification_postprocessing_graph.cc).

So this step (``graph_for_mediapipe``) sets the inputs to ``[1, max_seq_len]`` without a shape
signature (LiteRT's signature runner still resizes them to ``[batch, real_length]`` for our runtime,
since every op in the graph was converted with dynamic shapes) and adds a SOFTMAX whose output
``probabilities`` becomes output 0 (head 0); ``logits`` stays as output 1 for our runtime and parity
checks. A feature-extraction graph that returns hidden states instead gets a pooled
``sentence_embedding`` output 0 for MediaPipe's TextEmbedder (``mediapipe_embedding.py``), and
dynamic outputs get the static ``[1, max_seq_len, ...]`` shape MediaPipe allocates its buffers by.
Then it builds the ``ModelMetadata`` flatbuffer with the flatc-generated object API
(``albert_edge._vendor``), stores it as buffer ``TFLITE_METADATA`` of the model (re-serialised with
LiteRT's generated schema code), and appends the pack ZIP, whose members are the associated files.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flatbuffers
import numpy as np

from albert_edge import __version__
from albert_edge.convert.mediapipe_embedding import add_sentence_embedding, fix_output_shapes
from albert_edge.runtime.pack import (LABELS_MEMBER, SETTINGS_MEMBER, ModelPack, attach_tflite_members,
                                     tflite_flatbuffer_view)
from albert_edge.runtime.tflite_metadata import INPUT_METADATA_NAMES, METADATA_IDENTIFIER, METADATA_NAME, PROBABILITIES_OUTPUT
from albert_edge.tasks import FeatureExtraction, SequenceClassification, Task, TokenClassification

# Highest schema feature used: BertTokenizerOptions / SentencePieceTokenizerOptions and
# input_process_units are "Added in: 1.1.0" (metadata_schema.fbs history); nothing newer is written.
MIN_PARSER_VERSION = "1.1.0"
_SOFTMAX = 25  # BuiltinOperator.SOFTMAX

_INPUT_DESCRIPTIONS = {
    "ids": "Token ids of [CLS] text [SEP], padded with 0 to the input length.",
    "mask": "1 on real tokens, 0 on padding.",
    "segment_ids": "0 for the first segment (all tokens of a single text).",
}


_OUTPUT_DESCRIPTIONS = {
    PROBABILITIES_OUTPUT: "Class probabilities (softmax of logits), sum to 1.",
    "logits": "Raw class scores (logits).",
    "sentence_embedding": "One embedding per text: the hidden states pooled over real tokens (see albert_edge.json).",
    "last_hidden_state": "Hidden state of every position [1, max_seq_len, H].",
    "pooled_output": "BERT pooler: tanh(dense) of the first token's hidden state.",
}


def _schemas() -> tuple[Any, Any]:
    from ai_edge_litert import schema_py_generated as model_schema

    from albert_edge._vendor import tflite_metadata_schema_py_generated as metadata_schema

    return model_schema, metadata_schema


def graph_for_mediapipe(model: Any, max_seq_len: int, task: Any) -> bool:
    """Fix the inputs at ``[1, max_seq_len]`` and add the output MediaPipe reads, in place.

    ``MEDIAPIPE_OUTPUTS`` says which output the task's MediaPipe counterpart reads: a classifier the
    ``probabilities`` output (``add_probabilities``); a feature-extraction task whose graph returns
    hidden states a pooled ``sentence_embedding`` (``convert/mediapipe_embedding.py``); a task with
    no MediaPipe counterpart (no entry) nothing. Dynamic outputs get the static shape MediaPipe allocates (batch 1, sequence
    ``max_seq_len``). Returns False (graph untouched apart from the shapes) when there is no such
    output, e.g. a fully integer classifier: a float SOFTMAX cannot follow int8 logits and MediaPipe
    would refuse the output type anyway.
    """
    schema, _ = _schemas()
    sg = model.subgraphs[0]
    for i in sg.inputs:
        sg.tensors[i].shape = np.array([1, max_seq_len], dtype=np.int32)
        sg.tensors[i].shapeSignature = None
    fix_output_shapes(model, max_seq_len)
    add_output = MEDIAPIPE_OUTPUTS.get(task.name)
    return False if add_output is None else add_output(schema, model, task)


def add_probabilities(schema: Any, model: Any) -> bool:
    """Prepend a float SOFTMAX of ``logits`` named ``probabilities`` (what MediaPipe's classifier
    reads as head 0), once; False when there are no float32 logits to follow."""
    sg = model.subgraphs[0]
    sig = model.signatureDefs[0]
    names = [_s(t.name) for t in sig.outputs]
    if PROBABILITIES_OUTPUT in names or "logits" not in names:
        return PROBABILITIES_OUTPUT in names
    logits = sig.outputs[names.index("logits")].tensorIndex
    src = sg.tensors[logits]
    if src.type != schema.TensorType.FLOAT32:
        return False
    probs = schema.TensorT()
    probs.shape = np.array(src.shape, dtype=np.int32)
    probs.shapeSignature = None if src.shapeSignature is None else np.array(src.shapeSignature, dtype=np.int32)
    probs.type = schema.TensorType.FLOAT32
    probs.buffer = 0  # buffer 0 is the empty sentinel every converter writes
    probs.name = PROBABILITIES_OUTPUT
    sg.tensors.append(probs)
    p_index = len(sg.tensors) - 1
    code = schema.OperatorCodeT()
    code.builtinCode = code.deprecatedBuiltinCode = _SOFTMAX
    code.version = 1
    model.operatorCodes.append(code)
    op = schema.OperatorT()
    op.opcodeIndex = len(model.operatorCodes) - 1
    op.inputs = np.array([logits], dtype=np.int32)
    op.outputs = np.array([p_index], dtype=np.int32)
    op.builtinOptionsType = schema.BuiltinOptions.SoftmaxOptions
    op.builtinOptions = schema.SoftmaxOptionsT()
    op.builtinOptions.beta = 1.0
    sg.operators.append(op)
    sg.outputs = np.array([p_index, *[int(o) for o in sg.outputs]], dtype=np.int32)
    entry = schema.TensorMapT()
    entry.name = PROBABILITIES_OUTPUT
    entry.tensorIndex = p_index
    sig.outputs = [entry, *sig.outputs]
    return True


def _embedding_output(schema: Any, model: Any, task: Any) -> bool:
    """A pooled ``sentence_embedding`` output 0 for MediaPipe's TextEmbedder (a "none" pack is
    mean-pooled, as ``TextEmbedder`` pools it)."""
    return add_sentence_embedding(schema, model, "mean" if task.pooling == "none" else task.pooling, task.normalize)


#: Task name -> what adds, in place, the output the task's MediaPipe counterpart reads as head 0
#: (``fn(schema, model, task)``; False when it cannot). A task without an entry has no MediaPipe task.
MEDIAPIPE_OUTPUTS: dict[str, Callable[[Any, Any, Task], bool]] = {
    SequenceClassification.name: lambda schema, model, task: add_probabilities(schema, model),
    TokenClassification.name: lambda schema, model, task: add_probabilities(schema, model),
    FeatureExtraction.name: _embedding_output,
}

#: Task name -> the few words naming the model kind in its standard metadata; default: the name.
TITLES: dict[str, str] = {SequenceClassification.name: "text classifier"}


def title(task: Task) -> str:
    """A few words naming the model kind in its standard metadata ("text classifier")."""
    return TITLES.get(task.name, task.name.replace("_", " "))


def _s(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _file(schema: Any, name: str, kind: int, description: str) -> Any:
    f = schema.AssociatedFileT()
    f.name, f.type, f.description = name, kind, description
    return f


def _tensor(schema: Any, name: str, description: str, files: list[Any] | None = None) -> Any:
    t = schema.TensorMetadataT()
    t.name, t.description = name, description
    t.content = schema.ContentT()
    t.content.contentPropertiesType = schema.ContentProperties.FeatureProperties
    t.content.contentProperties = schema.FeaturePropertiesT()
    t.associatedFiles = files
    return t


def _tokenizer_unit(schema: Any, pack: ModelPack) -> Any:
    unit = schema.ProcessUnitT()
    if pack.tokenizer_type == "wordpiece":
        unit.optionsType = schema.ProcessUnitOptions.BertTokenizerOptions
        unit.options = schema.BertTokenizerOptionsT()
        unit.options.vocabFile = [_file(schema, pack.tokenizer_file, schema.AssociatedFileType.VOCABULARY,
                                        "WordPiece vocabulary, line i = token id i.")]
    else:
        unit.optionsType = schema.ProcessUnitOptions.SentencePieceTokenizerOptions
        unit.options = schema.SentencePieceTokenizerOptionsT()
        unit.options.sentencePieceModel = [_file(schema, pack.tokenizer_file, schema.AssociatedFileType.UNKNOWN,
                                                 "SentencePiece model.")]
    return unit


def build_metadata(model: Any, pack: ModelPack, name: str, description: str, extras: bool = True) -> bytes:
    """The ``M001`` ModelMetadata flatbuffer describing ``model``'s inputs/outputs and ``pack``.

    ``extras=False`` leaves out albert_edge.json (a Model-Maker-style file: tokenizer and labels only).
    """
    _, schema = _schemas()
    sg = model.subgraphs[0]
    sig = model.signatureDefs[0]
    by_index = {int(t.tensorIndex): _s(t.name) for t in [*sig.inputs, *sig.outputs]}
    inputs = []
    for i in sg.inputs:
        graph_name = by_index.get(int(i), "")
        meta_name = INPUT_METADATA_NAMES.get(graph_name, graph_name)
        inputs.append(_tensor(schema, meta_name, _INPUT_DESCRIPTIONS.get(meta_name, graph_name)))
    outputs = []
    for i in sg.outputs:
        graph_name = by_index.get(int(i), "")
        files = None
        if pack.labels is not None and graph_name in (PROBABILITIES_OUTPUT, "logits"):
            files = [_file(schema, LABELS_MEMBER, schema.AssociatedFileType.TENSOR_AXIS_LABELS, "One label per class.")]
        text = _OUTPUT_DESCRIPTIONS.get(graph_name, graph_name)
        outputs.append(_tensor(schema, graph_name, text, files))
    sub = schema.SubGraphMetadataT()
    sub.inputTensorMetadata = inputs
    sub.outputTensorMetadata = outputs
    # MediaPipe has WordPiece and SentencePiece units only: a byte-level BPE model gets none (MediaPipe
    # then refuses it; albert-edge's runtime and the pack still carry its tokenizer).
    if pack.tokenizer_type in ("wordpiece", "sentencepiece"):
        sub.inputProcessUnits = [_tokenizer_unit(schema, pack)]
    meta = schema.ModelMetadataT()
    meta.name, meta.description, meta.version = name, description, f"albert-edge {__version__}, {pack.variant}"
    meta.subgraphMetadata = [sub]
    meta.minParserVersion = MIN_PARSER_VERSION
    if extras:
        meta.associatedFiles = [_file(schema, SETTINGS_MEMBER, schema.AssociatedFileType.UNKNOWN,
                                      "albert-edge settings the schema cannot hold: lower-casing, max length, task, "
                                      "variant, writer version (docs/pack_format.md).")]
    builder = flatbuffers.Builder(1024)
    builder.Finish(meta.Pack(builder), METADATA_IDENTIFIER)
    return bytes(builder.Output())


def attach_standard_metadata(model_bytes: bytes, pack: ModelPack, name: str = "", description: str = "",
                             extras: bool = True) -> bytes:
    """``model_bytes`` (packed or not) rewritten for MediaPipe, with standard metadata and the pack appended.

    Idempotent: an existing ``TFLITE_METADATA`` buffer is replaced, a ``probabilities`` output is
    not added twice, and the old pack is dropped before the new one is appended.
    ``extras=False`` writes a Model-Maker-style file (no albert_edge.json anywhere).

    Memory: the model is read through a view and the re-serialised flatbuffer joined to the pack's archive
    in one copy, so packing takes the builder's copy and the result beside ``model_bytes`` (it was five
    copies, 1.2 GB above a 390 MiB fp32 model: quantize's peak on BERT-base, record 0280).
    """
    schema, _ = _schemas()
    flat = tflite_flatbuffer_view(model_bytes)
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAs(flat, 0))
    inline_buffers(model, flat)
    graph_for_mediapipe(model, pack.max_seq_len, pack.task_object())
    task = title(pack.task_object())
    blob = build_metadata(model, pack, name or f"albert-edge {task}",
                          description or f"ALBERT {task} ({pack.tokenizer_type}, max {pack.max_seq_len} tokens, "
                                         f"{pack.variant}); written by albert-edge {__version__}.", extras)
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(blob, dtype=np.uint8)
    entries = [m for m in (model.metadata or []) if _s(m.name) == METADATA_NAME]
    if entries:
        model.buffers[entries[0].buffer] = buffer
    else:
        model.buffers.append(buffer)
        entry = schema.MetadataT()
        entry.name, entry.buffer = METADATA_NAME, len(model.buffers) - 1
        model.metadata = [*(model.metadata or []), entry]
    builder = flatbuffers.Builder(len(flat) + len(blob) + 4096)
    builder.Finish(model.Pack(builder), b"TFL3")
    del model, flat  # the object tree's views of model_bytes
    out = memoryview(builder.Bytes)[builder.Head():]  # Output() would copy it twice
    members = pack.members() if extras else {k: v for k, v in pack.members().items() if k != SETTINGS_MEMBER}
    return attach_tflite_members(out, members)


def inline_buffers(model: Any, flat: bytes) -> None:
    """Move buffers stored after the flatbuffer (``offset > 1``) into it, in place.

    litert-quantizer writes a model with more than 256 KiB of weights that way; re-serialising the
    object tree writes only the flatbuffer, so the weights behind it would be lost. Callers have
    checked the extents (``runtime.flatbuffer``); a bad one is still refused here.
    """
    from albert_edge.errors import ModelFileError

    for index, buffer in enumerate(model.buffers or []):
        offset, size = int(buffer.offset or 0), int(buffer.size or 0)
        if offset <= 1:
            continue
        if offset + size > len(flat):
            raise ModelFileError(f"buffer {index} spans bytes {offset}..{offset + size} of a {len(flat)}-byte model")
        buffer.data = np.frombuffer(flat[offset : offset + size], dtype=np.uint8)
        buffer.offset = buffer.size = 0
