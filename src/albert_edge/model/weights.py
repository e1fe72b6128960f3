"""The canonical weight set: one name -> array dict that every reader produces.

Names and orientation (TF: dense kernels are ``[in, out]``), g = hidden group, i = inner group::

    embeddings.word                       [V, E]
    embeddings.position                   [P, E]   ([P, H] when project_then_add)
    embeddings.token_type                 [T, E]   ([T, H] when project_then_add)
    embeddings.layer_norm.gamma / .beta   [E]      ([H] when project_then_add)
    embeddings.projection.kernel          [E, H]   (absent for no_projection)
    embeddings.projection.bias            [H]      (add_then_project only; brightmart's has none)
    encoder.group{g}.inner{i}.attention.{query,key,value,output}.kernel [H, H]  .bias [H]
    encoder.group{g}.inner{i}.attention.layer_norm.gamma / .beta        [H]
    encoder.group{g}.inner{i}.ffn.intermediate.kernel [H, I]  .bias [I]
    encoder.group{g}.inner{i}.ffn.output.kernel       [I, H]  .bias [H]
    encoder.group{g}.inner{i}.ffn.layer_norm.gamma / .beta              [H]
    pooler.kernel [H, H]  pooler.bias [H]                               (absent in HF *ForTokenClassification)
    classifier.kernel [H, num_labels]  classifier.bias [num_labels]     (optional head)
    qa_outputs.kernel [H, 2]  qa_outputs.bias [2]                       (optional span head: start, end)

Pre-LN needs no extra names: in brightmart's ``prelln_transformer_model`` the attention
LayerNorm normalises the block input before attention and the ffn LayerNorm the input of the
FFN, and there is no final LayerNorm. ``config.ln_type`` says which computation applies.

A layer's weights live once, under its group; the layers that share a group share the arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from albert_edge.errors import CheckpointError
from albert_edge.model.config import AlbertConfig
from albert_edge.model.dtypes import float32_weight
from albert_edge.model.mobilebert import mobilebert_embedding_shapes, mobilebert_layer_shapes

BLOCK_KEYS = (
    "attention.query.kernel", "attention.query.bias",
    "attention.key.kernel", "attention.key.bias",
    "attention.value.kernel", "attention.value.bias",
    "attention.output.kernel", "attention.output.bias",
    "attention.layer_norm.gamma", "attention.layer_norm.beta",
    "ffn.intermediate.kernel", "ffn.intermediate.bias",
    "ffn.output.kernel", "ffn.output.bias",
    "ffn.layer_norm.gamma", "ffn.layer_norm.beta",
)


def block_prefix(group: int, inner: int) -> str:
    """Canonical prefix of one shared block: ``encoder.group{g}.inner{i}.``."""
    return f"encoder.group{group}.inner{inner}."


def block_shapes(config: AlbertConfig) -> dict[str, tuple[int, ...]]:
    """Shapes of one transformer block's tensors, keyed by BLOCK_KEYS."""
    h, i = config.hidden_size, config.intermediate_size
    shapes: dict[str, tuple[int, ...]] = {}
    for proj in ("query", "key", "value", "output"):
        shapes[f"attention.{proj}.kernel"] = (h, h)
        shapes[f"attention.{proj}.bias"] = (h,)
    shapes["attention.layer_norm.gamma"] = shapes["attention.layer_norm.beta"] = (h,)
    shapes["ffn.intermediate.kernel"] = (h, i)
    shapes["ffn.intermediate.bias"] = (i,)
    shapes["ffn.output.kernel"] = (i, h)
    shapes["ffn.output.bias"] = (h,)
    shapes["ffn.layer_norm.gamma"] = shapes["ffn.layer_norm.beta"] = (h,)
    return {key: shapes[key] for key in BLOCK_KEYS}


def expected_shapes(config: AlbertConfig, num_labels: int | None = None,
                    pooler: bool = True, span_head: bool = False) -> dict[str, tuple[int, ...]]:
    """Every canonical tensor this config needs, with its shape (classifier only if num_labels).

    ``pooler`` False: Hugging Face token classifiers and question answerers are built with
    ``add_pooling_layer=False`` and store no pooler; whether a task needs one is the task's check
    (``Task.check_weights``). ``span_head``: the extractive-QA head (start and end logit per token).
    """
    v, e, h = config.vocab_size, config.embedding_size, config.hidden_size
    width = h if config.embedding_order == "project_then_add" else e
    shapes: dict[str, tuple[int, ...]] = {
        "embeddings.word": (v, e),
        "embeddings.position": (config.max_position_embeddings, width),
        "embeddings.token_type": (config.type_vocab_size, width),
        "embeddings.layer_norm.gamma": (width,),
        "embeddings.layer_norm.beta": (width,),
    }
    if config.embedding_order != "no_projection":
        shapes["embeddings.projection.kernel"] = (e, h)
    if config.embedding_order == "add_then_project":
        shapes["embeddings.projection.bias"] = (h,)
    if config.mobilebert:
        shapes = mobilebert_embedding_shapes(config)
    one_block = mobilebert_layer_shapes(config) if config.mobilebert else block_shapes(config)
    for g in config.used_groups():
        for i in range(config.inner_group_num):
            for key, shape in one_block.items():
                shapes[block_prefix(g, i) + key] = shape
    if pooler:
        shapes["pooler.kernel"] = (h, h)
        shapes["pooler.bias"] = (h,)
    if num_labels:
        shapes["classifier.kernel"] = (h, num_labels)
        shapes["classifier.bias"] = (num_labels,)
    if span_head:
        shapes["qa_outputs.kernel"] = (h, 2)
        shapes["qa_outputs.bias"] = (2,)
    return shapes


@dataclass
class AlbertWeights:
    """A config plus its canonical float32 tensors, and where they came from."""

    config: AlbertConfig
    tensors: dict[str, np.ndarray]
    scheme: str
    num_labels: int | None = None
    ignored: tuple[str, ...] = ()
    source: str = "<memory>"

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise CheckpointError unless the tensors are exactly what the config needs."""
        expected = expected_shapes(self.config, self.num_labels, self.has_pooler, self.has_span_head)
        missing = [name for name in expected if name not in self.tensors]
        if missing:
            raise CheckpointError(f"{self.source}: missing canonical tensor {missing[0]} {list(expected[missing[0]])}"
                                  + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        extra = sorted(set(self.tensors) - set(expected))
        if extra:
            raise CheckpointError(f"{self.source}: unexpected canonical tensor {extra[0]} for this config")
        for name, shape in expected.items():
            array = self.tensors[name]
            if tuple(array.shape) != shape:
                raise CheckpointError(f"{self.source}: {name} has shape {list(array.shape)}, expected {list(shape)}")
            if array.dtype != np.float32:
                self.tensors[name] = float32_weight(array, name, self.source)

    @property
    def has_pooler(self) -> bool:
        """Whether the checkpoint carries a pooler (one without either pooler tensor is valid)."""
        return "pooler.kernel" in self.tensors or "pooler.bias" in self.tensors

    @property
    def has_span_head(self) -> bool:
        """Whether the checkpoint carries an extractive-QA span head (``qa_outputs.*``)."""
        return "qa_outputs.kernel" in self.tensors or "qa_outputs.bias" in self.tensors

    def block(self, group: int, inner: int = 0) -> dict[str, np.ndarray]:
        """One shared block's tensors keyed by BLOCK_KEYS (``attention.query.kernel``, ...; a MobileBERT
        layer's by ``mobilebert.mobilebert_layer_shapes``)."""
        prefix = block_prefix(group, inner)
        keys = mobilebert_layer_shapes(self.config) if self.config.mobilebert else BLOCK_KEYS
        return {key: self.tensors[prefix + key] for key in keys}

    def num_parameters(self) -> int:
        """Stored parameters, each shared block counted once (what the file and every export hold)."""
        return int(sum(array.size for array in self.tensors.values()))


def weights_nbytes(weights: AlbertWeights) -> int:
    """Bytes of every tensor: what the converter's memory grows with, so what the size-chosen routes go by
    (``convert.tflite_export.SAVED_MODEL_ROUTE_BYTES``, ``quantize.builds.LARGE_WEIGHTS_BYTES``)."""
    return sum(int(t.nbytes) for t in weights.tensors.values())


def random_weights(config: AlbertConfig, num_labels: int | None = 2, seed: int = 0,
                   pooler: bool = True, span_head: bool = False) -> AlbertWeights:
    """Random weights of the right shapes, for tests and parity checks.

    Kernels are scaled 1/sqrt(fan_in) so activations stay O(1) through every layer, and biases and
    LayerNorm gamma/beta are deliberately far from 0/1: a reader that drops a bias, swaps gamma and
    beta or forgets a transpose then changes the logits visibly.
    """
    rng = np.random.default_rng(seed)
    tensors: dict[str, np.ndarray] = {}
    for name, shape in expected_shapes(config, num_labels, pooler, span_head).items():
        if name.endswith(".gamma"):
            value = 1.0 + 0.2 * rng.standard_normal(shape)
        elif name.endswith((".beta", ".bias")):
            value = 0.2 * rng.standard_normal(shape)
        elif name.startswith("embeddings.") and not name.startswith("embeddings.projection"):
            value = 0.5 * rng.standard_normal(shape)
        else:
            value = rng.standard_normal(shape) / np.sqrt(shape[0])
        tensors[name] = value.astype(np.float32)
    return AlbertWeights(config=config, tensors=tensors, scheme="random", num_labels=num_labels or None,
                         ignored=(), source=f"<random seed={seed}>")
