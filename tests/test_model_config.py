"""AlbertConfig from every config dialect; activation names mean what their training code computed."""

from __future__ import annotations

import json

import pytest

from albert_edge.errors import ConfigError
from albert_edge.model import AlbertConfig, albert_tiny_zh_config, albert_tiny_zh_google_config, load_config
from albert_edge.model.config import config_dialect, hf_config_dict, parse_config_dict, tf1_config_dict

# Mirrors brightmart/albert_zh albert_config/albert_config_tiny.json (later releases carry ln_type).
BRIGHTMART_TINY = {
    "attention_probs_dropout_prob": 0.0, "directionality": "bidi", "hidden_act": "gelu",
    "hidden_dropout_prob": 0.0, "hidden_size": 312, "embedding_size": 128, "initializer_range": 0.02,
    "intermediate_size": 1248, "max_position_embeddings": 512, "num_attention_heads": 12,
    "num_hidden_layers": 4, "pooler_fc_size": 768, "pooler_num_attention_heads": 12,
    "pooler_num_fc_layers": 3, "pooler_size_per_head": 128, "pooler_type": "first_token_transform",
    "type_vocab_size": 2, "vocab_size": 21128, "ln_type": "postln",
}
# Mirrors brightmart albert_config/albert_config_tiny_google_fast.json (Google dialect, G > L). As shipped
# it has hidden 320 with 12 heads, which Google's transformer_model itself rejects.
BRIGHTMART_TINY_GOOGLE = {
    "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "embedding_size": 128, "hidden_size": 320, "initializer_range": 0.02, "intermediate_size": 1280,
    "max_position_embeddings": 512, "num_attention_heads": 12, "num_hidden_layers": 4,
    "num_hidden_groups": 12, "net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0,
    "inner_group_num": 1, "down_scale_factor": 1, "type_vocab_size": 2, "vocab_size": 21128,
}
# Mirrors google-research/albert config/base/albert_config.json.
GOOGLE_BASE = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0, "embedding_size": 128,
    "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072, "max_position_embeddings": 512,
    "num_attention_heads": 12, "num_hidden_layers": 12, "num_hidden_groups": 1, "net_structure_type": 0,
    "gap_size": 0, "num_memory_blocks": 0, "inner_group_num": 1, "down_scale_factor": 1,
    "type_vocab_size": 2, "vocab_size": 30000,
}
# Mirrors the Hugging Face albert-base-v2 config.json (it also carries Google's keys).
HF_ALBERT_BASE_V2 = dict(GOOGLE_BASE, architectures=["AlbertForMaskedLM"], model_type="albert",
                         hidden_act="gelu_new", layer_norm_eps=1e-12, classifier_dropout_prob=0.1,
                         pad_token_id=0, bos_token_id=2, eos_token_id=3)
# Mirrors a Hugging Face MiniLM / BERT config.json.
HF_MINILM = {
    "architectures": ["BertModel"], "attention_probs_dropout_prob": 0.1, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "hidden_size": 384, "initializer_range": 0.02, "intermediate_size": 1536,
    "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12,
    "num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "absolute", "type_vocab_size": 2,
    "vocab_size": 30522,
}


def write_json(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def test_brightmart_tiny_config_is_project_then_add_postln_with_tanh_gelu(tmp_path):
    cfg = load_config(write_json(tmp_path, "albert_config_tiny.json", BRIGHTMART_TINY))
    assert cfg == albert_tiny_zh_config()


def test_brightmart_preln_config_sets_ln_type(tmp_path):
    cfg = load_config(write_json(tmp_path, "albert_config_tiny.json", dict(BRIGHTMART_TINY, ln_type="preln")))
    assert cfg.ln_type == "preln"
    assert cfg.embedding_order == "project_then_add"


def test_brightmart_config_without_ln_type_is_still_brightmart(tmp_path):
    old = {k: v for k, v in BRIGHTMART_TINY.items() if k != "ln_type"}
    assert config_dialect(old) == "brightmart"
    assert load_config(write_json(tmp_path, "albert_config_base.json", old)).embedding_order == "project_then_add"


def test_brightmart_google_fast_config_as_shipped_is_rejected_for_its_head_split(tmp_path):
    path = write_json(tmp_path, "albert_config_tiny_google_fast.json", BRIGHTMART_TINY_GOOGLE)
    with pytest.raises(ConfigError, match="hidden_size 320 is not divisible by num_attention_heads 12"):
        load_config(path)


def test_brightmart_google_form_config_is_google_dialect_with_groups(tmp_path):
    data = dict(BRIGHTMART_TINY_GOOGLE, hidden_size=312, intermediate_size=1248)
    cfg = load_config(write_json(tmp_path, "albert_config_tiny_g.json", data))
    assert (cfg.embedding_order, cfg.hidden_act, cfg.num_hidden_groups) == ("add_then_project", "gelu_tanh", 12)
    assert cfg.used_groups() == (0, 3, 6, 9)  # Google's int(layer / L * G) with G > L


def test_google_albert_config_gelu_is_tanh(tmp_path):
    cfg = load_config(write_json(tmp_path, "albert_config.json", GOOGLE_BASE))
    assert (cfg.hidden_act, cfg.embedding_order, cfg.model_type) == ("gelu_tanh", "add_then_project", "albert")


def test_hf_albert_gelu_new_is_tanh_and_gelu_is_exact(tmp_path):
    assert load_config(write_json(tmp_path, "a.json", HF_ALBERT_BASE_V2)).hidden_act == "gelu_tanh"
    exact = dict(HF_ALBERT_BASE_V2, hidden_act="gelu")
    assert load_config(write_json(tmp_path, "b.json", exact)).hidden_act == "gelu_exact"


def test_hf_bert_config_is_albert_with_one_group_per_layer_and_no_projection(tmp_path):
    cfg = load_config(write_json(tmp_path, "config.json", HF_MINILM))
    assert (cfg.model_type, cfg.embedding_order, cfg.hidden_act) == ("bert", "no_projection", "gelu_exact")
    assert (cfg.embedding_size, cfg.num_hidden_groups) == (384, 12)
    assert [cfg.group_of_layer(layer) for layer in range(12)] == list(range(12))


def test_unknown_activation_is_a_config_error_naming_the_file(tmp_path):
    path = write_json(tmp_path, "albert_config.json", dict(GOOGLE_BASE, hidden_act="gelu_new"))
    with pytest.raises(ConfigError, match=r"albert_config\.json: unknown hidden_act 'gelu_new'"):
        load_config(path)


def test_hidden_not_divisible_by_heads_is_a_config_error(tmp_path):
    path = write_json(tmp_path, "config.json", dict(HF_MINILM, hidden_size=380))
    with pytest.raises(ConfigError, match="hidden_size 380 is not divisible by num_attention_heads 12"):
        load_config(path)


def test_missing_key_is_a_config_error_naming_the_key(tmp_path):
    data = {k: v for k, v in GOOGLE_BASE.items() if k != "num_attention_heads"}
    with pytest.raises(ConfigError, match="has no 'num_attention_heads'"):
        load_config(write_json(tmp_path, "albert_config.json", data))


def test_unreadable_or_missing_config_is_one_line_config_error(tmp_path):
    bad = tmp_path / "albert_config.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid JSON") as err:
        load_config(bad)
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "absent.json")


def test_relative_position_embeddings_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="position_embedding_type 'relative_key'"):
        load_config(write_json(tmp_path, "config.json", dict(HF_MINILM, position_embedding_type="relative_key")))


def test_direct_construction_validates():
    with pytest.raises(ConfigError, match="needs an embedding projection"):
        AlbertConfig(vocab_size=10, embedding_size=8, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=4, embedding_order="no_projection")


def test_tiny_zh_variants_differ_only_in_embedding_order():
    tiny, google = albert_tiny_zh_config(), albert_tiny_zh_google_config()
    assert (tiny.vocab_size, tiny.embedding_size, tiny.hidden_size, tiny.num_hidden_layers) == (21128, 128, 312, 4)
    assert (tiny.num_attention_heads, tiny.intermediate_size, tiny.head_dim()) == (12, 1248, 26)
    assert google == tiny.with_changes(embedding_order="add_then_project")


@pytest.mark.parametrize("scheme", ["google", "brightmart"])
def test_tf1_config_dict_round_trips_through_its_dialect(scheme):
    cfg = albert_tiny_zh_config() if scheme == "brightmart" else albert_tiny_zh_google_config()
    data = tf1_config_dict(cfg, scheme)
    assert data["hidden_act"] == "gelu"
    assert parse_config_dict(data) == cfg


def test_hf_config_dict_round_trips():
    cfg = albert_tiny_zh_google_config().with_changes(hidden_act="gelu_exact")
    data = hf_config_dict(cfg, num_labels=2)
    assert data["hidden_act"] == "gelu"
    assert parse_config_dict(data) == cfg
