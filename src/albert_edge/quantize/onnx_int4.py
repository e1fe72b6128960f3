"""Block-quantized weights in an ONNX model: ``MatMulNBits`` (int4 or int8) for the matmuls,
``GatherBlockQuantized`` for an int4 word table.

Why our own packing and not onnxruntime's ``MatMulNBitsQuantizer``: in onnxruntime 1.32 that
module imports ``onnx_ir``, which is not a dependency here, and the two layouts are short to write.
Both are com.microsoft contrib ops of ONNX Runtime's CPU provider (checked on 1.32):

* ``MatMulNBits``: B ``[N, K/block, block/2]`` uint8, two 4-bit values per byte (low nibble
  first), stored unsigned with the default zero point 8 (so symmetric +-7), one float scale per
  block of ``block_size`` rows of one output column. K need not be a multiple of the block: the
  last block is zero-padded (ALBERT-Tiny's 312-wide layers take block 32, 64 or 128 alike).
  ``accuracy_level`` 4 lets the kernel quantize activations to int8 per block (the dynamic int8
  idea); 0 dequantizes the weights to float and runs a float GEMM.
  With ``bits=8`` (``onnx_int8_blocks``, the ``onnx_dynamic_int8_block`` variant) B is
  ``[N, K/block, block]`` uint8 with zero point 128 (symmetric +-127): the same kernel then quantizes
  activations per block of each row, where ORT's ``DynamicQuantizeMatMul`` uses one scale for the
  whole activation tensor, which is what costs ``onnx_dynamic_int8`` its cosine on pretrained BERTs
  (benchmarks/decisions/0150-onnx-int8-blocks.md).
* ``GatherBlockQuantized``: the word table ``[V, E]`` packed the same way along the embedding
  axis, one scale per block of a row; the lookup returns float rows.

ALBERT's shared layer weights are single initializers read by L MatMuls: each is packed once and
the MatMulNBits nodes share it. MatMuls with fewer than ``MIN_COLUMNS`` outputs (the classifier)
stay float: their int4 rounding is pure loss at no size gain. The position table (read by Slice)
becomes int8 per column behind a DequantizeLinear, as in the TFLite variants.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from albert_edge.errors import QuantizationError

#: Block sizes MatMulNBits and GatherBlockQuantized accept (a power of two, at least 16).
BLOCK_SIZES = (16, 32, 64, 128, 256)
#: MatMuls with fewer output columns than this stay float (the classifier head).
MIN_COLUMNS = 16
#: Tables (Gather/Slice inputs) smaller than this stay float.
MIN_TABLE_ELEMENTS = 16384


def pack_blocks(weight: np.ndarray, block_size: int, bits: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """(packed uint8 ``[rows, blocks, block * bits / 8]``, float32 scales ``[rows, blocks]``) of ``weight``
    ``[rows, cols]`` quantized to ``bits`` (4: two values per byte; 8: one) in blocks along ``cols``,
    unsigned with the default zero point ``2 ** (bits - 1)``, so symmetric +-7 or +-127."""
    rows, cols = weight.shape
    blocks = -(-cols // block_size)
    padded = np.zeros((rows, blocks * block_size), np.float32)
    padded[:, :cols] = weight
    shaped = padded.reshape(rows, blocks, block_size)
    top = 2 ** (bits - 1) - 1
    scales = (np.abs(shaped).max(axis=-1) / top).astype(np.float32)
    scales[scales == 0] = 1.0
    q = (np.clip(np.round(shaped / scales[..., None]), -top, top) + top + 1).astype(np.uint8)
    if bits == 8:
        return q, scales
    return (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8), scales


def onnx_int4(fp32_model: bytes, block_size: int = 32, accuracy_level: int = 4, tables: bool = True) -> bytes:
    """int4 ONNX bytes from ``fp32_model`` bytes (metadata_props kept)."""
    return _matmul_nbits(fp32_model, 4, block_size, accuracy_level, tables)


def onnx_int8_blocks(fp32_model: bytes, block_size: int = 64, accuracy_level: int = 4) -> bytes:
    """ONNX bytes with int8 block weights (``MatMulNBits`` bits=8) and int8 per-column tables.

    Accuracy level 4 makes the kernel quantize each row of activations per block at run time: on
    pretrained BERTs the outlier channels then cost one block's resolution, not the whole tensor's.
    """
    return int8_column_tables(_matmul_nbits(fp32_model, 8, block_size, accuracy_level, tables=False))


def _matmul_nbits(fp32_model: bytes, bits: int, block_size: int, accuracy_level: int, tables: bool) -> bytes:
    """``fp32_model`` with every constant-weight MatMul (but the narrow classifier) as ``MatMulNBits``
    of ``bits``; with ``tables`` the word table int4 (Gather) and the position table int8 (Slice)."""
    import onnx
    from onnx import helper, numpy_helper

    if block_size not in BLOCK_SIZES:
        raise QuantizationError(f"int{bits} block size {block_size}: expected one of {', '.join(map(str, BLOCK_SIZES))}")
    model = onnx.load_from_string(fp32_model)
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    packed: dict[str, tuple[str, str, int, int]] = {}
    new_inits: list[Any] = []
    nodes = []
    for node in graph.node:
        weight = inits.get(node.input[1]) if node.op_type == "MatMul" and len(node.input) == 2 else None
        if weight is None or len(weight.dims) != 2 or weight.dims[1] < MIN_COLUMNS:
            nodes += _int4_table(node, inits, new_inits, block_size) if tables else [node]
            continue
        if weight.name not in packed:
            values = numpy_helper.to_array(weight).astype(np.float32)  # [K, N]
            data, scales = pack_blocks(values.T, block_size, bits)
            b_name, s_name = weight.name + f"_int{bits}", weight.name + f"_int{bits}_scales"
            new_inits += [numpy_helper.from_array(data, b_name), numpy_helper.from_array(scales.reshape(-1), s_name)]
            packed[weight.name] = (b_name, s_name, int(values.shape[0]), int(values.shape[1]))
        b_name, s_name, k, n = packed[weight.name]
        nodes.append(helper.make_node("MatMulNBits", [node.input[0], b_name, s_name], list(node.output),
                                      name=node.name + f"_int{bits}", domain="com.microsoft", K=k, N=n, bits=bits,
                                      block_size=block_size, accuracy_level=accuracy_level))
    if not packed:
        raise QuantizationError(f"int{bits} weights: the ONNX model has no MatMul with a constant weight to convert")
    _replace_nodes(graph, nodes, new_inits)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return model.SerializeToString()


def _int4_table(node: Any, inits: dict[str, Any], new_inits: list[Any], block_size: int) -> list[Any]:
    """The nodes reading a big float table through int4 (Gather) or int8 (Slice) storage; else ``[node]``."""
    from onnx import helper, numpy_helper

    table = inits.get(node.input[0]) if node.op_type in ("Gather", "Slice") and node.input else None
    if table is None or len(table.dims) != 2 or int(np.prod(table.dims)) < MIN_TABLE_ELEMENTS:
        return [node]
    values = numpy_helper.to_array(table).astype(np.float32)
    if node.op_type == "Gather":
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        width = int(values.shape[1])
        if axis != 0 or width % 2:
            return [node]
        # One block per row when the row fits a block size (ALBERT's 128-wide rows): a per-row scale.
        row_block = max((b for b in BLOCK_SIZES if width % b == 0), default=None)
        if row_block is None:
            return [node]
        data, scales = pack_blocks(values, row_block)
        data_name, scale_name = table.name + "_int4", table.name + "_int4_scales"
        new_inits += [numpy_helper.from_array(data.reshape(values.shape[0], -1), data_name),
                      numpy_helper.from_array(scales, scale_name)]
        return [helper.make_node("GatherBlockQuantized", [data_name, node.input[1], scale_name], list(node.output),
                                name=node.name + "_int4", domain="com.microsoft", gather_axis=0, quantize_axis=1,
                                block_size=row_block)]
    return _int8_column_table(node, table.name, values, new_inits)


def _int8_column_table(node: Any, name: str, values: np.ndarray, new_inits: list[Any]) -> list[Any]:
    """``node`` reading ``values`` through int8 storage with one scale per column: DequantizeLinear
    (axis 1) in front of a Slice, after a Gather (axis -1 of the gathered rows)."""
    from onnx import helper, numpy_helper

    scales = (np.abs(values).max(axis=0) / 127.0).astype(np.float32)
    scales[scales == 0] = 1.0
    q = np.clip(np.round(values / scales), -127, 127).astype(np.int8)
    q_name, s_name, z_name = name + "_int8", name + "_int8_scales", name + "_int8_zero"
    new_inits += [numpy_helper.from_array(q, q_name), numpy_helper.from_array(scales, s_name),
                  numpy_helper.from_array(np.zeros_like(q[0]), z_name)]
    if node.op_type == "Gather":
        rows = name + "_int8_rows"
        gathered = helper.make_node("Gather", [q_name, node.input[1]], [rows], name=node.name)
        gathered.attribute.extend(node.attribute)
        return [gathered, helper.make_node("DequantizeLinear", [rows, s_name, z_name], list(node.output),
                                           name=node.name + "_dq", axis=-1)]
    dequantized = name + "_dequantized"
    sliced = helper.make_node(node.op_type, [dequantized, *node.input[1:]], list(node.output), name=node.name)
    sliced.attribute.extend(node.attribute)
    return [helper.make_node("DequantizeLinear", [q_name, s_name, z_name], [dequantized], name=node.name + "_dq",
                             axis=1), sliced]


def int8_column_tables(model_bytes: bytes) -> bytes:
    """``model_bytes`` with every big float table (Gather word table, Slice position table) stored int8
    per column: the ONNX twin of TFLite's ``dynamic_int8_col`` tables (see column_tables.py for why
    a column scale, not a table scale: BERT's outlier embedding dimensions)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load_from_string(model_bytes)
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    new_inits: list[Any] = []
    nodes: list[Any] = []
    for node in graph.node:
        table = inits.get(node.input[0]) if node.op_type in ("Gather", "Slice") and node.input else None
        axis = next((a.i for a in node.attribute if a.name == "axis"), 0)
        if (table is None or len(table.dims) != 2 or int(np.prod(table.dims)) < MIN_TABLE_ELEMENTS
                or table.data_type != onnx.TensorProto.FLOAT or axis != 0):
            nodes.append(node)
            continue
        nodes += _int8_column_table(node, table.name, numpy_helper.to_array(table).astype(np.float32), new_inits)
    _replace_nodes(graph, nodes, new_inits)
    return model.SerializeToString()


def _replace_nodes(graph: Any, nodes: list[Any], new_inits: list[Any]) -> None:
    """Set ``graph``'s nodes, add ``new_inits`` and drop the initializers no node reads any more."""
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(new_inits)
    used = {name for node in graph.node for name in node.input}
    kept = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
