"""TF1 checkpoints: exact variable names per scheme, write -> read round trips, detection, errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from albert_edge.errors import CheckpointError, ConfigError
from albert_edge.model import (AlbertConfig, albert_tiny_zh_config, albert_tiny_zh_google_config, load_checkpoint,
                               random_weights, reference_forward, write_tf1_checkpoint)
from albert_edge.model.config import tf1_config_dict
from albert_edge.model.names import apply_transform, name_map
from albert_edge.model.tf1 import WRITE_SCHEMES

tf = pytest.importorskip("tensorflow")

# Every variable brightmart albert_zh's modeling.py creates for albert_tiny_zh, plus run_classifier's head.
BRIGHTMART_NAMES = {
    "bert/embeddings/word_embeddings": [21128, 128],
    "bert/embeddings/word_embeddings_2": [128, 312],
    "bert/embeddings/token_type_embeddings": [2, 312],
    "bert/embeddings/position_embeddings": [512, 312],
    "bert/embeddings/LayerNorm/gamma": [312],
    "bert/embeddings/LayerNorm/beta": [312],
    **{f"bert/encoder/layer_shared/attention/self/{p}/{v}": [312, 312] if v == "kernel" else [312]
       for p in ("query", "key", "value") for v in ("kernel", "bias")},
    "bert/encoder/layer_shared/attention/output/dense/kernel": [312, 312],
    "bert/encoder/layer_shared/attention/output/dense/bias": [312],
    "bert/encoder/layer_shared/attention/output/LayerNorm/gamma": [312],
    "bert/encoder/layer_shared/attention/output/LayerNorm/beta": [312],
    "bert/encoder/layer_shared/intermediate/dense/kernel": [312, 1248],
    "bert/encoder/layer_shared/intermediate/dense/bias": [1248],
    "bert/encoder/layer_shared/output/dense/kernel": [1248, 312],
    "bert/encoder/layer_shared/output/dense/bias": [312],
    "bert/encoder/layer_shared/output/LayerNorm/gamma": [312],
    "bert/encoder/layer_shared/output/LayerNorm/beta": [312],
    "bert/pooler/dense/kernel": [312, 312],
    "bert/pooler/dense/bias": [312],
    "output_weights": [2, 312],
    "output_bias": [2],
}

# google-research/albert modeling.py names of one block (group 1, inner group 1), relative to its scope.
GOOGLE_BLOCK = [
    "attention_1/self/query/kernel", "attention_1/self/query/bias", "attention_1/self/key/kernel",
    "attention_1/self/key/bias", "attention_1/self/value/kernel", "attention_1/self/value/bias",
    "attention_1/output/dense/kernel", "attention_1/output/dense/bias", "LayerNorm/gamma", "LayerNorm/beta",
    "ffn_1/intermediate/dense/kernel", "ffn_1/intermediate/dense/bias",
    "ffn_1/intermediate/output/dense/kernel", "ffn_1/intermediate/output/dense/bias",
    "LayerNorm_1/gamma", "LayerNorm_1/beta",
]


def small_brightmart(**changes) -> AlbertConfig:
    return albert_tiny_zh_config().with_changes(vocab_size=300, max_position_embeddings=64, **changes)


def small_google(**changes) -> AlbertConfig:
    return albert_tiny_zh_google_config().with_changes(vocab_size=300, max_position_embeddings=64, **changes)


def stored_variables(weights, scheme: str) -> dict[str, np.ndarray]:
    """What a training run with ``scheme``'s code would have saved for these weights."""
    mapping = name_map(list(weights.tensors), WRITE_SCHEMES[scheme])
    return {mapping[c][0]: apply_transform(a, mapping[c][1]) for c, a in weights.tensors.items()}


def save_raw(prefix, variables: dict[str, np.ndarray], config: dict) -> None:
    """A TF1 checkpoint with exactly these variables, written by TF itself, and its config."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    names = list(variables)
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(variables[n]) for n in names])
    (prefix.parent / "albert_config.json").write_text(json.dumps(config), encoding="utf-8")


def assert_same_tensors(a, b):
    assert set(a.tensors) == set(b.tensors)
    for name in a.tensors:
        np.testing.assert_array_equal(a.tensors[name], b.tensors[name], err_msg=name)


def test_brightmart_writer_uses_albert_zh_variable_names_and_shapes(tmp_path):
    weights = random_weights(albert_tiny_zh_config(), num_labels=2)
    prefix = write_tf1_checkpoint(weights, tmp_path / "albert_tiny_zh" / "albert_model.ckpt", scheme="brightmart")
    assert dict(tf.train.list_variables(str(prefix))) == BRIGHTMART_NAMES
    state = (tmp_path / "albert_tiny_zh" / "checkpoint").read_text()
    assert 'model_checkpoint_path: "albert_model.ckpt"' in state
    assert json.loads((tmp_path / "albert_tiny_zh" / "albert_config.json").read_text())["ln_type"] == "postln"


def test_brightmart_checkpoint_round_trips_to_identical_tensors(tmp_path):
    weights = random_weights(small_brightmart(), num_labels=3, seed=1)
    write_tf1_checkpoint(weights, tmp_path / "ckpt" / "albert_model.ckpt", scheme="brightmart")
    loaded = load_checkpoint(tmp_path / "ckpt")
    assert (loaded.scheme, loaded.num_labels, loaded.config) == ("brightmart-tf1", 3, weights.config)
    assert_same_tensors(loaded, weights)


def test_brightmart_checkpoint_loads_shared_layer_once(tmp_path):
    weights = random_weights(albert_tiny_zh_config(), num_labels=2)
    prefix = write_tf1_checkpoint(weights, tmp_path / "albert_model.ckpt", scheme="brightmart")
    loaded = load_checkpoint(prefix)
    encoder = [name for name in loaded.tensors if name.startswith("encoder.")]
    assert len(encoder) == 16 and all(name.startswith("encoder.group0.inner0.") for name in encoder)
    assert [loaded.config.group_of_layer(layer) for layer in range(4)] == [0, 0, 0, 0]
    stored = sum(int(np.prod(shape)) for _, shape in tf.train.list_variables(str(prefix)))
    assert loaded.num_parameters() == stored
    assert 3.9e6 < loaded.num_parameters() < 4.3e6  # brightmart: "albert_tiny_zh, 4M parameters"


def test_google_checkpoint_round_trips_with_groups_and_inner_groups(tmp_path):
    weights = random_weights(small_google(num_hidden_groups=2, inner_group_num=2), num_labels=2, seed=2)
    prefix = write_tf1_checkpoint(weights, tmp_path / "model.ckpt-100", scheme="google")
    names = {name for name, _ in tf.train.list_variables(str(prefix))}
    assert {f"bert/encoder/transformer/group_1/inner_group_1/{n}" for n in GOOGLE_BLOCK} <= names
    assert {"bert/encoder/embedding_hidden_mapping_in/kernel", "bert/encoder/embedding_hidden_mapping_in/bias"} <= names
    loaded = load_checkpoint(f"{prefix}.index")
    assert (loaded.scheme, loaded.config) == ("google-tf1", weights.config)
    assert_same_tensors(loaded, weights)


def test_bert_tf1_checkpoint_round_trips_one_block_per_layer(tmp_path):
    cfg = AlbertConfig(vocab_size=300, embedding_size=64, hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                       intermediate_size=128, num_hidden_groups=3, max_position_embeddings=64,
                       embedding_order="no_projection", model_type="bert")
    weights = random_weights(cfg, num_labels=2, seed=3)
    prefix = write_tf1_checkpoint(weights, tmp_path / "bert_model.ckpt", scheme="bert")
    assert "bert/encoder/layer_2/output/LayerNorm/gamma" in dict(tf.train.list_variables(str(prefix)))
    loaded = load_checkpoint(prefix)
    assert (loaded.scheme, loaded.config) == ("bert-tf1", cfg)
    assert_same_tensors(loaded, weights)


def test_google_checkpoint_without_embedding_mapping_is_read_as_no_projection(tmp_path):
    cfg = AlbertConfig(vocab_size=300, embedding_size=64, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                       intermediate_size=128, max_position_embeddings=64, embedding_order="no_projection")
    weights = random_weights(cfg, seed=12)
    prefix = write_tf1_checkpoint(weights, tmp_path / "model.ckpt", scheme="google")
    assert not any("embedding_hidden_mapping_in" in name for name, _ in tf.train.list_variables(str(prefix)))
    loaded = load_checkpoint(prefix)  # Google's transformer_model skips the mapping when E == H
    assert (loaded.config.embedding_order, loaded.config.model_type) == ("no_projection", "albert")
    assert_same_tensors(loaded, weights)


def test_embedding_order_comes_from_the_names_not_the_config(tmp_path):
    google = random_weights(small_google(), seed=4)
    prefix = write_tf1_checkpoint(google, tmp_path / "g" / "model.ckpt", scheme="google")
    # A brightmart-dialect config (ln_type key) beside Google-named variables.
    (tmp_path / "g" / "albert_config.json").write_text(json.dumps(tf1_config_dict(small_brightmart(), "brightmart")))
    loaded = load_checkpoint(prefix)
    assert loaded.config.embedding_order == "add_then_project"
    np.testing.assert_allclose(reference_forward(loaded, [[1, 2, 3]]).logits,
                               reference_forward(google, [[1, 2, 3]]).logits)


def test_preln_comes_from_the_config_ln_type(tmp_path):
    weights = random_weights(small_brightmart(ln_type="preln"), seed=5)
    prefix = write_tf1_checkpoint(weights, tmp_path / "albert_model.ckpt", scheme="brightmart")
    assert json.loads((tmp_path / "albert_config.json").read_text())["ln_type"] == "preln"
    assert load_checkpoint(prefix).config.ln_type == "preln"


def test_optimizer_slots_and_pretraining_heads_are_ignored_and_listed(tmp_path):
    weights = random_weights(small_brightmart(), num_labels=None, seed=6)
    variables = stored_variables(weights, "brightmart")
    extras = {
        "bert/embeddings/word_embeddings/adam_m": variables["bert/embeddings/word_embeddings"],
        "bert/embeddings/word_embeddings/adam_v": variables["bert/embeddings/word_embeddings"],
        "global_step": np.array(1000, dtype=np.int64),
        "cls/predictions/transform/dense/kernel": np.zeros((312, 312), np.float32),
        "cls/predictions/output_bias": np.zeros(300, np.float32),
        "cls/seq_relationship/output_weights": np.zeros((2, 312), np.float32),
    }
    save_raw(tmp_path / "albert_model.ckpt", {**variables, **extras}, tf1_config_dict(weights.config, "brightmart"))
    loaded = load_checkpoint(tmp_path / "albert_model.ckpt")
    assert set(loaded.ignored) == set(extras)
    assert loaded.num_labels is None
    assert_same_tensors(loaded, weights)


def test_unmapped_variable_is_a_checkpoint_error_naming_it(tmp_path):
    weights = random_weights(small_brightmart(), seed=7)
    variables = stored_variables(weights, "brightmart")
    variables["bert/encoder/extra_adapter/kernel"] = np.zeros((4, 4), np.float32)
    save_raw(tmp_path / "m.ckpt", variables, tf1_config_dict(weights.config, "brightmart"))
    expected = r"unmapped brightmart-tf1 variable\(s\) bert/encoder/extra_adapter/kernel \[4, 4\]"
    with pytest.raises(CheckpointError, match=expected):
        load_checkpoint(tmp_path / "m.ckpt")


def test_missing_variable_error_names_it_and_the_expected_shape(tmp_path):
    weights = random_weights(small_brightmart(), seed=8)
    variables = stored_variables(weights, "brightmart")
    del variables["bert/encoder/layer_shared/intermediate/dense/kernel"]
    save_raw(tmp_path / "m.ckpt", variables, tf1_config_dict(weights.config, "brightmart"))
    expected = r"missing variable bert/encoder/layer_shared/intermediate/dense/kernel \(expected shape \[312, 1248\]"
    with pytest.raises(CheckpointError, match=expected):
        load_checkpoint(tmp_path / "m.ckpt")


def test_misshaped_variable_error_names_the_expected_shape(tmp_path):
    weights = random_weights(small_brightmart(), seed=9)
    variables = stored_variables(weights, "brightmart")
    config = tf1_config_dict(weights.config.with_changes(intermediate_size=1024), "brightmart")
    save_raw(tmp_path / "m.ckpt", variables, config)
    expected = r"intermediate/dense/kernel has shape \[312, 1248\], expected \[312, 1024\]"
    with pytest.raises(CheckpointError, match=expected):
        load_checkpoint(tmp_path / "m.ckpt")


def test_truncated_data_file_is_a_one_line_checkpoint_error_naming_the_file(tmp_path):
    weights = random_weights(small_brightmart(), seed=10)
    prefix = write_tf1_checkpoint(weights, tmp_path / "albert_model.ckpt", scheme="brightmart")
    data = tmp_path / "albert_model.ckpt.data-00000-of-00001"
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(prefix)
    assert str(prefix) in str(err.value) and "\n" not in str(err.value)


def test_garbage_index_is_a_checkpoint_error(tmp_path):
    (tmp_path / "model.ckpt.index").write_bytes(b"not an sstable" * 10)
    (tmp_path / "albert_config.json").write_text(json.dumps(tf1_config_dict(small_google(), "google")))
    with pytest.raises(CheckpointError, match=r"model\.ckpt: unreadable TF1 checkpoint"):
        load_checkpoint(tmp_path / "model.ckpt")


def test_missing_config_is_a_config_error_naming_the_directory(tmp_path):
    prefix = write_tf1_checkpoint(random_weights(small_brightmart()), tmp_path / "albert_model.ckpt")
    (tmp_path / "albert_config.json").unlink()
    with pytest.raises(ConfigError, match=f"{tmp_path}: no albert_config.json or bert_config.json"):
        load_checkpoint(prefix)


def test_state_file_with_a_training_machine_path_resolves_beside_it(tmp_path):
    weights = random_weights(small_google(), seed=11)
    write_tf1_checkpoint(weights, tmp_path / "model.ckpt-best", scheme="google")
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "/bigstore/albert/base/model.ckpt-best"\n')
    assert_same_tensors(load_checkpoint(tmp_path), weights)


def test_unknown_format_is_a_checkpoint_error(tmp_path):
    (tmp_path / "weights.h5").write_bytes(b"\x89HDF")
    with pytest.raises(CheckpointError, match="unknown checkpoint format"):
        load_checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="checkpoint not found"):
        load_checkpoint(tmp_path / "absent")


def test_writer_refuses_a_naming_whose_code_computes_another_embedding_order(tmp_path):
    with pytest.raises(ConfigError, match="brightmart albert_zh projects word embeddings first"):
        write_tf1_checkpoint(random_weights(small_google()), tmp_path / "m.ckpt", scheme="brightmart")
    with pytest.raises(ConfigError, match="Google ALBERT adds position/type embeddings before the projection"):
        write_tf1_checkpoint(random_weights(small_brightmart()), tmp_path / "m.ckpt", scheme="google")
    assert not list(tmp_path.iterdir())
