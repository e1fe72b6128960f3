"""Respell the embeddings of an ``albert-edge convert`` ONNX graph so ORT fuses EmbedLayerNormalization.

Used only on the fusion path of ``benchmarks/records/onnx_fusion.py``, before ``optimize_model``; the exported
graph (``albert_edge.convert.onnx_graph``) is left as it is. ORT's ``FusionEmbedLayerNormalization``
(``onnxruntime/transformers/fusion_embedlayer.py``, ``fuse_bert`` + ``match_position_embedding_bert``)
matches only the PyTorch BERT spelling:

    LayerNormalization(Add(Add(Gather(word, input_ids), Gather(token_type, token_type_ids)),
                           Gather(position, Slice(position_ids [1, P], [0],
                                                  Unsqueeze(Gather(Shape(input_ids), 1), [0]), [1], [1]))))

and ``check_embedding`` requires the word, position and token-type tables to have the same width.
The exported graph differs in two ways: the position rows are a ``Slice`` of the table (no Gather;
SkipLayerNormalization then takes the embedding LayerNorm instead), and in the brightmart
``project_then_add`` order the word rows go through the 128 -> hidden projection before the sum.
The rewrite gathers positions through a ``position_ids`` constant and, for ``project_then_add``,
folds the projection into the word table (``word @ kernel + bias``: [vocab, E] -> [vocab, H]).
That fold is exact up to fp32 rounding but makes the word table H/E times larger (ALBERT-Tiny:
21128 x 128 -> 21128 x 312, +15.5 MB fp32); the ``add_then_project`` order needs no fold.
"""

from __future__ import annotations

from typing import Any

import numpy as np

WORD, POSITION, TOKEN_TYPE = "embeddings.word", "embeddings.position", "embeddings.token_type"
LAYER_NORM_GAMMA = "embeddings.layer_norm.gamma"


def _sum_terms(add: Any, producer: dict[str, Any], constants: set[str]) -> tuple[list[str], list[Any]]:
    """Leaves of the Add tree under ``add`` (tensor names) and the Add nodes that form it.

    An Add with a constant input (a bias) is a term, not part of the sum.
    """
    terms, adds, stack = [], [], [add]
    while stack:
        node = stack.pop()
        adds.append(node)
        for name in node.input:
            parent = producer.get(name)
            if parent is not None and parent.op_type == "Add" and not constants & set(parent.input):
                stack.append(parent)
            else:
                terms.append(name)
    return terms, adds


def embed_layer_norm_form(model: Any) -> Any:
    """Rewrite ``model`` (an fp32 ``onnx.ModelProto`` from ``albert-edge convert``) in place; returns it.

    Raises ValueError naming the node that does not look like the exported embedding block.
    """
    from onnx import helper, numpy_helper

    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    norm = next((n for n in graph.node if n.op_type == "LayerNormalization" and n.input[1] == LAYER_NORM_GAMMA), None)
    if norm is None or producer.get(norm.input[0]) is None or producer[norm.input[0]].op_type != "Add":
        raise ValueError(f"graph {graph.name}: no LayerNormalization({LAYER_NORM_GAMMA}) over an Add of the embeddings")
    terms, adds = _sum_terms(producer[norm.input[0]], producer, set(initializers))
    by_table: dict[str, str] = {}
    word_chain: list[Any] = []
    for term in terms:
        node, chain = producer.get(term), []
        while node is not None and node.op_type in ("MatMul", "Add") and node.input[1].startswith("embeddings.projection"):
            chain.append(node)
            node = producer.get(node.input[0])
        if node is None or node.op_type not in ("Gather", "Slice") or node.input[0] not in (WORD, POSITION, TOKEN_TYPE):
            raise ValueError(f"graph {graph.name}: embedding term {term!r} is not a Gather/Slice of a table "
                             f"({WORD}, {POSITION}, {TOKEN_TYPE})")
        by_table[node.input[0]] = node.name
        if node.input[0] == WORD:
            word_chain = [*chain, node]
    missing = {WORD, POSITION, TOKEN_TYPE} - set(by_table)
    if missing:
        raise ValueError(f"graph {graph.name}: embedding sum lacks {', '.join(sorted(missing))}")

    def const(name: str, value: np.ndarray) -> str:
        graph.initializer.append(numpy_helper.from_array(value, name))
        return name

    word_ids = word_chain[-1].input[1]
    token_type_ids = next(n for n in graph.node if n.name == by_table[TOKEN_TYPE]).input[1]
    word_table = WORD
    if len(word_chain) > 1:
        table = numpy_helper.to_array(initializers[WORD]).astype(np.float32)
        for node in reversed(word_chain[:-1]):
            value = numpy_helper.to_array(initializers[node.input[1]]).astype(np.float32)
            table = table @ value if node.op_type == "MatMul" else table + value
        word_table = const("embeddings.word_projected", table)
    positions = int(initializers[POSITION].dims[0])
    zero, one = const("embed_rewrite.zero", np.asarray([0], np.int64)), const("embed_rewrite.one", np.asarray([1], np.int64))
    one_scalar = const("embed_rewrite.one_scalar", np.asarray(1, np.int64))
    position_ids = const("embed_rewrite.position_ids", np.arange(positions, dtype=np.int64)[None, :])
    new_nodes = [
        helper.make_node("Shape", [word_ids], ["embed_rewrite.ids_shape"], name="embed_rewrite.Shape"),
        helper.make_node("Gather", ["embed_rewrite.ids_shape", one_scalar], ["embed_rewrite.seq_len"],
                         name="embed_rewrite.GatherSeqLen", axis=0),
        helper.make_node("Unsqueeze", ["embed_rewrite.seq_len", zero], ["embed_rewrite.seq_end"], name="embed_rewrite.Unsqueeze"),
        helper.make_node("Slice", [position_ids, zero, "embed_rewrite.seq_end", one, one], ["embed_rewrite.position_ids_used"],
                         name="embed_rewrite.SlicePositionIds"),
        helper.make_node("Gather", [POSITION, "embed_rewrite.position_ids_used"], ["embed_rewrite.position"],
                         name="embed_rewrite.GatherPosition", axis=0),
        helper.make_node("Gather", [word_table, word_ids], ["embed_rewrite.word"], name="embed_rewrite.GatherWord", axis=0),
        helper.make_node("Gather", [TOKEN_TYPE, token_type_ids], ["embed_rewrite.token_type"],
                         name="embed_rewrite.GatherTokenType", axis=0),
        helper.make_node("Add", ["embed_rewrite.word", "embed_rewrite.token_type"], ["embed_rewrite.word_and_type"],
                         name="embed_rewrite.AddTokenType"),
        helper.make_node("Add", ["embed_rewrite.word_and_type", "embed_rewrite.position"], [norm.input[0]],
                         name="embed_rewrite.AddPosition"),
    ]
    dropped = {id(n) for n in [*adds, *word_chain]} | {id(n) for n in graph.node if n.name in by_table.values()}
    kept = [n for n in graph.node if id(n) not in dropped]
    at = next(i for i, n in enumerate(kept) if n is norm)
    nodes = kept[:at] + new_nodes + kept[at:]
    used = {name for node in nodes for name in node.input}
    # The Shape that fed the old position Slice is now dead; drop it and anything else left unread.
    outputs = {o.name for o in graph.output}
    while True:
        dead = [n for n in nodes if n.op_type != "Identity" and not (set(n.output) & (used | outputs))]
        if not dead:
            break
        gone = {id(n) for n in dead}
        nodes = [n for n in nodes if id(n) not in gone]
        used = {name for node in nodes for name in node.input}
    del graph.node[:]
    graph.node.extend(nodes)
    kept_inits = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept_inits)
    return model
