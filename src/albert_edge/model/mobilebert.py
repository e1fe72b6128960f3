"""MobileBERT as data: its canonical tensors with their shapes, and their Hugging Face names.

MobileBERT (Sun et al. 2020, transformers' ``MobileBertModel``) is BERT's skeleton with a narrow
inside: every layer maps its H-wide input to the bottleneck width B (``intra_bottleneck_size``),
attends and runs its FFNs at B, and maps back to H. The computation lives where every family's
does (``skeleton.mobilebert_block`` for the exporters, ``reference.mobilebert_block`` for the
judge); this module only says which tensors exist, so ``weights.expected_shapes`` and the name
table (``names.py``, column ``hf-mobilebert``) stay tables.

Canonical names beyond BERT's (``{p}`` = ``encoder.group{g}.inner0.``, one group per layer; every
``*.norm`` is a NoNorm, ``x * gamma + beta``; kernels ``[in, out]``)::

    embeddings.projection.kernel [3E, H] .bias [H]   the 3-gram (next, this, previous token) -> H
    embeddings.norm.gamma / .beta [H]
    {p}bottleneck.input.kernel [H, B] .bias [B], {p}bottleneck.input.norm.*      [B]
    {p}bottleneck.attention.*   (key_query_shared_bottleneck: Q and K read it)   [H, B], [B]
    {p}attention.{query,key,output}.kernel [B, B]; {p}attention.value.kernel [H or B, B]
    {p}attention.norm.* [B]
    {p}ffn{k}.intermediate [B, I], ffn{k}.output [I, B], ffn{k}.norm [B]  for k < num_feedforward_networks - 1
    {p}ffn.intermediate [B, I], {p}ffn.output [I, B], {p}ffn.norm [B]   (the last FFN)
    {p}output_bottleneck.kernel [B, H] .bias [H], {p}output_bottleneck.norm.* [H]
"""

from __future__ import annotations

from albert_edge.model.config import AlbertConfig

_L = "encoder.layer.{g}."  # transformers' MobileBertEncoder.layer[g]
_B = "encoder.group{g}.inner{i}."  # the canonical layer prefix (one group per layer)


def _rows(canonical: str, dense: str | None, norm: str | None) -> dict[str, tuple[str, str]]:
    """The name rows of one canonical dense layer and/or NoNorm: HF ``<dense>.weight`` is torch's
    ``[out, in]`` (transposed), biases and NoNorm ``weight``/``bias`` are stored as they are."""
    rows = {}
    if dense is not None:
        rows[canonical + ".kernel"] = (dense + ".weight", "transpose")
        rows[canonical + ".bias"] = (dense + ".bias", "keep")
    if norm is not None:
        rows[canonical + ".norm.gamma"] = (norm + ".weight", "keep")
        rows[canonical + ".norm.beta"] = (norm + ".bias", "keep")
    return rows


#: canonical template -> (Hugging Face name without the ``mobilebert.`` prefix, transform). The tensors
#: MobileBERT names as BERT does (word/position/type tables, attention.self.query/key/value,
#: attention.output.dense, intermediate.dense, output.dense, pooler, heads) take BERT's column
#: (``names.py``); ``{k}`` is the index of a stacked FFN (``MobileBertLayer.ffn[k]``).
HF_MOBILEBERT_NAMES: dict[str, tuple[str, str]] = {
    **_rows("embeddings.projection", "embeddings.embedding_transformation", None),
    **_rows("embeddings", None, "embeddings.LayerNorm"),
    **_rows(_B + "bottleneck.input", _L + "bottleneck.input.dense", _L + "bottleneck.input.LayerNorm"),
    **_rows(_B + "bottleneck.attention", _L + "bottleneck.attention.dense", _L + "bottleneck.attention.LayerNorm"),
    **_rows(_B + "attention", None, _L + "attention.output.LayerNorm"),
    **_rows(_B + "ffn{k}.intermediate", _L + "ffn.{k}.intermediate.dense", None),
    **_rows(_B + "ffn{k}.output", _L + "ffn.{k}.output.dense", None),
    **_rows(_B + "ffn{k}", None, _L + "ffn.{k}.output.LayerNorm"),
    **_rows(_B + "ffn", None, _L + "output.LayerNorm"),
    **_rows(_B + "output_bottleneck", _L + "output.bottleneck.dense", _L + "output.bottleneck.LayerNorm"),
}


def _dense(shapes: dict[str, tuple[int, ...]], prefix: str, fan_in: int, fan_out: int) -> None:
    shapes[prefix + ".kernel"] = (fan_in, fan_out)
    shapes[prefix + ".bias"] = (fan_out,)


def _norm(shapes: dict[str, tuple[int, ...]], prefix: str, width: int) -> None:
    shapes[prefix + ".norm.gamma"] = shapes[prefix + ".norm.beta"] = (width,)


def mobilebert_layer_shapes(config: AlbertConfig) -> dict[str, tuple[int, ...]]:
    """One layer's tensors (names relative to ``encoder.group{g}.inner0.``) with their shapes."""
    layout = config.mobilebert
    assert layout is not None
    h, b, i = config.hidden_size, layout.intra_bottleneck_size, config.intermediate_size
    shapes: dict[str, tuple[int, ...]] = {}
    _dense(shapes, "bottleneck.input", h, b)
    _norm(shapes, "bottleneck.input", b)
    if layout.key_query_shared_bottleneck and not layout.use_bottleneck_attention:
        _dense(shapes, "bottleneck.attention", h, b)
        _norm(shapes, "bottleneck.attention", b)
    for name in ("query", "key", "output"):
        _dense(shapes, f"attention.{name}", b, b)
    _dense(shapes, "attention.value", b if layout.use_bottleneck_attention else h, b)
    _norm(shapes, "attention", b)
    for ffn in [f"ffn{k}" for k in range(layout.num_feedforward_networks - 1)] + ["ffn"]:
        _dense(shapes, f"{ffn}.intermediate", b, i)
        _dense(shapes, f"{ffn}.output", i, b)
        _norm(shapes, ffn, b)
    _dense(shapes, "output_bottleneck", b, h)
    _norm(shapes, "output_bottleneck", h)
    return shapes


def mobilebert_embedding_shapes(config: AlbertConfig) -> dict[str, tuple[int, ...]]:
    """The embedding's tensors: E-wide word rows, their 3-gram projected to H, H-wide positions and types."""
    e, h = config.embedding_size, config.hidden_size
    shapes: dict[str, tuple[int, ...]] = {"embeddings.word": (config.vocab_size, e),
                                          "embeddings.position": (config.max_position_embeddings, h),
                                          "embeddings.token_type": (config.type_vocab_size, h)}
    _dense(shapes, "embeddings.projection", 3 * e, h)
    _norm(shapes, "embeddings", h)
    return shapes
