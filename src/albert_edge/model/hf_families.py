"""What a DistilBERT, ELECTRA, MobileBERT, RoBERTa or XLM-R checkpoint needs before the name table reads it.

These families are BERT-shaped encoders; three differences are settled here, on the stored
tensors, so that the skeleton, the exporters and the numpy reference compute them without
knowing the family:

* **Heads.** ELECTRA's and RoBERTa's ``*ForSequenceClassification`` head is ``classifier.dense``
  then ``classifier.out_proj`` on the first token; it is BERT's pooler + classifier with another
  activation (``config.pooler_act``), so the two are renamed ``pooler.dense`` / ``classifier``.
  DistilBERT's ``pre_classifier`` is mapped straight by the table (``model/names.py``).
* **Positions.** RoBERTa and XLM-R number real tokens from ``padding_idx + 1`` (fairseq
  ``make_positions``); with right padding the i-th token reads row ``padding_idx + 1 + i``. The
  table's first ``padding_idx + 1`` rows are dropped so that the i-th token reads row i, as BERT's
  does. Padding positions (which HF gives row ``padding_idx``) are masked out of attention and never
  read by a head, so every real token's output is unchanged.
* **Token types.** DistilBERT has none: a zero table of two rows. RoBERTa, XLM-R and ELECTRA
  checkpoints often keep one row: it is repeated to two. Either way a segment id of 0 or 1 (what
  the preprocessor gives a text pair) adds exactly what the checkpoint adds.
* **MobileBERT's pooler.** With ``classifier_activation`` false its [CLS] head classifies the first
  token's hidden state itself (no pooler weights). The classifier gets an identity pooler (eye, zero
  bias; ``config.pooler_act`` "identity"), so every target runs the one sequence-classification head;
  it costs H x H stored floats (1 MB at MobileBERT's H = 512, fp32).
"""

from __future__ import annotations

import numpy as np

from albert_edge.errors import CheckpointError
from albert_edge.model.config import AlbertConfig
from albert_edge.model.names import HF_ALBERT, HF_BERT, HF_DISTILBERT, HF_ELECTRA, HF_MOBILEBERT, HF_ROBERTA

#: config.json ``model_type`` -> the name-table column its parameters are read with.
SCHEME_OF_TYPE = {"albert": HF_ALBERT, "bert": HF_BERT, "distilbert": HF_DISTILBERT, "electra": HF_ELECTRA,
                  "mobilebert": HF_MOBILEBERT, "roberta": HF_ROBERTA, "xlm-roberta": HF_ROBERTA}
#: The layout (what ``hf.detect_hf_scheme`` sees in the encoder's names) of each column.
LAYOUT_OF_SCHEME = {HF_ALBERT: HF_ALBERT, HF_BERT: HF_BERT, HF_DISTILBERT: HF_DISTILBERT, HF_ELECTRA: HF_BERT,
                    HF_MOBILEBERT: HF_BERT, HF_ROBERTA: HF_BERT}

_HEAD_RENAMES = {"classifier.dense.weight": "pooler.dense.weight", "classifier.dense.bias": "pooler.dense.bias",
                 "classifier.out_proj.weight": "classifier.weight", "classifier.out_proj.bias": "classifier.bias"}
_TYPES = "embeddings.token_type_embeddings.weight"
_POSITIONS = "embeddings.position_embeddings.weight"

Named = dict[str, tuple[str, np.ndarray]]


def prepare_family(named: Named, config: AlbertConfig, scheme: str, source: str) -> Named:
    """``named`` (prefix-stripped name -> (stored name, array)) as the name table expects it for ``scheme``."""
    if scheme in (HF_ALBERT, HF_BERT):
        return named
    out = dict(named)
    if scheme == HF_MOBILEBERT:
        return _identity_pooler(out, config, source)
    if scheme in (HF_ELECTRA, HF_ROBERTA) and any(name in out for name in _HEAD_RENAMES):
        if "pooler.dense.weight" in out:
            raise CheckpointError(f"{source}: holds both a pooler (pooler.dense) and a classification head "
                                  "(classifier.dense); one of them would be dropped")
        for old, new in _HEAD_RENAMES.items():
            if old in out:
                out[new] = out.pop(old)
    width = config.hidden_size if scheme == HF_DISTILBERT else config.embedding_size
    if scheme == HF_DISTILBERT:
        if _TYPES in out:
            raise CheckpointError(f"{source}: a DistilBERT checkpoint with token type embeddings ({_TYPES})")
        out[_TYPES] = ("(DistilBERT has no token types: zeros)", np.zeros((2, width), np.float32))
    elif _TYPES in out and out[_TYPES][1].shape[:1] == (1,):
        stored, table = out[_TYPES]
        out[_TYPES] = (stored, np.repeat(np.asarray(table), 2, axis=0))
    if scheme == HF_ROBERTA and _POSITIONS in out:
        stored, table = out[_POSITIONS]
        offset = table.shape[0] - config.max_position_embeddings
        if table.ndim != 2 or offset < 1:
            raise CheckpointError(f"{source}: variable {stored} has shape {list(table.shape)}, expected "
                                  f"[pad_token_id + 1 + {config.max_position_embeddings}, {width}] (RoBERTa numbers "
                                  "positions from pad_token_id + 1)")
        out[_POSITIONS] = (stored, np.asarray(table)[offset:])
    return out


def scheme_of(config: AlbertConfig, layout: str, source: str) -> str:
    """The name-table column for ``config.model_type``, checked against the layout the names show."""
    scheme = SCHEME_OF_TYPE[config.model_type]
    if LAYOUT_OF_SCHEME[scheme] != layout:
        raise CheckpointError(f"{source}: parameters are {layout} but the config says model_type "
                              f"{config.model_type}")
    return scheme


def _identity_pooler(named: Named, config: AlbertConfig, source: str) -> Named:
    """A MobileBERT classifier without a pooler (``classifier_activation`` false) with an identity one."""
    has_pooler = any(name.startswith("pooler.") for name in named)
    if config.pooler_act != "identity" or "classifier.weight" not in named:
        return named
    if has_pooler:
        raise CheckpointError(f"{source}: holds a pooler (pooler.dense) but config.json says classifier_activation "
                              "false, which has none")
    eye = np.eye(config.hidden_size, dtype=np.float32)
    return {**named, "pooler.dense.weight": ("(classifier_activation false: identity)", eye),
            "pooler.dense.bias": ("(classifier_activation false: zeros)", np.zeros(config.hidden_size, np.float32))}
