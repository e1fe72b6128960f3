"""SmoothQuant-style smoothing: move per-channel activation range into the next layer's weights.

An FC input ``x`` with outlier channels (|x_j| far above the rest) quantizes badly per token; dividing
channel j by ``s_j`` and multiplying row j of the FC kernel by ``s_j`` leaves ``x @ W`` unchanged in
real arithmetic and moves the range into weights, which are quantized per output channel
(Xiao et al. 2023, ``s_j = max|x_j|^alpha / max|W_j|^(1 - alpha)``). The division must be folded into
whatever produces ``x``, with no new op, so only these places qualify (all exact float transforms
on the canonical weights, applied before any graph is built):

- attention value -> attention output, every layer: the context ``softmax(QK^T) V`` is linear in each
  channel of V, so V's kernel column and bias j divided by ``s_j`` divide context channel j by ``s_j``;
- pre-LN blocks (``ln_type == "preln"``) only: LayerNorm -> Q/K/V and LayerNorm -> FFN intermediate,
  by dividing the LayerNorm's gamma and beta, because there the LayerNorm output feeds only those FCs.

In post-LN BERT/ALBERT the LayerNorm output is also the residual, so LN -> Q/K/V and LN -> FFN cannot be
smoothed without a MUL op in the graph, and GELU (not homogeneous) blocks FFN intermediate -> output.
Measured on all-MiniLM-L6-v2 (post-LN: only V -> O applies): see ``docs/architecture.md`` (quantize).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from albert_edge.model.weights import AlbertWeights, block_prefix
from albert_edge.errors import QuantizationError

#: SmoothQuant's default migration strength (0: nothing moves, 1: all range into the weights).
DEFAULT_ALPHA = 0.5


@dataclass(frozen=True)
class SmoothingFold:
    """One fold: the tensors whose input channels are divided (producers) and multiplied (consumers)."""

    producers: tuple[str, ...]  # canonical names divided by s (kernel columns / bias / gamma / beta)
    consumers: tuple[str, ...]  # canonical kernels whose rows are multiplied by s
    stats_of: str               # the consumer kernel whose input absmax decides s


def smoothing_folds(weights: AlbertWeights) -> list[SmoothingFold]:
    """Every exact fold this checkpoint's architecture allows (see the module docstring)."""
    cfg = weights.config
    folds = []
    for g in cfg.used_groups():
        for i in range(cfg.inner_group_num):
            p = block_prefix(g, i)
            folds.append(SmoothingFold((p + "attention.value.kernel", p + "attention.value.bias"),
                                       (p + "attention.output.kernel",), p + "attention.output.kernel"))
            if cfg.ln_type == "preln":
                qkv = tuple(p + f"attention.{n}.kernel" for n in ("query", "key", "value"))
                # Q, K and V read one tensor; V's statistics stand for all three (the converter folds
                # 1/sqrt(head size) into Q's weights, so Q's FC is not found by value).
                folds.append(SmoothingFold((p + "attention.layer_norm.gamma", p + "attention.layer_norm.beta"),
                                           qkv, qkv[2]))
                folds.append(SmoothingFold((p + "ffn.layer_norm.gamma", p + "ffn.layer_norm.beta"),
                                           (p + "ffn.intermediate.kernel",), p + "ffn.intermediate.kernel"))
    return folds


def smooth_weights(weights: AlbertWeights, input_absmax: Mapping[str, np.ndarray],
                   alpha: float = DEFAULT_ALPHA) -> tuple[AlbertWeights, list[str]]:
    """(smoothed copy of ``weights``, canonical names of the consumer kernels smoothed).

    ``input_absmax``: canonical kernel name -> max |input| per input channel on calibration text
    (``fc_input_absmax``); folds whose consumer has no statistics are skipped. In real arithmetic the
    model computes the same function; in float32 it differs by rounding only.
    """
    if not 0.0 <= alpha <= 1.0:
        raise QuantizationError(f"smoothing alpha {alpha!r}: expected a number between 0 and 1")
    tensors = dict(weights.tensors)
    done = []
    for fold in smoothing_folds(weights):
        x = input_absmax.get(fold.stats_of)
        if x is None:
            continue
        w = np.max([np.abs(tensors[c]).max(axis=1) for c in fold.consumers], axis=0)
        s = np.power(np.maximum(x, 1e-5), alpha) / np.power(np.maximum(w, 1e-5), 1.0 - alpha)
        s = np.where(np.isfinite(s) & (s > 0), s, 1.0).astype(np.float64)
        for name in fold.producers:
            value = tensors[name].astype(np.float64)
            # A kernel's output channels are its columns (TF layout [in, out]); a vector is one per channel.
            tensors[name] = (value / s if value.ndim == 1 else value / s[None, :]).astype(np.float32)
        for name in fold.consumers:
            tensors[name] = (tensors[name].astype(np.float64) * s[:, None]).astype(np.float32)
        done.append(fold.stats_of)
    return replace(weights, tensors=tensors, source=f"{weights.source} (smoothed, alpha {alpha:g})"), done


def fc_input_absmax(weights: AlbertWeights, float_model: bytes,
                    samples: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Canonical kernel name -> max |input| per input channel of its FULLY_CONNECTED op(s), over ``samples``.

    Runs the fp32 flatbuffer on LiteRT's builtin kernels with every intermediate tensor kept; an FC is
    matched to its canonical kernel by value (the flatbuffer stores the kernel transposed, [out, in]),
    and a kernel used by several ops (ALBERT's shared layer) takes the max over its uses.
    """
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from albert_edge.runtime.pack import strip_tflite_pack

    by_bytes = {np.ascontiguousarray(v.T).tobytes(): name for name, v in weights.tensors.items()
                if name.endswith(".kernel") and v.ndim == 2}
    interpreter = Interpreter(model_content=strip_tflite_pack(bytes(float_model)), experimental_preserve_all_tensors=True,
                              experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interpreter.allocate_tensors()
    fcs = []
    for op in interpreter._get_ops_details():
        if op["op_name"] != "FULLY_CONNECTED":
            continue
        name = by_bytes.get(np.ascontiguousarray(interpreter.get_tensor(op["inputs"][1])).tobytes())
        if name is not None:
            fcs.append((name, int(op["inputs"][0])))
    inputs = {d["name"]: d for d in interpreter.get_input_details()}
    stats: dict[str, np.ndarray] = {}
    for sample in samples:
        for key, detail in inputs.items():
            value = next(v for n, v in sample.items() if n in key)
            interpreter.resize_tensor_input(detail["index"], value.shape)
        interpreter.allocate_tensors()
        for key, detail in inputs.items():
            interpreter.set_tensor(detail["index"], next(v for n, v in sample.items() if n in key))
        interpreter.invoke()
        for name, index in fcs:
            value = interpreter.get_tensor(index)
            x = np.abs(value).reshape(-1, value.shape[-1]).max(axis=0)
            stats[name] = np.maximum(stats[name], x) if name in stats else x
    return stats


def smoothed_weights_for(weights: AlbertWeights, float_model: bytes, samples: Sequence[Mapping[str, np.ndarray]],
                         alpha: float = DEFAULT_ALPHA) -> tuple[AlbertWeights, list[str]]:
    """``smooth_weights`` with statistics measured on ``samples`` by the fp32 model of ``weights``."""
    return smooth_weights(weights, fc_input_absmax(weights, float_model, samples), alpha)

