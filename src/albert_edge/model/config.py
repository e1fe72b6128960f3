"""The one model config every reader, writer and export agrees on.

Checkpoints arrive with three config dialects that spell the same thing differently:

* Google ALBERT ``albert_config.json`` (TF1): ``num_hidden_groups``, ``inner_group_num``,
  ``down_scale_factor``; ``"gelu"`` is the tanh approximation (``modeling.gelu``).
* brightmart albert_zh ``albert_config_*.json`` (TF1): BERT keys plus ``embedding_size`` and,
  in later releases, ``"ln_type": "postln" | "preln"``; ``"gelu"`` is again the tanh form.
  Its ``*_google.json`` files are Google-dialect configs for checkpoints trained with Google's code.
* Hugging Face ``config.json`` (``model_type`` albert, bert, distilbert, electra, roberta or
  xlm-roberta): ``"gelu"`` is the exact erf GELU, ``"gelu_new"`` / ``"gelu_pytorch_tanh"`` /
  ``"gelu_fast"`` the tanh form. DistilBERT spells its sizes ``dim`` / ``hidden_dim`` / ``n_layers`` /
  ``n_heads`` and its activation ``activation``; the other families use BERT's keys.

The newer families are BERT-shaped encoders with a different head activation and embedding inputs:
``pooler_act`` is the activation on the [CLS] head's dense layer (BERT/ALBERT/RoBERTa pooler tanh,
DistilBERT ``pre_classifier`` ReLU, ELECTRA's classification head exact GELU). RoBERTa's position
offset and the families without token types are handled where the weights are read
(``model/hf_families.py``), so the canonical config stays the one BERT computes.

Activation names are mapped to what the training code of that dialect actually computed, so
``hidden_act`` here is never ambiguous: ``gelu_tanh`` or ``gelu_exact``.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Mapping

from albert_edge.errors import ConfigError
from albert_edge.inputs.jsonfile import load_json_file

ACTIVATIONS = ("gelu_tanh", "gelu_exact", "relu", "silu", "tanh")
LN_TYPES = ("postln", "preln")
EMBEDDING_ORDERS = ("add_then_project", "project_then_add", "no_projection")
MODEL_TYPES = ("albert", "bert", "distilbert", "electra", "mobilebert", "roberta", "xlm-roberta")
#: Families whose embedding may be projected to H (ALBERT, ELECTRA, MobileBERT); the rest add at width H.
PROJECTING_TYPES = ("albert", "electra", "mobilebert")
#: The [CLS] head's activation may also be none: MobileBERT with ``classifier_activation`` false
#: classifies the first token itself (its reader gives it an identity pooler, ``model/hf_families.py``).
POOLER_ACTIVATIONS = (*ACTIVATIONS, "identity")

# What each dialect's training code computed for a given activation string.
TF1_ACTIVATIONS: dict[str, str] = {  # google-research/albert and brightmart modeling.get_activation
    "gelu": "gelu_tanh",
    "relu": "relu",
    "tanh": "tanh",
}
HF_ACTIVATIONS: dict[str, str] = {  # transformers.activations.ACT2FN
    "gelu": "gelu_exact",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
    "tanh": "tanh",
}

# Keys only Google's AlbertConfig writes; their presence marks the Google dialect.
_GOOGLE_KEYS = ("num_hidden_groups", "inner_group_num", "down_scale_factor", "net_structure_type")


@dataclass(frozen=True)
class MobileBertLayout:
    """What a MobileBERT layer has beyond BERT's (Sun et al. 2020; transformers' MobileBertLayer).

    Each layer narrows its input ``[.., H]`` to the bottleneck ``[.., intra_bottleneck_size]``
    (dense + NoNorm), attends and runs ``num_feedforward_networks`` FFNs at that width, and widens
    back to H with a residual on the layer input. Every normalisation is NoNorm (``x * gamma + beta``);
    the word embedding is the 3-gram of E-wide rows projected to H. Options transformers has but
    albert-edge does not map (no bottleneck, LayerNorm, no 3-gram) are refused by the reader.
    """

    intra_bottleneck_size: int
    key_query_shared_bottleneck: bool = True
    use_bottleneck_attention: bool = False
    num_feedforward_networks: int = 1


@dataclass(frozen=True)
class AlbertConfig:
    """Architecture of an ALBERT (or BERT, as a degenerate ALBERT) encoder.

    BERT is an ALBERT with ``embedding_order="no_projection"`` (E == H) and one hidden group
    per layer, so one reference and one set of exporters cover both.
    """

    vocab_size: int
    embedding_size: int
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    intermediate_size: int
    num_hidden_groups: int = 1
    inner_group_num: int = 1
    hidden_act: str = "gelu_tanh"
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    ln_type: str = "postln"
    embedding_order: str = "add_then_project"
    model_type: str = "albert"
    pooler_act: str = "tanh"
    mobilebert: MobileBertLayout | None = None  # set exactly when model_type is mobilebert

    def __post_init__(self) -> None:
        _validate(self.__dict__, "AlbertConfig")

    def attention_width(self) -> int:
        """Width Q, K, V and the attention output work at: H, or MobileBERT's bottleneck."""
        return self.mobilebert.intra_bottleneck_size if self.mobilebert else self.hidden_size

    def head_dim(self) -> int:
        """Width of one attention head: attention_width() // num_attention_heads."""
        return self.attention_width() // self.num_attention_heads

    def group_of_layer(self, layer: int) -> int:
        """Hidden group whose weights layer ``layer`` uses (Google: int(layer / L * G))."""
        if not 0 <= layer < self.num_hidden_layers:
            raise ConfigError(f"layer {layer} out of range [0, {self.num_hidden_layers})")
        return layer * self.num_hidden_groups // self.num_hidden_layers

    def used_groups(self) -> tuple[int, ...]:
        """Groups some layer actually uses (all of them unless num_hidden_groups > num_hidden_layers)."""
        return tuple(sorted({self.group_of_layer(layer) for layer in range(self.num_hidden_layers)}))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def with_changes(self, **changes: Any) -> "AlbertConfig":
        """A validated copy with some fields replaced."""
        return replace(self, **changes)


# Upper bounds on the sizes a config may state, checked before any loop or allocation that a size
# drives (a per-layer loop over num_hidden_layers 1e9 hung `inspect`). Each is several times the
# largest published ALBERT/BERT-family value, so no real checkpoint comes near them.
FIELD_LIMITS: dict[str, int] = {
    "vocab_size": 1_000_000,  # largest multilingual vocabs (XLM-R, mT5) are ~250 k
    "embedding_size": 16_384,  # ALBERT uses 128; BERT-style E == H
    "hidden_size": 16_384,  # ALBERT-xxlarge 4096; the widest published encoders 8-12 k
    "num_hidden_layers": 256,  # BERT-large 24, the deepest ALBERT/DeBERTa experiments 48-96
    "num_attention_heads": 512,  # 64 at ALBERT-xxlarge; heads must also divide hidden_size
    "intermediate_size": 65_536,  # ALBERT-xxlarge 16384 (4 x H)
    "num_hidden_groups": 256,  # at most one group per layer in practice
    "inner_group_num": 64,  # every released ALBERT uses 1
    "max_position_embeddings": 65_536,  # BERT 512, long-document encoders 4-16 k
    "type_vocab_size": 1_024,  # BERT 2, a few task-specific models 16
}


def _validate(fields: Mapping[str, Any], source: str) -> None:
    """Raise ConfigError naming ``source`` if these fields cannot describe one working model.

    Takes a mapping, not an instance, so a config file is checked (and named) before construction.
    """
    cfg = SimpleNamespace(**fields)
    for field in ("vocab_size", "embedding_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                  "intermediate_size", "num_hidden_groups", "inner_group_num", "max_position_embeddings",
                  "type_vocab_size"):
        value = getattr(cfg, field)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{source}: {field} must be a positive integer, got {_short(value)}")
        if value > FIELD_LIMITS[field]:
            raise ConfigError(f"{source}: {field} {value} is larger than any real model "
                              f"(at most {FIELD_LIMITS[field]} accepted)")
    if cfg.hidden_size % cfg.num_attention_heads:
        raise ConfigError(f"{source}: hidden_size {cfg.hidden_size} is not divisible by "
                          f"num_attention_heads {cfg.num_attention_heads}")
    if cfg.hidden_act not in ACTIVATIONS:
        raise ConfigError(f"{source}: unknown hidden_act {_short(cfg.hidden_act)}, expected one of {', '.join(ACTIVATIONS)}")
    if cfg.ln_type not in LN_TYPES:
        raise ConfigError(f"{source}: unknown ln_type {_short(cfg.ln_type)}, expected postln or preln")
    if cfg.embedding_order not in EMBEDDING_ORDERS:
        raise ConfigError(f"{source}: unknown embedding_order {_short(cfg.embedding_order)}, "
                          f"expected one of {', '.join(EMBEDDING_ORDERS)}")
    if cfg.model_type not in MODEL_TYPES:
        raise ConfigError(f"{source}: unknown model_type {_short(cfg.model_type)}, expected one of "
                          f"{', '.join(MODEL_TYPES)}")
    pooler_act = getattr(cfg, "pooler_act", "tanh")
    if pooler_act not in POOLER_ACTIVATIONS:
        raise ConfigError(f"{source}: unknown pooler_act {_short(pooler_act)}, expected one of "
                          f"{', '.join(POOLER_ACTIVATIONS)}")
    if (cfg.model_type == "mobilebert") != isinstance(getattr(cfg, "mobilebert", None), MobileBertLayout):
        raise ConfigError(f"{source}: a MobileBertLayout goes with model_type mobilebert and only with it")
    if cfg.embedding_order == "no_projection" and cfg.embedding_size != cfg.hidden_size:
        raise ConfigError(f"{source}: embedding_size {cfg.embedding_size} != hidden_size {cfg.hidden_size} "
                          "needs an embedding projection")
    if cfg.model_type not in PROJECTING_TYPES and cfg.embedding_order != "no_projection":
        raise ConfigError(f"{source}: a {cfg.model_type} model has no embedding projection "
                          "(embedding_order no_projection)")
    if not (isinstance(cfg.layer_norm_eps, (int, float)) and 0 < cfg.layer_norm_eps < 1):
        raise ConfigError(f"{source}: layer_norm_eps must be in (0, 1), got {_short(cfg.layer_norm_eps)}")


DEFAULT_MAX_SEQ_LEN = 128


def fit_max_seq_len(requested: int | None, config: AlbertConfig, source: object) -> int:
    """The tokenizer length a model file of ``config`` may carry: ``requested``, or by default 128
    capped at the position table. One rule for convert, quantize, repack and finetune, so no command
    writes a pack whose ``max_seq_len`` the graph's ``max_position_embeddings`` cannot serve (every
    reader refuses such a file). ``source`` names the checkpoint in the ConfigError."""
    positions = config.max_position_embeddings
    if requested is None:
        return min(DEFAULT_MAX_SEQ_LEN, positions)
    if requested > positions:
        raise ConfigError(f"--max-seq-len {requested} exceeds max_position_embeddings {positions} of {source}")
    return requested


def _short(value: Any) -> str:
    """``repr(value)`` cut to 60 characters: a hostile config value must not flood the one error line."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def albert_tiny_zh_config() -> AlbertConfig:
    """brightmart albert_tiny_zh (albert_config_tiny.json): ~4 M parameters, word embeddings projected
    to H before position/type embeddings are added (``embedding_lookup_factorized``)."""
    return AlbertConfig(vocab_size=21128, embedding_size=128, hidden_size=312, num_hidden_layers=4,
                        num_attention_heads=12, intermediate_size=1248, num_hidden_groups=1, inner_group_num=1,
                        hidden_act="gelu_tanh", max_position_embeddings=512, type_vocab_size=2,
                        layer_norm_eps=1e-12, ln_type="postln", embedding_order="project_then_add",
                        model_type="albert")


def albert_tiny_zh_google_config() -> AlbertConfig:
    """The same sizes in Google ALBERT order (brightmart albert_tiny_zh_google, albert_config_tiny_g.json):
    position/type embeddings added at width E, LayerNorm over E, then ``embedding_hidden_mapping_in``."""
    return albert_tiny_zh_config().with_changes(embedding_order="add_then_project")


def _read_json(path: Path) -> dict[str, Any]:
    """The config file's JSON object; depth and size are bounded (``jsonfile``) because a hostile
    ``[[[[...]]]]`` would otherwise end in a RecursionError traceback."""
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    data = load_json_file(path, ConfigError)
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: config must be a JSON object")
    return data


def config_dialect(data: Mapping[str, Any]) -> str:
    """Which dialect a config dict is written in: "hf", "brightmart", "google" or "bert-tf1"."""
    if "model_type" in data:
        return "hf"
    if "ln_type" in data:
        return "brightmart"
    if any(key in data for key in _GOOGLE_KEYS):
        return "google"
    if "embedding_size" in data and data.get("embedding_size") != data.get("hidden_size"):
        return "brightmart"
    return "bert-tf1"


def _need(data: Mapping[str, Any], key: str, source: str) -> Any:
    if key not in data or data[key] is None:
        raise ConfigError(f"{source}: config has no {key!r}")
    return data[key]


def _activation(name: Any, table: Mapping[str, str], dialect: str, source: str) -> str:
    if not isinstance(name, str) or name.lower() not in table:
        raise ConfigError(f"{source}: unknown hidden_act {_short(name)} for a {dialect} config, "
                          f"expected one of {', '.join(sorted(table))}")
    return table[name.lower()]


def parse_config_dict(data: Mapping[str, Any], source: str = "<config>", dialect: str | None = None) -> AlbertConfig:
    """Build an AlbertConfig from a config dict in any supported dialect (detected unless given)."""
    dialect = dialect or config_dialect(data)
    if dialect == "hf" and data.get("model_type") not in ("albert", "bert"):
        return _hf_family_config(data, source)
    hidden = _need(data, "hidden_size", source)
    layers = _need(data, "num_hidden_layers", source)
    common = dict(
        vocab_size=_need(data, "vocab_size", source),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=_need(data, "num_attention_heads", source),
        intermediate_size=_need(data, "intermediate_size", source),
        max_position_embeddings=data.get("max_position_embeddings", 512),
        type_vocab_size=data.get("type_vocab_size", 2),
    )
    if dialect == "hf":
        model_type = data["model_type"]
        if model_type not in MODEL_TYPES:
            raise ConfigError(f"{source}: unsupported model_type {_short(model_type)}, expected albert or bert")
        position_type = data.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise ConfigError(f"{source}: unsupported position_embedding_type {_short(position_type)}, expected absolute")
        act = _activation(data.get("hidden_act", "gelu_new" if model_type == "albert" else "gelu"),
                          HF_ACTIVATIONS, "Hugging Face", source)
        eps = data.get("layer_norm_eps", 1e-12)
        if model_type == "bert":
            cfg_fields = dict(common, embedding_size=hidden, num_hidden_groups=layers, inner_group_num=1,
                              embedding_order="no_projection", model_type="bert")
        else:
            cfg_fields = dict(common, embedding_size=data.get("embedding_size", 128),
                              num_hidden_groups=data.get("num_hidden_groups", 1),
                              inner_group_num=data.get("inner_group_num", 1),
                              embedding_order="add_then_project", model_type="albert")
        return _build(source, hidden_act=act, layer_norm_eps=eps, ln_type="postln", **cfg_fields)
    if dialect not in ("google", "brightmart", "bert-tf1"):
        raise ConfigError(f"{source}: unknown config dialect {dialect!r}")
    act = _activation(data.get("hidden_act", "gelu"), TF1_ACTIVATIONS, "TF1", source)
    ln_type = data.get("ln_type", "postln") or "postln"
    if dialect == "bert-tf1":
        return _build(source, hidden_act=act, ln_type=ln_type, embedding_size=hidden, num_hidden_groups=layers,
                      inner_group_num=1, embedding_order="no_projection", model_type="bert", **common)
    embedding = data.get("embedding_size", 128)
    if dialect == "google":
        order = "add_then_project" if embedding != hidden else "no_projection"
        return _build(source, hidden_act=act, ln_type=ln_type, embedding_size=embedding,
                      num_hidden_groups=data.get("num_hidden_groups", 1),
                      inner_group_num=data.get("inner_group_num", 1),
                      embedding_order=order, model_type="albert", **common)
    return _build(source, hidden_act=act, ln_type=ln_type, embedding_size=embedding, num_hidden_groups=1,
                  inner_group_num=1, embedding_order="project_then_add", model_type="albert", **common)


#: RoBERTa / XLM-R ``config.json`` default ``pad_token_id``: position ids start at padding_idx + 1.
ROBERTA_PADDING_IDX = 1


def _hf_family_config(data: Mapping[str, Any], source: str) -> AlbertConfig:
    """A DistilBERT, ELECTRA, RoBERTa or XLM-R ``config.json`` as the canonical config.

    DistilBERT has no token types and ELECTRA, RoBERTa and XLM-R keep one: the reader
    (``hf_families``) gives them a two-row table whose rows are equal, so any segment id 0 or 1
    computes what the checkpoint computes, hence ``type_vocab_size`` 2. RoBERTa numbers positions
    from ``pad_token_id + 1``; the reader drops the table's first ``pad_token_id + 1`` rows, so
    ``max_position_embeddings`` here is what is left: the longest input the model takes.
    """
    model_type = data.get("model_type")
    if model_type not in MODEL_TYPES:
        raise ConfigError(f"{source}: unsupported model_type {_short(model_type)}, expected one of "
                          f"{', '.join(MODEL_TYPES)}")
    if model_type == "mobilebert":
        return _mobilebert_config(data, source)
    if model_type == "distilbert":
        hidden = _need(data, "dim", source)
        return _build(source, vocab_size=_need(data, "vocab_size", source), embedding_size=hidden, hidden_size=hidden,
                      num_hidden_layers=_need(data, "n_layers", source), num_attention_heads=_need(data, "n_heads", source),
                      intermediate_size=_need(data, "hidden_dim", source), num_hidden_groups=_need(data, "n_layers", source),
                      hidden_act=_activation(data.get("activation", "gelu"), HF_ACTIVATIONS, "Hugging Face", source),
                      max_position_embeddings=data.get("max_position_embeddings", 512), type_vocab_size=2,
                      layer_norm_eps=1e-12, embedding_order="no_projection", model_type="distilbert", pooler_act="relu")
    position_type = data.get("position_embedding_type", "absolute")
    if position_type != "absolute":
        raise ConfigError(f"{source}: unsupported position_embedding_type {_short(position_type)}, expected absolute")
    hidden = _need(data, "hidden_size", source)
    layers = _need(data, "num_hidden_layers", source)
    embedding = data.get("embedding_size", hidden) if model_type == "electra" else hidden
    positions = data.get("max_position_embeddings", 512)
    types = data.get("type_vocab_size", 2)
    if model_type in ("roberta", "xlm-roberta"):
        pad = data.get("pad_token_id", ROBERTA_PADDING_IDX)
        if isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad or not isinstance(positions, int):
            raise ConfigError(f"{source}: pad_token_id {_short(pad)} cannot offset the position ids")
        positions -= pad + 1
    return _build(source, vocab_size=_need(data, "vocab_size", source), embedding_size=embedding, hidden_size=hidden,
                  num_hidden_layers=layers, num_attention_heads=_need(data, "num_attention_heads", source),
                  intermediate_size=_need(data, "intermediate_size", source), num_hidden_groups=layers,
                  hidden_act=_activation(data.get("hidden_act", "gelu"), HF_ACTIVATIONS, "Hugging Face", source),
                  max_position_embeddings=positions, type_vocab_size=2 if types == 1 else types,
                  layer_norm_eps=data.get("layer_norm_eps", 1e-12),
                  embedding_order="no_projection" if embedding == hidden else "add_then_project",
                  model_type=model_type, pooler_act="gelu_exact" if model_type == "electra" else "tanh")


#: MobileBERT config.json options albert-edge computes only at one value: (key, transformers' default,
#: the value mapped). Any other value is refused, never converted as something else.
_MOBILEBERT_FIXED = (("use_bottleneck", True, True), ("trigram_input", True, True),
                     ("normalization_type", "no_norm", "no_norm"), ("position_embedding_type", "absolute", "absolute"))


def _mobilebert_config(data: Mapping[str, Any], source: str) -> AlbertConfig:
    """A MobileBERT ``config.json`` (transformers' MobileBertConfig defaults for absent keys)."""
    for key, default, mapped in _MOBILEBERT_FIXED:
        if data.get(key, default) != mapped:
            raise ConfigError(f"{source}: MobileBERT {key}={_short(data.get(key))} is not supported "
                              f"(albert-edge converts {key}={mapped!r} only)")
    flags = {key: data.get(key, default) for key, default in
             (("key_query_shared_bottleneck", True), ("use_bottleneck_attention", False), ("classifier_activation", True))}
    for key, value in flags.items():
        if not isinstance(value, bool):
            raise ConfigError(f"{source}: MobileBERT {key} must be true or false, got {_short(value)}")
    ffns, bottleneck = data.get("num_feedforward_networks", 4), data.get("intra_bottleneck_size", 128)
    heads = data.get("num_attention_heads", 4)
    for key, value, limit in (("num_feedforward_networks", ffns, 64), ("intra_bottleneck_size", bottleneck, 16_384)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise ConfigError(f"{source}: MobileBERT {key} must be an integer in [1, {limit}], got {_short(value)}")
    if isinstance(heads, int) and heads > 0 and bottleneck % heads:
        raise ConfigError(f"{source}: intra_bottleneck_size {bottleneck} is not divisible by "
                          f"num_attention_heads {heads}")
    layout = MobileBertLayout(intra_bottleneck_size=bottleneck, num_feedforward_networks=ffns,
                              key_query_shared_bottleneck=flags["key_query_shared_bottleneck"],
                              use_bottleneck_attention=flags["use_bottleneck_attention"])
    layers = data.get("num_hidden_layers", 24)
    return _build(source, vocab_size=data.get("vocab_size", 30522), embedding_size=data.get("embedding_size", 128),
                  hidden_size=data.get("hidden_size", 512), num_hidden_layers=layers, num_attention_heads=heads,
                  intermediate_size=data.get("intermediate_size", 512), num_hidden_groups=layers,
                  hidden_act=_activation(data.get("hidden_act", "relu"), HF_ACTIVATIONS, "Hugging Face", source),
                  max_position_embeddings=data.get("max_position_embeddings", 512),
                  type_vocab_size=data.get("type_vocab_size", 2), layer_norm_eps=data.get("layer_norm_eps", 1e-12),
                  embedding_order="project_then_add", model_type="mobilebert",
                  pooler_act="tanh" if flags["classifier_activation"] else "identity", mobilebert=layout)


def _build(source: str, **fields: Any) -> AlbertConfig:
    """AlbertConfig(**fields), with validation errors naming ``source`` instead of the class."""
    defaults = {key: field.default for key, field in AlbertConfig.__dataclass_fields__.items()}
    _validate({**defaults, **fields}, source)
    return AlbertConfig(**fields)


def load_config(path: str | os.PathLike[str]) -> AlbertConfig:
    """Read a Google, brightmart or Hugging Face config JSON file into an AlbertConfig.

    For TF1 checkpoints the embedding order is only a first guess from the config; the TF1
    reader confirms or corrects it from the variable names and shapes.
    """
    path = Path(path)
    return parse_config_dict(_read_json(path), source=str(path))


def tf1_config_dict(config: AlbertConfig, scheme: str) -> dict[str, Any]:
    """The ``albert_config.json`` a TF1 training script of ``scheme`` (google | brightmart | bert) would read."""
    if config.model_type not in ("albert", "bert") or config.pooler_act != "tanh":
        raise ConfigError(f"a {config.model_type} model has no TF1 ALBERT/BERT form (its pooler activation is "
                          f"{config.pooler_act}, its names and inputs are its own)")
    act = {"gelu_tanh": "gelu", "relu": "relu", "tanh": "tanh"}.get(config.hidden_act)
    if act is None:
        raise ConfigError(f"hidden_act {config.hidden_act} has no name in TF1 ALBERT/BERT code (it knows gelu "
                          "(tanh form), relu, tanh)")
    base: dict[str, Any] = {
        "attention_probs_dropout_prob": 0.0,
        "hidden_act": act,
        "hidden_dropout_prob": 0.0,
        "hidden_size": config.hidden_size,
        "initializer_range": 0.02,
        "intermediate_size": config.intermediate_size,
        "max_position_embeddings": config.max_position_embeddings,
        "num_attention_heads": config.num_attention_heads,
        "num_hidden_layers": config.num_hidden_layers,
        "type_vocab_size": config.type_vocab_size,
        "vocab_size": config.vocab_size,
    }
    if scheme == "google":
        base.update(embedding_size=config.embedding_size, num_hidden_groups=config.num_hidden_groups,
                    inner_group_num=config.inner_group_num, down_scale_factor=1, net_structure_type=0,
                    gap_size=0, num_memory_blocks=0)
    elif scheme == "brightmart":
        base.update(embedding_size=config.embedding_size, directionality="bidi", ln_type=config.ln_type,
                    pooler_fc_size=config.hidden_size, pooler_num_attention_heads=config.num_attention_heads,
                    pooler_num_fc_layers=3, pooler_size_per_head=128, pooler_type="first_token_transform")
    elif scheme == "bert":
        base.update(directionality="bidi")
    else:
        raise ConfigError(f"unknown TF1 scheme {scheme!r}, expected google, brightmart or bert")
    return base


def hf_config_dict(config: AlbertConfig, num_labels: int | None, head: str = "SequenceClassification") -> dict[str, Any]:
    """The ``config.json`` transformers' AlbertConfig/BertConfig would write for this model
    (``head``: "SequenceClassification", "TokenClassification" or "QuestionAnswering" (2 outputs,
    start and end) when ``num_labels``)."""
    act = {"gelu_tanh": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "silu": "silu",
           "tanh": "tanh"}[config.hidden_act]
    data: dict[str, Any] = {
        "model_type": config.model_type,
        "vocab_size": config.vocab_size,
        "hidden_size": config.hidden_size,
        "num_hidden_layers": config.num_hidden_layers,
        "num_attention_heads": config.num_attention_heads,
        "intermediate_size": config.intermediate_size,
        "hidden_act": act,
        "hidden_dropout_prob": 0.0,
        "attention_probs_dropout_prob": 0.0,
        "max_position_embeddings": config.max_position_embeddings,
        "type_vocab_size": config.type_vocab_size,
        "layer_norm_eps": config.layer_norm_eps,
        "initializer_range": 0.02,
        "position_embedding_type": "absolute",
        "pad_token_id": 0,
    }
    if config.model_type == "albert":
        data.update(embedding_size=config.embedding_size, num_hidden_groups=config.num_hidden_groups,
                    inner_group_num=config.inner_group_num, classifier_dropout_prob=0.0,
                    architectures=[f"AlbertFor{head}" if num_labels else "AlbertModel"])
    else:
        data.update(architectures=[f"BertFor{head}" if num_labels else "BertModel"])
    if num_labels:
        data.update(num_labels=num_labels,
                    id2label={str(i): f"LABEL_{i}" for i in range(num_labels)},
                    label2id={f"LABEL_{i}": i for i in range(num_labels)})
    return data
