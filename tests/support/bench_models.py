"""Tiny but real models for the bench tests: a packed .tflite (fp32 and dynamic-range int8) and .onnx.

The graph has the production signature (input_ids, attention_mask, token_type_ids int32 [batch, seq],
dynamic dims; logits float32 [batch, 2]): embedding -> dense+relu -> masked mean -> classifier.
Small enough to convert in seconds and time in microseconds, so no test waits on a real ALBERT.
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from pathlib import Path

import numpy as np

from albert_edge.runtime.pack import (
    ModelPack,
    attach_tflite_pack,
    pack_to_metadata_props,
)

WORDS = [
    "good", "great", "fine", "nice", "happy", "love", "clean", "quiet", "friendly", "warm",     # positive
    "bad", "awful", "dirty", "noisy", "rude", "cold", "sad", "hate", "broken", "slow",         # negative
    "room", "hotel", "staff", "food", "bed", "view", "price", "the", "a", "was", "very", "not", "and", "but",
]
VOCAB_SIZE = 128   # embedding rows: covers the vocab and the worker's random timing ids (1..99)
# Padded with [unusedN] tokens, as BERT vocabs are: the pack's vocab must have one token per embedding row.
_BASE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
VOCAB = [*_BASE, *(f"[unused{i}]" for i in range(VOCAB_SIZE - len(_BASE)))]
HIDDEN = 64
LABELS = ("neg", "pos")


def params(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    emb = rng.normal(0, 1, (VOCAB_SIZE, HIDDEN)).astype(np.float32)
    positive = [VOCAB.index(w) for w in WORDS[:10]]
    emb[positive, 0] += 3.0   # a sentiment direction, so the classifier is not a coin toss
    classifier = rng.normal(0, 0.1, (HIDDEN, 2)).astype(np.float32)
    classifier[0] = [-1.0, 1.0]
    return {"emb": emb, "dense": np.eye(HIDDEN, dtype=np.float32) + rng.normal(0, 0.05, (HIDDEN, HIDDEN)).astype(np.float32),
            "classifier": classifier}


def _pack(variant: str) -> ModelPack:
    return ModelPack(tokenizer_type="wordpiece", tokenizer_asset=("\n".join(VOCAB) + "\n").encode(),
                     do_lower_case=True, max_seq_len=32, labels=LABELS, variant=variant)


def tflite_bytes(quantize: bool = False) -> bytes:
    import tensorflow as tf

    p = params()

    class Tiny(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = tf.Variable(p["emb"])
            self.dense = tf.Variable(p["dense"])
            self.classifier = tf.Variable(p["classifier"])

        @tf.function(input_signature=[tf.TensorSpec([None, None], tf.int32, name=n)
                                      for n in ("input_ids", "attention_mask", "token_type_ids")])
        def serve(self, input_ids, attention_mask, token_type_ids):
            h = tf.gather(self.emb, input_ids) + tf.expand_dims(tf.cast(token_type_ids, tf.float32), -1)
            h = tf.nn.relu(tf.matmul(h, self.dense))
            mask = tf.expand_dims(tf.cast(attention_mask, tf.float32), -1)
            pooled = tf.reduce_sum(h * mask, 1) / tf.maximum(tf.reduce_sum(mask, 1), 1.0)
            return {"logits": tf.matmul(pooled, self.classifier)}

    module = Tiny()
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.serve.get_concrete_function()], module)
    if quantize:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    return converter.convert()


def onnx_bytes() -> bytes:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    p = params()
    inits = [numpy_helper.from_array(p["emb"], "emb"), numpy_helper.from_array(p["dense"], "dense"),
             numpy_helper.from_array(p["classifier"], "classifier"),
             numpy_helper.from_array(np.array([-1], np.int64), "last"),
             numpy_helper.from_array(np.array([1], np.int64), "seq_axis"),
             numpy_helper.from_array(np.array([1.0], np.float32), "one")]
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["word"]),
        helper.make_node("Cast", ["token_type_ids"], ["types_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["types_f", "last"], ["types"]),
        helper.make_node("Add", ["word", "types"], ["h0"]),
        helper.make_node("MatMul", ["h0", "dense"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h"]),
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["mask_f", "last"], ["mask"]),
        helper.make_node("Mul", ["h", "mask"], ["hm"]),
        helper.make_node("ReduceSum", ["hm", "seq_axis"], ["total"], keepdims=0),
        helper.make_node("ReduceSum", ["mask", "seq_axis"], ["count0"], keepdims=0),
        helper.make_node("Max", ["count0", "one"], ["count"]),
        helper.make_node("Div", ["total", "count"], ["pooled"]),
        helper.make_node("MatMul", ["pooled", "classifier"], ["logits"]),
    ]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT32, ["batch", "sequence"])
              for n in ("input_ids", "attention_mask", "token_type_ids")]
    graph = helper.make_graph(nodes, "tiny", inputs,
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 2])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    for key, value in pack_to_metadata_props(_pack("fp32-onnx")).items():
        model.metadata_props.add(key=key, value=value)
    onnx.checker.check_model(model)
    return model.SerializeToString()


def write_eval_tsv(path: Path, n: int = 40, seed: int = 0) -> Path:
    """Labelled rows of 1..12 words; label = whether positive words outnumber negative ones."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        words = list(rng.choice(WORDS[:20], size=int(rng.integers(1, 13))))
        score = sum(1 if WORDS.index(w) < 10 else -1 for w in words)
        rows.append(f"{'pos' if score > 0 else 'neg'}\t{' '.join(words)}")
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def write_models(directory: Path) -> dict[str, Path]:
    """fp32.tflite, int8.tflite (dynamic range), fp32.onnx, all packed, plus eval.tsv."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "fp32": directory / "fp32.tflite",
        "int8": directory / "int8.tflite",
        "onnx": directory / "fp32.onnx",
        "eval": directory / "eval.tsv",
    }
    paths["fp32"].write_bytes(attach_tflite_pack(tflite_bytes(), _pack("fp32")))
    paths["int8"].write_bytes(attach_tflite_pack(tflite_bytes(quantize=True), _pack("int8_dynamic")))
    paths["onnx"].write_bytes(onnx_bytes())
    write_eval_tsv(paths["eval"])
    return paths


@functools.cache
def shared_models() -> dict[str, Path]:
    """The models above, converted once per test process and shared by every bench test module."""
    directory = Path(tempfile.mkdtemp(prefix="albert-edge-bench-tests-"))
    atexit.register(shutil.rmtree, directory, True)
    return write_models(directory)
