"""Tiny real model files for the runtime tests, built the way convert builds them.

A bag-of-embeddings classifier with the contract's I/O (int32 ``input_ids``,
``attention_mask``, ``token_type_ids`` [batch, seq] -> float32 ``logits`` [batch, 2]):

    h      = sum_s mask[b,s] * (E[ids[b,s]] + T[types[b,s]]) / sum_s mask[b,s]      [B, D]
    logits = tanh(h) @ W + c                                                        [B, C]

It is exported to TFLite with TensorFlow (tf.Module -> TFLiteConverter, dynamic batch and
sequence) and to ONNX with onnx.helper, then packed with the runtime's own pack writer, so
every backend and the numpy formula above must agree. tests/test_runtime_models.py proves the
fixtures themselves are what they claim.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from albert_edge.runtime.pack import ModelPack, attach_tflite_pack, pack_to_metadata_props

LABELS = ("neg", "pos")
# Characters chosen so that the sentiment sentences below tokenize to known ids.
CHARS = "这家酒店服务很好差不错太了房间干净脏环境糟糕推荐的我们是一个非常满意失望"
VOCAB_LINES = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *CHARS, "hello", "world", "##s"]
DIM = 8


def vocab_bytes() -> bytes:
    return ("\n".join(VOCAB_LINES) + "\n").encode("utf-8")


def weights(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    v = len(VOCAB_LINES)
    emb = rng.normal(0, 1.0, (v, DIM)).astype(np.float32)
    # Make "好" and "差" decisive so the labels of the sample sentences are stable.
    emb[VOCAB_LINES.index("好")] += 3.0
    emb[VOCAB_LINES.index("差")] -= 3.0
    w = np.zeros((DIM, 2), np.float32)
    w[:, 1] = 1.0
    w[:, 0] = -1.0
    w += rng.normal(0, 0.1, w.shape).astype(np.float32)
    return {
        "emb": emb,
        "types": rng.normal(0, 0.3, (2, DIM)).astype(np.float32),
        "w": w,
        "c": np.array([0.05, -0.05], np.float32),
    }


def numpy_logits(wts: dict[str, np.ndarray], ids, mask, types) -> np.ndarray:
    """The formula in the module docstring, float64. [B, S] int arrays -> [B, C]."""
    ids, mask, types = (np.asarray(a) for a in (ids, mask, types))
    x = wts["emb"][ids].astype(np.float64) + wts["types"][types]
    m = mask[..., None].astype(np.float64)
    h = (x * m).sum(1) / m.sum(1)
    return np.tanh(h) @ wts["w"] + wts["c"]


def make_pack(max_seq_len: int = 32, **kw) -> ModelPack:
    return ModelPack(
        tokenizer_type="wordpiece",
        tokenizer_asset=vocab_bytes(),
        do_lower_case=True,
        max_seq_len=max_seq_len,
        labels=LABELS,
        source={"scheme": "test-fixture"},
        **kw,
    )


def tflite_bytes(wts: dict[str, np.ndarray]) -> bytes:
    """Unpacked flatbuffer of the fixture model, via TensorFlow's converter."""
    tf = pytest.importorskip("tensorflow")
    spec = tf.TensorSpec([None, None], tf.int32)

    class Bag(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = tf.constant(wts["emb"])
            self.types = tf.constant(wts["types"])
            self.w = tf.constant(wts["w"])
            self.c = tf.constant(wts["c"])

        @tf.function(input_signature=[spec, spec, spec])
        def serve(self, input_ids, attention_mask, token_type_ids):
            x = tf.gather(self.emb, input_ids) + tf.gather(self.types, token_type_ids)
            m = tf.expand_dims(tf.cast(attention_mask, tf.float32), -1)
            h = tf.reduce_sum(x * m, axis=1) / tf.reduce_sum(m, axis=1)
            return {"logits": tf.matmul(tf.tanh(h), self.w) + self.c}

    module = Bag()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [module.serve.get_concrete_function()], module
    )
    return converter.convert()


def onnx_bytes(wts: dict[str, np.ndarray], pack: ModelPack | None = None) -> bytes:
    """The fixture model as ONNX (opset 17), inputs int32, pack in metadata_props."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper, numpy_helper

    i32 = TensorProto.INT32
    inputs = [helper.make_tensor_value_info(n, i32, ["batch", "sequence"]) for n in ("input_ids", "attention_mask", "token_type_ids")]
    out = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])
    inits = [numpy_helper.from_array(wts[k], k) for k in ("emb", "types", "w", "c")]
    inits.append(numpy_helper.from_array(np.array([-1], np.int64), "last_axis"))
    inits.append(numpy_helper.from_array(np.array([1], np.int64), "seq_axis"))
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["we"]),
        helper.make_node("Gather", ["types", "token_type_ids"], ["te"]),
        helper.make_node("Add", ["we", "te"], ["x"]),
        helper.make_node("Cast", ["attention_mask"], ["mf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mf", "last_axis"], ["m"]),
        helper.make_node("Mul", ["x", "m"], ["xm"]),
        helper.make_node("ReduceSum", ["xm", "seq_axis"], ["num"], keepdims=0),
        helper.make_node("ReduceSum", ["m", "seq_axis"], ["den"], keepdims=0),
        helper.make_node("Div", ["num", "den"], ["h"]),
        helper.make_node("Tanh", ["h"], ["t"]),
        helper.make_node("MatMul", ["t", "w"], ["z"]),
        helper.make_node("Add", ["z", "c"], ["logits"]),
    ]
    graph = helper.make_graph(nodes, "bag", inputs, [out], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    if pack is not None:
        helper.set_model_props(model, pack_to_metadata_props(pack))
    onnx.checker.check_model(model)
    return model.SerializeToString()


def write_models(directory: Path, seed: int = 0, max_seq_len: int = 32) -> dict[str, Path]:
    """Write packed ``bag.tflite`` and ``bag.onnx`` into ``directory``."""
    wts = weights(seed)
    pack = make_pack(max_seq_len)
    paths = {"tflite": directory / "bag.tflite", "onnx": directory / "bag.onnx"}
    paths["tflite"].write_bytes(attach_tflite_pack(tflite_bytes(wts), pack))
    paths["onnx"].write_bytes(onnx_bytes(wts, pack))
    return paths
