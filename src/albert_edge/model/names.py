"""Canonical tensor name -> the name each checkpoint dialect uses, with the transform it needs.

A new dialect is a new column of strings, not a new converter. ``{g}`` is the hidden group and
``{i}`` the inner group; dialects whose layers are not grouped that way say so in their column
(brightmart shares one ``layer_shared`` block, BERT has one ``layer_{g}`` per layer).

Transforms turn the stored array into the canonical TF orientation (dense kernels ``[in, out]``)
and back; both are their own inverse, so readers and writers share this table:

* ``KEEP``: stored as canonical (TF1 kernels, every embedding table, LayerNorm, biases).
* ``T``: 2-D transpose (torch ``nn.Linear.weight`` is ``[out, in]``; TF1 classifier
  ``output_weights`` is ``[num_labels, H]`` because run_classifier does ``matmul(x, W, transpose_b=True)``).

Hugging Face names are written without the ``albert.`` / ``bert.`` model prefix (stripped on
read, added on write) and with ``LayerNorm.weight/.bias`` (old ``gamma/beta`` are renamed on read).
"""

from __future__ import annotations

import re
from typing import Callable, Mapping

import numpy as np

from albert_edge.errors import CheckpointError
from albert_edge.model.config import AlbertConfig
from albert_edge.model.dtypes import float32_weight
from albert_edge.model.mobilebert import HF_MOBILEBERT_NAMES
from albert_edge.model.weights import expected_shapes

KEEP = "keep"
T = "transpose"

GOOGLE = "google-tf1"  # google-research/albert modeling.py
BRIGHTMART = "brightmart-tf1"  # brightmart/albert_zh modeling.py / modeling_preln.py
BERT_TF1 = "bert-tf1"  # google-research/bert modeling.py
HF_ALBERT = "hf-albert"  # transformers AlbertModel / AlbertForSequenceClassification
HF_BERT = "hf-bert"  # transformers BertModel / BertForSequenceClassification
HF_DISTILBERT = "hf-distilbert"  # transformers DistilBertModel / DistilBertFor*
HF_ELECTRA = "hf-electra"  # transformers ElectraModel / ElectraFor* (the discriminator)
HF_ROBERTA = "hf-roberta"  # transformers RobertaModel / XLMRobertaModel / *For*
HF_MOBILEBERT = "hf-mobilebert"  # transformers MobileBertModel / MobileBertFor*

TF1_SCHEMES = (GOOGLE, BRIGHTMART, BERT_TF1)
HF_SCHEMES = (HF_ALBERT, HF_BERT, HF_DISTILBERT, HF_ELECTRA, HF_MOBILEBERT, HF_ROBERTA)

_GB = "bert/encoder/transformer/group_{g}/inner_group_{i}/"  # Google block scope
_BB = "bert/encoder/layer_shared/"  # brightmart: one block shared by every layer
_TB = "bert/encoder/layer_{g}/"  # BERT TF1: one block per layer
_HA = "encoder.albert_layer_groups.{g}.albert_layers.{i}."
_HB = "encoder.layer.{g}."
_HD = "transformer.layer.{g}."

TABLE: dict[str, dict[str, tuple[str, str]]] = {
    "embeddings.word": {
        GOOGLE: ("bert/embeddings/word_embeddings", KEEP),
        BRIGHTMART: ("bert/embeddings/word_embeddings", KEEP),
        BERT_TF1: ("bert/embeddings/word_embeddings", KEEP),
        HF_ALBERT: ("embeddings.word_embeddings.weight", KEEP),
        HF_BERT: ("embeddings.word_embeddings.weight", KEEP),
        HF_DISTILBERT: ("embeddings.word_embeddings.weight", KEEP),
    },
    "embeddings.position": {
        GOOGLE: ("bert/embeddings/position_embeddings", KEEP),
        BRIGHTMART: ("bert/embeddings/position_embeddings", KEEP),  # [P, H]: added after projection
        BERT_TF1: ("bert/embeddings/position_embeddings", KEEP),
        HF_ALBERT: ("embeddings.position_embeddings.weight", KEEP),
        HF_BERT: ("embeddings.position_embeddings.weight", KEEP),
        HF_DISTILBERT: ("embeddings.position_embeddings.weight", KEEP),
    },
    "embeddings.token_type": {
        GOOGLE: ("bert/embeddings/token_type_embeddings", KEEP),
        BRIGHTMART: ("bert/embeddings/token_type_embeddings", KEEP),  # [T, H]
        BERT_TF1: ("bert/embeddings/token_type_embeddings", KEEP),
        HF_ALBERT: ("embeddings.token_type_embeddings.weight", KEEP),
        HF_BERT: ("embeddings.token_type_embeddings.weight", KEEP),
        HF_DISTILBERT: ("embeddings.token_type_embeddings.weight", KEEP),
    },
    "embeddings.layer_norm.gamma": {
        GOOGLE: ("bert/embeddings/LayerNorm/gamma", KEEP),
        BRIGHTMART: ("bert/embeddings/LayerNorm/gamma", KEEP),  # over H
        BERT_TF1: ("bert/embeddings/LayerNorm/gamma", KEEP),
        HF_ALBERT: ("embeddings.LayerNorm.weight", KEEP),
        HF_BERT: ("embeddings.LayerNorm.weight", KEEP),
        HF_DISTILBERT: ("embeddings.LayerNorm.weight", KEEP),
    },
    "embeddings.layer_norm.beta": {
        GOOGLE: ("bert/embeddings/LayerNorm/beta", KEEP),
        BRIGHTMART: ("bert/embeddings/LayerNorm/beta", KEEP),
        BERT_TF1: ("bert/embeddings/LayerNorm/beta", KEEP),
        HF_ALBERT: ("embeddings.LayerNorm.bias", KEEP),
        HF_BERT: ("embeddings.LayerNorm.bias", KEEP),
        HF_DISTILBERT: ("embeddings.LayerNorm.bias", KEEP),
    },
    "embeddings.projection.kernel": {
        GOOGLE: ("bert/encoder/embedding_hidden_mapping_in/kernel", KEEP),
        BRIGHTMART: ("bert/embeddings/word_embeddings_2", KEEP),  # [E, H], applied to word embeddings only
        HF_ALBERT: ("encoder.embedding_hidden_mapping_in.weight", T),
    },
    "embeddings.projection.bias": {
        GOOGLE: ("bert/encoder/embedding_hidden_mapping_in/bias", KEEP),
        HF_ALBERT: ("encoder.embedding_hidden_mapping_in.bias", KEEP),
    },
    "encoder.group{g}.inner{i}.attention.query.kernel": {
        GOOGLE: (_GB + "attention_1/self/query/kernel", KEEP),
        BRIGHTMART: (_BB + "attention/self/query/kernel", KEEP),
        BERT_TF1: (_TB + "attention/self/query/kernel", KEEP),
        HF_ALBERT: (_HA + "attention.query.weight", T),
        HF_BERT: (_HB + "attention.self.query.weight", T),
        HF_DISTILBERT: (_HD + "attention.q_lin.weight", T),
    },
    "encoder.group{g}.inner{i}.attention.query.bias": {
        GOOGLE: (_GB + "attention_1/self/query/bias", KEEP),
        BRIGHTMART: (_BB + "attention/self/query/bias", KEEP),
        BERT_TF1: (_TB + "attention/self/query/bias", KEEP),
        HF_ALBERT: (_HA + "attention.query.bias", KEEP),
        HF_BERT: (_HB + "attention.self.query.bias", KEEP),
        HF_DISTILBERT: (_HD + "attention.q_lin.bias", KEEP),
    },
    "encoder.group{g}.inner{i}.attention.key.kernel": {
        GOOGLE: (_GB + "attention_1/self/key/kernel", KEEP),
        BRIGHTMART: (_BB + "attention/self/key/kernel", KEEP),
        BERT_TF1: (_TB + "attention/self/key/kernel", KEEP),
        HF_ALBERT: (_HA + "attention.key.weight", T),
        HF_BERT: (_HB + "attention.self.key.weight", T),
        HF_DISTILBERT: (_HD + "attention.k_lin.weight", T),
    },
    "encoder.group{g}.inner{i}.attention.key.bias": {
        GOOGLE: (_GB + "attention_1/self/key/bias", KEEP),
        BRIGHTMART: (_BB + "attention/self/key/bias", KEEP),
        BERT_TF1: (_TB + "attention/self/key/bias", KEEP),
        HF_ALBERT: (_HA + "attention.key.bias", KEEP),
        HF_BERT: (_HB + "attention.self.key.bias", KEEP),
        HF_DISTILBERT: (_HD + "attention.k_lin.bias", KEEP),
    },
    "encoder.group{g}.inner{i}.attention.value.kernel": {
        GOOGLE: (_GB + "attention_1/self/value/kernel", KEEP),
        BRIGHTMART: (_BB + "attention/self/value/kernel", KEEP),
        BERT_TF1: (_TB + "attention/self/value/kernel", KEEP),
        HF_ALBERT: (_HA + "attention.value.weight", T),
        HF_BERT: (_HB + "attention.self.value.weight", T),
        HF_DISTILBERT: (_HD + "attention.v_lin.weight", T),
    },
    "encoder.group{g}.inner{i}.attention.value.bias": {
        GOOGLE: (_GB + "attention_1/self/value/bias", KEEP),
        BRIGHTMART: (_BB + "attention/self/value/bias", KEEP),
        BERT_TF1: (_TB + "attention/self/value/bias", KEEP),
        HF_ALBERT: (_HA + "attention.value.bias", KEEP),
        HF_BERT: (_HB + "attention.self.value.bias", KEEP),
        HF_DISTILBERT: (_HD + "attention.v_lin.bias", KEEP),
    },
    "encoder.group{g}.inner{i}.attention.output.kernel": {
        GOOGLE: (_GB + "attention_1/output/dense/kernel", KEEP),
        BRIGHTMART: (_BB + "attention/output/dense/kernel", KEEP),
        BERT_TF1: (_TB + "attention/output/dense/kernel", KEEP),
        HF_ALBERT: (_HA + "attention.dense.weight", T),
        HF_BERT: (_HB + "attention.output.dense.weight", T),
        HF_DISTILBERT: (_HD + "attention.out_lin.weight", T),
    },
    "encoder.group{g}.inner{i}.attention.output.bias": {
        GOOGLE: (_GB + "attention_1/output/dense/bias", KEEP),
        BRIGHTMART: (_BB + "attention/output/dense/bias", KEEP),
        BERT_TF1: (_TB + "attention/output/dense/bias", KEEP),
        HF_ALBERT: (_HA + "attention.dense.bias", KEEP),
        HF_BERT: (_HB + "attention.output.dense.bias", KEEP),
        HF_DISTILBERT: (_HD + "attention.out_lin.bias", KEEP),
    },
    # Post-LN: after the attention residual. brightmart pre-LN: on the block input, before attention.
    "encoder.group{g}.inner{i}.attention.layer_norm.gamma": {
        GOOGLE: (_GB + "LayerNorm/gamma", KEEP),
        BRIGHTMART: (_BB + "attention/output/LayerNorm/gamma", KEEP),
        BERT_TF1: (_TB + "attention/output/LayerNorm/gamma", KEEP),
        HF_ALBERT: (_HA + "attention.LayerNorm.weight", KEEP),
        HF_BERT: (_HB + "attention.output.LayerNorm.weight", KEEP),
        HF_DISTILBERT: (_HD + "sa_layer_norm.weight", KEEP),
    },
    "encoder.group{g}.inner{i}.attention.layer_norm.beta": {
        GOOGLE: (_GB + "LayerNorm/beta", KEEP),
        BRIGHTMART: (_BB + "attention/output/LayerNorm/beta", KEEP),
        BERT_TF1: (_TB + "attention/output/LayerNorm/beta", KEEP),
        HF_ALBERT: (_HA + "attention.LayerNorm.bias", KEEP),
        HF_BERT: (_HB + "attention.output.LayerNorm.bias", KEEP),
        HF_DISTILBERT: (_HD + "sa_layer_norm.bias", KEEP),
    },
    "encoder.group{g}.inner{i}.ffn.intermediate.kernel": {
        GOOGLE: (_GB + "ffn_1/intermediate/dense/kernel", KEEP),
        BRIGHTMART: (_BB + "intermediate/dense/kernel", KEEP),
        BERT_TF1: (_TB + "intermediate/dense/kernel", KEEP),
        HF_ALBERT: (_HA + "ffn.weight", T),
        HF_BERT: (_HB + "intermediate.dense.weight", T),
        HF_DISTILBERT: (_HD + "ffn.lin1.weight", T),
    },
    "encoder.group{g}.inner{i}.ffn.intermediate.bias": {
        GOOGLE: (_GB + "ffn_1/intermediate/dense/bias", KEEP),
        BRIGHTMART: (_BB + "intermediate/dense/bias", KEEP),
        BERT_TF1: (_TB + "intermediate/dense/bias", KEEP),
        HF_ALBERT: (_HA + "ffn.bias", KEEP),
        HF_BERT: (_HB + "intermediate.dense.bias", KEEP),
        HF_DISTILBERT: (_HD + "ffn.lin1.bias", KEEP),
    },
    "encoder.group{g}.inner{i}.ffn.output.kernel": {
        GOOGLE: (_GB + "ffn_1/intermediate/output/dense/kernel", KEEP),  # nested under intermediate
        BRIGHTMART: (_BB + "output/dense/kernel", KEEP),
        BERT_TF1: (_TB + "output/dense/kernel", KEEP),
        HF_ALBERT: (_HA + "ffn_output.weight", T),
        HF_BERT: (_HB + "output.dense.weight", T),
        HF_DISTILBERT: (_HD + "ffn.lin2.weight", T),
    },
    "encoder.group{g}.inner{i}.ffn.output.bias": {
        GOOGLE: (_GB + "ffn_1/intermediate/output/dense/bias", KEEP),
        BRIGHTMART: (_BB + "output/dense/bias", KEEP),
        BERT_TF1: (_TB + "output/dense/bias", KEEP),
        HF_ALBERT: (_HA + "ffn_output.bias", KEEP),
        HF_BERT: (_HB + "output.dense.bias", KEEP),
        HF_DISTILBERT: (_HD + "ffn.lin2.bias", KEEP),
    },
    # Post-LN: after the FFN residual. brightmart pre-LN: on the FFN input.
    "encoder.group{g}.inner{i}.ffn.layer_norm.gamma": {
        GOOGLE: (_GB + "LayerNorm_1/gamma", KEEP),
        BRIGHTMART: (_BB + "output/LayerNorm/gamma", KEEP),
        BERT_TF1: (_TB + "output/LayerNorm/gamma", KEEP),
        HF_ALBERT: (_HA + "full_layer_layer_norm.weight", KEEP),
        HF_BERT: (_HB + "output.LayerNorm.weight", KEEP),
        HF_DISTILBERT: (_HD + "output_layer_norm.weight", KEEP),
    },
    "encoder.group{g}.inner{i}.ffn.layer_norm.beta": {
        GOOGLE: (_GB + "LayerNorm_1/beta", KEEP),
        BRIGHTMART: (_BB + "output/LayerNorm/beta", KEEP),
        BERT_TF1: (_TB + "output/LayerNorm/beta", KEEP),
        HF_ALBERT: (_HA + "full_layer_layer_norm.bias", KEEP),
        HF_BERT: (_HB + "output.LayerNorm.bias", KEEP),
        HF_DISTILBERT: (_HD + "output_layer_norm.bias", KEEP),
    },
    "pooler.kernel": {
        GOOGLE: ("bert/pooler/dense/kernel", KEEP),
        BRIGHTMART: ("bert/pooler/dense/kernel", KEEP),
        BERT_TF1: ("bert/pooler/dense/kernel", KEEP),
        HF_ALBERT: ("pooler.weight", T),
        HF_BERT: ("pooler.dense.weight", T),
        HF_DISTILBERT: ("pre_classifier.weight", T),
    },
    "pooler.bias": {
        GOOGLE: ("bert/pooler/dense/bias", KEEP),
        BRIGHTMART: ("bert/pooler/dense/bias", KEEP),
        BERT_TF1: ("bert/pooler/dense/bias", KEEP),
        HF_ALBERT: ("pooler.bias", KEEP),
        HF_BERT: ("pooler.dense.bias", KEEP),
        HF_DISTILBERT: ("pre_classifier.bias", KEEP),
    },
    "classifier.kernel": {  # run_classifier / classifier_utils create_model
        GOOGLE: ("output_weights", T),
        BRIGHTMART: ("output_weights", T),
        BERT_TF1: ("output_weights", T),
        HF_ALBERT: ("classifier.weight", T),
        HF_BERT: ("classifier.weight", T),
        HF_DISTILBERT: ("classifier.weight", T),
    },
    # Token classification uses the same names: HF *ForTokenClassification's ``classifier`` is an
    # nn.Linear on every position, and the TF1 NER scripts of the BERT-NER family (e.g.
    # kyzhouhzau/BERT-NER BERT_NER.py ``create_model``: run_classifier's head moved onto
    # ``get_sequence_output()``) create ``output_weights`` [num_labels, H] / ``output_bias`` and
    # ``matmul(..., transpose_b=True)`` per token. The names cannot tell the heads apart;
    # ``albert_edge.tasks`` does (no pooler in HF, config.json ``architectures``, or
    # ``--task token_classification`` for TF1). A BERT-CRF's ``crf/transitions`` stays unmapped, hence
    # an error: its Viterbi decoding is not supported.
    "classifier.bias": {
        GOOGLE: ("output_bias", KEEP),
        BRIGHTMART: ("output_bias", KEEP),
        BERT_TF1: ("output_bias", KEEP),
        HF_ALBERT: ("classifier.bias", KEEP),
        HF_BERT: ("classifier.bias", KEEP),
        HF_DISTILBERT: ("classifier.bias", KEEP),
    },
    # Extractive QA span head: one dense [H, 2] on every position, column 0 the start logit, 1 the
    # end logit. TF1: google-research/bert run_squad.py ``create_model`` and google-research/albert
    # squad_utils.py ``create_v1_model`` (run_squad_v1.py) both create ``cls/squad/output_weights``
    # [2, H] / ``cls/squad/output_bias`` [2] and ``matmul(..., transpose_b=True)``; the CMRC2018
    # baseline (ymcui/cmrc2018 run_cmrc2018_drcd_baseline.py) and the CLUE TF baselines
    # (CLUEbenchmark/CLUE baselines/models/*/run_squad.py) copy run_squad, and albert_zh models
    # fine-tuned with it keep the same head names over brightmart's encoder. HF
    # ``*ForQuestionAnswering``: ``qa_outputs`` nn.Linear(H, 2), not under the model prefix.
    "qa_outputs.kernel": {
        GOOGLE: ("cls/squad/output_weights", T),
        BRIGHTMART: ("cls/squad/output_weights", T),
        BERT_TF1: ("cls/squad/output_weights", T),
        HF_ALBERT: ("qa_outputs.weight", T),
        HF_BERT: ("qa_outputs.weight", T),
        HF_DISTILBERT: ("qa_outputs.weight", T),
    },
    "qa_outputs.bias": {
        GOOGLE: ("cls/squad/output_bias", KEEP),
        BRIGHTMART: ("cls/squad/output_bias", KEEP),
        BERT_TF1: ("cls/squad/output_bias", KEEP),
        HF_ALBERT: ("qa_outputs.bias", KEEP),
        HF_BERT: ("qa_outputs.bias", KEEP),
        HF_DISTILBERT: ("qa_outputs.bias", KEEP),
    },
}

# ELECTRA and RoBERTa/XLM-R store BERT's names (``hf_families`` renames their classification heads'
# ``classifier.dense`` / ``classifier.out_proj`` onto ``pooler.dense`` / ``classifier``); ELECTRA adds
# the E -> H ``embeddings_project`` when its embedding is narrower than the encoder.
for _entry in TABLE.values():
    if HF_BERT in _entry:
        _entry[HF_ELECTRA] = _entry[HF_ROBERTA] = _entry[HF_BERT]
TABLE["embeddings.projection.kernel"][HF_ELECTRA] = ("embeddings_project.weight", T)
TABLE["embeddings.projection.bias"][HF_ELECTRA] = ("embeddings_project.bias", KEEP)
# MobileBERT keeps BERT's names where its tensors are BERT's (a query at the bottleneck width is still
# ``attention.self.query``); its bottlenecks, NoNorms, stacked FFNs and 3-gram projection are its own rows.
for _entry in TABLE.values():
    if HF_BERT in _entry:
        _entry[HF_MOBILEBERT] = _entry[HF_BERT]
for _canonical, _entry_mb in HF_MOBILEBERT_NAMES.items():
    TABLE.setdefault(_canonical, {})[HF_MOBILEBERT] = _entry_mb

#: Heads recognised by their variable names but not convertible, with the reason given to the user.
#: google-research/albert squad_utils.py ``create_v2_model`` (run_squad_v2.py) conditions the end
#: logits on the chosen start (``end_logits/dense_0`` over [hidden; start feature], a LayerNorm,
#: ``dense_1``; beam search over ``start_n_top``) and adds an ``answer_class`` head: not one dense
#: layer per position, so it has no ``qa_outputs`` equivalent.
UNSUPPORTED_HEADS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"^(start_logits|end_logits|answer_class)/"),
     ("the ALBERT run_squad_v2 head (start_logits/, end_logits/, answer_class/: the end is predicted from "
      "the chosen start with beam search) is not supported; only the single [H, 2] span head of "
      "run_squad_v1 / BERT run_squad (cls/squad/output_weights) converts")),
)

# Source names deliberately left unused: optimizer state and pretraining heads.
IGNORED_TF1 = re.compile(
    r"(^|/)(adam_m|adam_v|Adam|Adam_1|Momentum)$"  # optimizer slots (Adam, LAMB, momentum)
    r"|^(global_step|beta1_power|beta2_power|good_steps|loss_scale)$"
    r"|^cls/predictions/|^cls/seq_relationship/"  # MLM and NSP/SOP pretraining heads
)
IGNORED_HF = re.compile(
    r"^embeddings\.(position_ids|token_type_ids)$"  # buffers, not parameters
    r"|^predictions\.|^sop_classifier\."  # AlbertForPreTraining heads
    r"|^cls\.predictions\.|^cls\.seq_relationship\."  # BertForPreTraining heads
    r"|^vocab_(transform|layer_norm|projector)\."  # DistilBertForMaskedLM
    r"|^discriminator_predictions\.|^generator_predictions\.|^generator_lm_head\."  # ELECTRA pretraining
    r"|^lm_head\."  # RobertaForMaskedLM
)

HF_MODEL_PREFIX = {HF_ALBERT: "albert.", HF_BERT: "bert.", HF_DISTILBERT: "distilbert.", HF_ELECTRA: "electra.",
                   HF_ROBERTA: "roberta.", HF_MOBILEBERT: "mobilebert."}


def apply_transform(array: np.ndarray, transform: str) -> np.ndarray:
    """Stored <-> canonical orientation (each transform is its own inverse)."""
    if transform == T:
        return np.ascontiguousarray(array.T)
    return array


def transformed_shape(shape: tuple[int, ...], transform: str) -> tuple[int, ...]:
    """The stored shape of a canonical shape (or back)."""
    return tuple(reversed(shape)) if transform == T else tuple(shape)


def _indices(canonical: str) -> tuple[int, int, int]:
    """(group, inner, k) of a canonical name; k numbers MobileBERT's stacked FFNs (``ffn{k}.``)."""
    match = re.match(r"encoder\.group(\d+)\.inner(\d+)\.(?:ffn(\d+)\.)?", canonical)
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0)) if match else (0, 0, 0)


def _template(canonical: str) -> str:
    template = re.sub(r"^encoder\.group\d+\.inner\d+\.", "encoder.group{g}.inner{i}.", canonical)
    return re.sub(r"^(encoder\.group\{g\}\.inner\{i\}\.)ffn\d+\.", r"\1ffn{k}.", template)


def source_name(canonical: str, scheme: str) -> tuple[str, str] | None:
    """(stored name, transform) of a canonical tensor in ``scheme``, or None if the dialect has none."""
    entry = TABLE.get(_template(canonical), {}).get(scheme)
    if entry is None:
        return None
    group, inner, k = _indices(canonical)
    name, transform = entry
    return name.format(g=group, i=inner, k=k), transform


def name_map(canonical_names: list[str], scheme: str) -> dict[str, tuple[str, str]]:
    """canonical -> (stored name, transform) for every name the scheme can express."""
    return {name: entry for name in canonical_names if (entry := source_name(name, scheme)) is not None}



def map_to_canonical(
    config: AlbertConfig,
    scheme: str,
    stored_shapes: Mapping[str, tuple[int, ...]],
    fetch: Callable[[str], np.ndarray],
    source: str,
    ignore: re.Pattern[str],
    also_ignored: Callable[[str], bool] = lambda name: False,
) -> tuple[dict[str, np.ndarray], int | None, tuple[str, ...]]:
    """Apply the table to one checkpoint's stored tensors.

    Returns (canonical tensors, num_labels or None, ignored stored names). A missing or mis-shaped
    variable, or any stored name left over that is not known to be ignorable, is a CheckpointError
    naming it and the expected shape.
    """
    kernel_name, _ = source_name("classifier.kernel", scheme)
    bias_name, _ = source_name("classifier.bias", scheme)
    num_labels = None
    if bias_name in stored_shapes or kernel_name in stored_shapes:
        present, absent = (bias_name, kernel_name) if bias_name in stored_shapes else (kernel_name, bias_name)
        if absent not in stored_shapes:
            raise CheckpointError(f"{source}: classifier variable {present} found but {absent} is missing")
        bias_shape = tuple(stored_shapes[bias_name])
        if len(bias_shape) != 1 or bias_shape[0] < 1:
            raise CheckpointError(f"{source}: variable {bias_name} has shape {list(bias_shape)}, expected [num_labels]")
        num_labels = bias_shape[0]
    pooler_names = [entry[0] for part in ("kernel", "bias") if (entry := source_name(f"pooler.{part}", scheme))]
    span_names = [entry[0] for part in ("kernel", "bias") if (entry := source_name(f"qa_outputs.{part}", scheme))]
    expected = expected_shapes(config, num_labels, pooler=any(name in stored_shapes for name in pooler_names),
                               span_head=any(name in stored_shapes for name in span_names))
    tensors: dict[str, np.ndarray] = {}
    used: set[str] = set()
    for canonical, shape in expected.items():
        entry = source_name(canonical, scheme)
        if entry is None:
            raise CheckpointError(f"{source}: the {scheme} naming has no variable for {canonical}")
        name, transform = entry
        want = transformed_shape(shape, transform)
        if name not in stored_shapes:
            raise CheckpointError(f"{source}: missing variable {name} (expected shape {list(want)}, for {canonical})")
        got = tuple(stored_shapes[name])
        if got != want:
            raise CheckpointError(f"{source}: variable {name} has shape {list(got)}, expected {list(want)} "
                                  f"(for {canonical})")
        tensors[canonical] = np.asarray(apply_transform(float32_weight(fetch(name), name, source), transform),
                                        dtype=np.float32)
        used.add(name)
    leftover = sorted(set(stored_shapes) - used)
    for pattern, reason in UNSUPPORTED_HEADS:
        found = [name for name in leftover if pattern.search(name)]
        if found:
            raise CheckpointError(f"{source}: variable {found[0]} {list(stored_shapes[found[0]])}: {reason}")
    ignored = tuple(name for name in leftover if ignore.search(name) or also_ignored(name))
    unmapped = [name for name in leftover if name not in set(ignored)]
    if unmapped:
        listed = ", ".join(f"{name} {list(stored_shapes[name])}" for name in unmapped[:3])
        more = f" (+{len(unmapped) - 3} more)" if len(unmapped) > 3 else ""
        raise CheckpointError(f"{source}: unmapped {scheme} variable(s) {listed}{more}; "
                              "the config may not match this checkpoint")
    return tensors, num_labels, ignored
