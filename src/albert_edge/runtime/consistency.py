"""Load-time check that a model file's pack agrees with its own graph.

The pack (vocab, labels, ``max_seq_len``, input names) and the graph are two halves of one file,
and either can be wrong: a vocab longer than the embedding table makes LiteRT fail mid-request
with "gather index out of bounds", a ``max_seq_len`` beyond the position table fails in SLICE
only on long texts, a label list longer than the logits fails after the run, and a shorter vocab
silently maps tokens to the wrong rows. All of that is decidable from the bytes before any
interpreter is built, so it is decided here, once, with one ModelFileError naming the file.

What is read (no interpreter, no TensorFlow, no onnx): the graph's inputs and outputs with their
dtypes and shapes, the constant tables that ``input_ids`` indexes (embedding rows) and that a
length computed from an input's shape slices or gathers (position rows), and, for TFLite, every
weight tensor's size and quantization parameters (a zero-point the kernels reject is an error
at invoke otherwise). A graph where a table cannot be found (a foreign export) skips that one check.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np

from albert_edge.errors import ModelFileError
from albert_edge.runtime.flatbuffer import TENSOR_TYPES, TfliteGraph, TfliteInfo, TfliteTensor, read_tflite_graph
from albert_edge.runtime.onnx_proto import OnnxGraph, read_onnx_graph
from albert_edge.runtime.pack import ModelPack, model_kind, read_pack_bytes, tflite_flatbuffer_view
from albert_edge.runtime.tflite_columns import TensorColumns
from albert_edge.tokenizer import load_tokenizer
from albert_edge.tokenizer.vocab_fit import vocab_fits

INDEX_DTYPES = ("int32", "int64")
# Ops that carry token ids through unchanged (only their layout or integer width changes).
_ID_PASS = {"RESHAPE", "CAST", "SQUEEZE", "UNSQUEEZE", "EXPANDDIMS", "FLATTEN", "IDENTITY"}
# Ops through which a sequence length read with SHAPE flows when it is their data input ...
_LEN_DATA_FIRST = {"STRIDEDSLICE", "SLICE", "GATHER", "RESHAPE", "SQUEEZE", "UNSQUEEZE", "EXPANDDIMS", "CAST",
                   "TILE", "EXPAND", "BROADCASTTO"}
# ... and those it flows through as any input (shape arithmetic, position ranges).
_LEN_ANY = {"PACK", "CONCATENATION", "CONCAT", "ADD", "SUB", "MUL", "DIV", "FLOORDIV", "MINIMUM", "MAXIMUM",
            "MIN", "MAX", "RANGE"}
_CONST_PASS = {"DEQUANTIZE", "DEQUANTIZELINEAR", "CAST"}
# A per-token flag computed from an input (e.g. ids == ids) whose running count (CUMSUM) is the
# position id: the batch-one graph's position lookup, which reads no SHAPE.
_FLAG_OPS = {"EQUAL", "NOTEQUAL", "GREATER", "GREATEREQUAL", "LESS", "LESSEQUAL"}
_LOOKUPS = {"GATHER", "EMBEDDINGLOOKUP"}
# Every op the trace looks at; the rest (FULLY_CONNECTED, BATCH_MATMUL, ...) it skips unread.
_TRACED = (_ID_PASS | _LEN_DATA_FIRST | _LEN_ANY | _CONST_PASS | _FLAG_OPS | _LOOKUPS
           | {"SHAPE", "CUMSUM", "SLICE", "EMBEDLAYERNORMALIZATION"})


class _Tensor(NamedTuple):   # one per graph tensor at every load: a named tuple is 5x cheaper to make
    dtype: str
    shape: tuple[int, ...]
    constant: bool


@dataclass(frozen=True)
class GraphFacts:
    """What the graph says about the pack's numbers. None where the graph does not say."""

    inputs: dict[str, tuple[str, tuple[int, ...]]]
    outputs: dict[str, tuple[str, tuple[int, ...]]]
    embedding_rows: int | None
    position_rows: int | None
    # TFLite only: the flatbuffer's validated structure, handed to the interpreter so it is not parsed twice.
    tflite_info: TfliteInfo | None = None


@lru_cache(maxsize=1024)   # a graph names a few dozen kinds of op, each hundreds of times
def _op(name: str) -> str:
    return name.upper().replace("_", "")


def _facts(inputs: Mapping[str, object], outputs: Mapping[str, object], graph_tensors: Mapping[Any, _Tensor],
           ops: Iterable[tuple[str, tuple, tuple]], const: set | None = None) -> GraphFacts:
    """Trace ids and lengths from the inputs through ``ops`` (in topological order) to the tables.

    ``const``: the keys of the constant tensors, when the caller knows them without a pass over ``graph_tensors``
    (a TFLite graph's columns look a tensor up only when the trace asks for it).
    """
    ops = [(name, ins, outs) for name, ins, outs in ((_op(name), ins, outs) for name, ins, outs in ops)
           if name in _TRACED]
    # The trace adds what it derives; the graph's own tensors stay unread until it looks one up (a ChainMap did
    # this at 10-20 us a look-up, a Python generator over its maps each time).
    derived: dict[Any, _Tensor] = {}

    def tensor(key: Any) -> _Tensor | None:
        found = derived.get(key)
        return found if found is not None else graph_tensors.get(key)

    ids = {inputs["input_ids"]} if "input_ids" in inputs else set()
    lengths: set = set()
    flags: set = set()
    if const is None:
        const = {key for key, t in graph_tensors.items() if t.constant}
    feeds = set(inputs.values())
    word: list[int] = []
    position: list[int] = []

    def table_rows(key) -> int | None:
        t = tensor(key)
        return t.shape[0] if key in const and t is not None and len(t.shape) == 2 and t.shape[0] > 0 else None

    for name, ins, outs in ops:
        if name in _ID_PASS and ins and ins[0] in ids:
            ids.update(outs)
        if name in _CONST_PASS and ins and ins[0] in const:
            const.update(outs)
            # A dequantized or cast table keeps its shape (ONNX intermediates carry none of their own).
            source = tensor(ins[0])
            for out in outs:
                if source is not None and tensor(out) is None:
                    derived[out] = source
        first = ins[0] if ins else None
        if (name in _FLAG_OPS and (first in feeds or first in ids)) or (name == "CAST" and first in flags):
            flags.update(outs)
        if ((name == "SHAPE" and (first in feeds or first in ids))
                or (name == "CUMSUM" and (first in flags or first in feeds))
                or (name in _LEN_DATA_FIRST and first in lengths)
                or (name in _LEN_ANY and not lengths.isdisjoint(ins))):   # an absent input (None, -1) is no length
            lengths.update(outs)
        if name in _LOOKUPS and len(ins) >= 2:
            params, indices = (ins[1], ins[0]) if name == "EMBEDDINGLOOKUP" else (ins[0], ins[1])
            rows = table_rows(params)
            if rows is not None and indices in ids:
                word.append(rows)
            elif rows is not None and indices in lengths:
                position.append(rows)
        elif name == "SLICE" and ins and not lengths.isdisjoint([k for k in ins if k is not None and k != -1][1:]):
            rows = table_rows(ins[0])
            if rows is not None:
                position.append(rows)
        elif name == "EMBEDLAYERNORMALIZATION" and len(ins) >= 4:
            # ONNX Runtime's fused embedding: (input_ids, segment_ids, word, position, segment, ...).
            for rows, into in ((table_rows(ins[2]), word), (table_rows(ins[3]), position)):
                if rows is not None:
                    into.append(rows)

    def described(keys: Mapping[str, object]) -> dict[str, tuple[str, tuple[int, ...]]]:
        out = {}
        for name, key in keys.items():
            t = tensor(key)
            out[name] = (t.dtype, t.shape) if t is not None else ("unknown", ())
        return out

    return GraphFacts(described(inputs), described(outputs), min(word) if word else None,
                      min(position) if position else None)


class _ColumnTensors(Mapping):
    """A TFLite graph's tensors by index, each made from the columns only when the trace looks it up."""

    def __init__(self, columns: TensorColumns, nbytes: np.ndarray) -> None:
        self._columns, self._nbytes = columns, nbytes
        self._ends = columns.shapes.ends.tolist()

    def __getitem__(self, key: Any) -> _Tensor:
        if not isinstance(key, int) or not 0 <= key < len(self._ends):
            raise KeyError(key)
        t, end = self._columns, self._ends[key]
        shape = tuple(t.shapes.values[end - int(t.shapes.counts[key]) : end].tolist())
        return _Tensor(TENSOR_TYPES.get(int(t.type_codes[key]), "unknown"), shape, bool(self._nbytes[key] > 0))

    def get(self, key: Any, default: Any = None) -> Any:
        # Mapping.get raises and catches a KeyError for each miss; the trace asks for keys that are not tensors.
        return self[key] if isinstance(key, int) and 0 <= key < len(self._ends) else default

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self._ends)))

    def __len__(self) -> int:
        return len(self._ends)


def _weight_bytes(graph: TfliteGraph) -> np.ndarray:
    """Bytes of weight data behind each tensor of ``graph.columns`` (0: an activation; buffer 0 is empty)."""
    buffers = graph.columns[0].buffers if graph.columns is not None else np.zeros(0, np.int64)
    sizes = np.asarray(graph.info.buffer_sizes + (0,), np.int64)   # the buffers' extents fit the file
    inside = (buffers > 0) & (buffers < len(sizes) - 1)
    return np.where(inside, sizes[np.where(inside, buffers, 0)], 0)


def tflite_facts(graph: TfliteGraph) -> GraphFacts:
    from dataclasses import replace

    if graph.columns is None:
        tensors: Mapping[Any, _Tensor] = {t.index: _Tensor(t.dtype, t.shape, t.constant) for t in graph.tensors}
        ops = [(op.name, tuple(None if i < 0 else i for i in op.inputs), op.outputs) for op in graph.ops]
        facts = _facts(graph.signature_inputs, graph.signature_outputs, tensors, ops)
    else:
        columns, op_columns = graph.columns
        nbytes = _weight_bytes(graph)
        names = [_op(code.name) for code in graph.info.operator_codes]
        traced = np.array([name in _TRACED for name in names] + [False], bool)
        # Only the ops the trace looks at; an absent optional input stays -1, a key no tensor or set holds.
        chosen = traced[op_columns.opcodes]
        spans = []
        for ragged in (op_columns.inputs, op_columns.outputs):
            ends = ragged.ends
            spans.append((ragged.values.tolist(), (ends - ragged.counts).tolist(), ends.tolist()))
        (ins, in_starts, in_ends), (outs, out_starts, out_ends) = spans
        ops = [(names[code], tuple(ins[in_starts[i] : in_ends[i]]), tuple(outs[out_starts[i] : out_ends[i]]))
               for i, code in zip(chosen.nonzero()[0].tolist(), op_columns.opcodes[chosen].tolist())]
        facts = _facts(graph.signature_inputs, graph.signature_outputs, _ColumnTensors(columns, nbytes), ops,
                       set((nbytes > 0).nonzero()[0].tolist()))
    return replace(facts, tflite_info=graph.info)


def onnx_facts(graph: OnnxGraph) -> GraphFacts:
    tensors = {name: _Tensor(v.dtype, v.shape, False) for name, v in {**graph.inputs, **graph.outputs}.items()}
    tensors.update({name: _Tensor(v.dtype, v.shape, True) for name, v in graph.initializers.items()})
    ops = [(n.op_type, tuple(i or None for i in n.inputs), n.outputs) for n in graph.nodes]
    return _facts({k: k for k in graph.inputs}, {k: k for k in graph.outputs}, tensors, ops)


_ITEM_BYTES = {"float32": 4, "float16": 2, "int32": 4, "uint8": 1, "int64": 8, "bool": 1, "int16": 2,
               "complex64": 8, "int8": 1, "float64": 8}


def tensor_problem(graph: TfliteGraph) -> str | None:
    """The first weight tensor no TFLite kernel should be given, described; None if all are sane.

    A constant's shape must account for exactly its buffer's bytes: LiteRT only checks that the
    buffer is not too small, so an edited shape that claims fewer rows (an embedding "of 3
    rows") loads and then reads the wrong weights or fails mid-request. TFLite's quantization
    spec: int32/int16 tensors and per-channel (weight) tensors are symmetric (zero-point 0),
    int8/uint8 zero-points lie in their type's range, and every scale is a positive finite
    number. Kernels check some of this only at invoke, and some not at all.

    A graph read as columns is checked over whole vectors (``_suspects``); only the tensors found there are
    described, one by one, in index order, so the message is the one the pass over every tensor gives.
    """
    candidates: Iterable[TfliteTensor]
    if graph.columns is None:
        candidates = graph.tensors
    else:
        # A hostile shape's element count may overflow float64 to inf (inf * 0 bytes: nan): suspects, not warnings.
        with np.errstate(all="ignore"):
            suspects = _suspects(graph)
        candidates = [graph.tensors[i] for i in suspects]
    for t in candidates:
        problem = _weight_problem(t)
        if problem is not None:
            return problem
    return None


def _weight_problem(t) -> str | None:
    """``tensor_problem`` of one tensor."""
    ranges = {"int8": (-128, 127), "uint8": (0, 255)}
    what = f"tensor {t.index} ({t.name!r}, {t.dtype})"
    item = _ITEM_BYTES.get(t.dtype)
    if (t.constant and not t.sparse and item is not None and all(d >= 0 for d in t.shape)
            and math.prod(t.shape) * item != t.nbytes):
        return f"{what} has shape {list(t.shape)} ({math.prod(t.shape) * item} bytes) but {t.nbytes} bytes of data"
    bad_scale = next((s for s in t.scales if not (math.isfinite(s) and s > 0)), None)
    if bad_scale is not None:
        return f"{what} has quantization scale {bad_scale}, expected a positive finite number"
    if not t.zero_points:
        return None
    if t.scales and len(t.scales) != len(t.zero_points):
        return f"{what} has {len(t.scales)} quantization scales but {len(t.zero_points)} zero-points"
    symmetric = t.dtype in ("int32", "int16", "int64") or len(t.zero_points) > 1
    low, high = (0, 0) if symmetric else ranges.get(t.dtype, (-(1 << 63), (1 << 63) - 1))
    bad = next((z for z in t.zero_points if not low <= z <= high), None)
    if bad is not None:
        expected = "0 (symmetric)" if symmetric else f"in {low}..{high}"
        return f"{what} has quantization zero-point {bad}, expected {expected}"
    return None


# Bytes per element by TensorType code (0: a type whose size the check does not know, e.g. string, int4).
_ITEM_BY_CODE = np.array([_ITEM_BYTES.get(TENSOR_TYPES.get(code, ""), 0) for code in range(256)], np.float64)
_CODE = {name: code for code, name in TENSOR_TYPES.items()}


def _per_tensor(flags: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """True for each tensor with any flagged element in its vector (``counts`` elements per tensor)."""
    rows = np.arange(len(counts)).repeat(counts)
    return np.bincount(rows[flags], minlength=len(counts)) > 0


def _suspects(graph: TfliteGraph) -> list[int]:
    """Indices of the tensors that may fail ``_weight_problem``, in order: every one that does, and (only with
    shapes whose element count reaches 2**53) some that do not."""
    assert graph.columns is not None
    t = graph.columns[0]
    n = len(t)
    if n == 0:
        return []
    nbytes = _weight_bytes(graph).astype(np.float64)
    codes = t.type_codes.astype(np.int64) % 256
    item = _ITEM_BY_CODE[codes]
    dims, counts = t.shapes.values, t.shapes.counts
    starts = np.minimum(counts.cumsum() - counts, len(dims))
    # Element counts in float64, exact below 2**53 (every partial product of non-negative dims is at most the
    # whole, or the whole is 0); a segment's product by reduceat, an empty shape (a scalar) 1.
    products = np.multiply.reduceat(np.concatenate((dims.astype(np.float64), [1.0])), starts)
    products = np.where(counts == 0, 1.0, products)
    checked = (nbytes > 0) & ~t.sparse & (item > 0) & ~_per_tensor(dims < 0, counts)
    shape_bad = checked & ~((products < 2.0 ** 53) & (products * item == nbytes))
    scales = t.scales.values
    scale_bad = _per_tensor(~(np.isfinite(scales) & (scales > 0)), t.scales.counts)
    nz, ns = t.zero_points.counts, t.scales.counts
    mismatch = (nz > 0) & (ns > 0) & (ns != nz)
    symmetric = (codes == _CODE["int32"]) | (codes == _CODE["int16"]) | (codes == _CODE["int64"]) | (nz > 1)
    low = np.where(symmetric, 0, np.where(codes == _CODE["int8"], -128, np.where(codes == _CODE["uint8"], 0, -(2 ** 62))))
    high = np.where(symmetric, 0, np.where(codes == _CODE["int8"], 127, np.where(codes == _CODE["uint8"], 255, 2 ** 62)))
    zps = t.zero_points.values
    zero_bad = _per_tensor((zps < low.repeat(nz)) | (zps > high.repeat(nz)), nz)
    return (shape_bad | scale_bad | mismatch | zero_bad).nonzero()[0].tolist()


def graph_facts(data: bytes, source: str) -> tuple[GraphFacts, str | None]:
    """(facts, weight-tensor problem or None) for a .tflite or .onnx file's bytes."""
    kind = model_kind(data)
    if kind == "tflite":
        graph = read_tflite_graph(tflite_flatbuffer_view(data), source)
        return tflite_facts(graph), tensor_problem(graph)
    if kind == "onnx":
        return onnx_facts(read_onnx_graph(data, source)), None
    raise ModelFileError(f"{source}: not a model file (neither a TFLite flatbuffer 'TFL3' nor an ONNX protobuf)")


def check_model_consistency(data: bytes, pack: ModelPack, source: str, vocab_size: int | None = None) -> GraphFacts:
    """Raise ModelFileError (one line naming ``source``) where the pack and the graph disagree.

    ``vocab_size`` is the pack tokenizer's (the caller has usually loaded it already); None
    skips the vocab check. Returns the facts for callers that report them.
    """
    facts, problem = graph_facts(data, source)

    def fail(message: str) -> ModelFileError:
        return ModelFileError(f"{source}: {message}; the pack and the graph in this file do not belong together")

    if problem is not None:
        raise ModelFileError(f"{source}: {problem}; the file is corrupt or was edited")
    if "input_ids" not in facts.inputs:
        raise fail(f"the graph has no 'input_ids' input (it has {sorted(facts.inputs)})")
    undeclared = sorted(set(facts.inputs) - set(pack.inputs))
    if undeclared:
        raise fail(f"the graph wants input(s) {undeclared} that the pack does not declare ({list(pack.inputs)})")
    onnx = model_kind(data) == "onnx"
    for name, (dtype, shape) in facts.inputs.items():
        if dtype not in INDEX_DTYPES or (shape and len(shape) != 2):
            raise fail(f"graph input {name!r} is {dtype} with shape {list(shape)}, expected int32/int64 [batch, sequence]")
        if onnx and any(d > 0 for d in shape):
            # LiteRT resizes fixed inputs; ONNX Runtime rejects any other shape at every request.
            raise ModelFileError(f"{source}: graph input {name!r} has the fixed shape {list(shape)}; the runtime feeds "
                                 "each batch at its own size and length, so re-export with dynamic batch and sequence dims")
    output = pack.outputs[0]
    if output not in facts.outputs:
        raise fail(f"the graph has no output {output!r} (it has {sorted(facts.outputs)})")
    if pack.labels is not None:
        dtype, shape = facts.outputs[output]
        # [batch, labels] for a sentence classifier, [batch, seq, labels] for a token classifier.
        if dtype != "float32" or (shape and (len(shape) not in (2, 3) or shape[-1] not in (-1, len(pack.labels)))):
            raise fail(f"output {output!r} is {dtype} {list(shape)} but the pack has {len(pack.labels)} labels "
                       f"(expected float32 [batch, {len(pack.labels)}] or [batch, seq, {len(pack.labels)}])")
    if vocab_size is not None and facts.embedding_rows is not None and not vocab_fits(vocab_size, facts.embedding_rows):
        raise fail(f"pack {pack.tokenizer_file} has {vocab_size} tokens but the graph's embedding table has "
                   f"{facts.embedding_rows} rows (neither equal nor padding to a multiple of 8-128)")
    if facts.position_rows is not None and pack.max_seq_len > facts.position_rows:
        raise fail(f"pack max_seq_len is {pack.max_seq_len} but the graph has only {facts.position_rows} positions")
    return facts


def checked_pack(data: bytes, source: str, pack: ModelPack | None = None) -> ModelPack:
    """The file's pack (read unless given), after checking it against the graph with its tokenizer's size.

    For callers that do not otherwise load the tokenizer (bench, android-assets); the
    classifier passes its own tokenizer's size to ``check_model_consistency`` instead.
    """
    pack = read_pack_bytes(data, source) if pack is None else pack
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, source)
    check_model_consistency(data, pack, source, tokenizer.vocab_size)
    return pack
