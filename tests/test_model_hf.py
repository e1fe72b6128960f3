"""Hugging Face checkpoints: files saved by transformers itself, name variants, writer, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from albert_edge.errors import CheckpointError, ConfigError
from albert_edge.model import (AlbertConfig, albert_tiny_zh_config, albert_tiny_zh_google_config, load_checkpoint,
                               random_weights, write_hf_checkpoint)
from albert_edge.model.weights import AlbertWeights

VOCAB = 300


def small_google(**changes) -> AlbertConfig:
    return albert_tiny_zh_google_config().with_changes(vocab_size=VOCAB, max_position_embeddings=64, **changes)


def small_bert() -> AlbertConfig:
    return AlbertConfig(vocab_size=VOCAB, embedding_size=64, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, num_hidden_groups=2, hidden_act="gelu_exact", max_position_embeddings=64,
                        embedding_order="no_projection", model_type="bert")


def assert_same_tensors(a: AlbertWeights, b: AlbertWeights) -> None:
    assert set(a.tensors) == set(b.tensors)
    for name in a.tensors:
        np.testing.assert_array_equal(a.tensors[name], b.tensors[name], err_msg=name)


@pytest.mark.parametrize("fmt", ["safetensors", "bin"])
@pytest.mark.parametrize("make_config", [small_google, small_bert])
def test_hf_checkpoint_round_trips_to_identical_tensors(tmp_path, fmt, make_config):
    if fmt == "bin":
        pytest.importorskip("torch")
    weights = random_weights(make_config(), num_labels=3, seed=1)
    loaded = load_checkpoint(write_hf_checkpoint(weights, tmp_path / "hf", fmt=fmt))
    assert loaded.scheme == ("hf-albert" if weights.config.model_type == "albert" else "hf-bert")
    assert (loaded.config, loaded.num_labels, loaded.ignored) == (weights.config, 3, ())
    assert_same_tensors(loaded, weights)


def test_albert_pretraining_checkpoint_saved_by_transformers_loads_with_heads_ignored(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.AlbertConfig(vocab_size=VOCAB, embedding_size=32, hidden_size=48, num_hidden_layers=3,
                                       num_hidden_groups=1, num_attention_heads=4, intermediate_size=96,
                                       max_position_embeddings=64, hidden_act="gelu_new")
    model = transformers.AlbertForPreTraining(config)
    model.save_pretrained(tmp_path / "hf")
    loaded = load_checkpoint(tmp_path / "hf")
    assert loaded.scheme == "hf-albert" and loaded.num_labels is None
    assert loaded.ignored and all(name.startswith(("predictions.", "sop_classifier.")) for name in loaded.ignored)
    state = model.state_dict()
    np.testing.assert_array_equal(loaded.tensors["encoder.group0.inner0.ffn.intermediate.kernel"],
                                  state["albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"].numpy().T)


def test_bare_bert_model_without_prefix_saved_by_transformers_loads(tmp_path):
    transformers = pytest.importorskip("transformers")
    config = transformers.BertConfig(vocab_size=VOCAB, hidden_size=48, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=96, max_position_embeddings=64)
    model = transformers.BertModel(config)
    model.save_pretrained(tmp_path / "hf")
    assert not any(key.startswith("bert.") for key in load_file(str(tmp_path / "hf" / "model.safetensors")))
    loaded = load_checkpoint(tmp_path / "hf")
    assert (loaded.scheme, loaded.config.num_hidden_groups, loaded.config.hidden_act) == ("hf-bert", 2, "gelu_exact")
    np.testing.assert_array_equal(loaded.tensors["pooler.kernel"], model.state_dict()["pooler.dense.weight"].numpy().T)


def test_old_layernorm_gamma_beta_names_and_position_ids_buffer_are_understood(tmp_path):
    weights = random_weights(small_google(), num_labels=2, seed=2)
    directory = write_hf_checkpoint(weights, tmp_path / "hf")
    state = load_file(str(directory / "model.safetensors"))
    old = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
           for k, v in state.items()}
    old["albert.embeddings.position_ids"] = np.arange(64, dtype=np.int64)[None, :]
    save_file(old, str(directory / "model.safetensors"))
    loaded = load_checkpoint(directory)
    assert loaded.ignored == ("albert.embeddings.position_ids",)
    assert_same_tensors(loaded, weights)


def test_unmapped_tensor_is_a_checkpoint_error_naming_it(tmp_path):
    directory = write_hf_checkpoint(random_weights(small_google(), seed=3), tmp_path / "hf")
    state = load_file(str(directory / "model.safetensors"))
    state["albert.adapter.down.weight"] = np.zeros((8, 312), np.float32)
    save_file(state, str(directory / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"unmapped hf-albert variable\(s\) adapter\.down\.weight \[8, 312\]"):
        load_checkpoint(directory)


def test_misshaped_tensor_names_the_torch_orientation_it_expected(tmp_path):
    directory = write_hf_checkpoint(random_weights(small_google(), seed=4), tmp_path / "hf")
    state = load_file(str(directory / "model.safetensors"))
    state["albert.pooler.weight"] = np.zeros((312, 300), np.float32)
    save_file(state, str(directory / "model.safetensors"))
    with pytest.raises(CheckpointError, match=r"pooler\.weight has shape \[312, 300\], expected \[312, 312\]"):
        load_checkpoint(directory)


def test_bert_weights_under_an_albert_config_are_refused(tmp_path):
    bert_dir = write_hf_checkpoint(random_weights(small_bert(), seed=5), tmp_path / "bert")
    albert_dir = write_hf_checkpoint(random_weights(small_google(), seed=5), tmp_path / "albert")
    (bert_dir / "config.json").write_bytes((albert_dir / "config.json").read_bytes())
    with pytest.raises(CheckpointError, match="parameters are hf-bert but the config says model_type albert"):
        load_checkpoint(bert_dir)


def test_truncated_safetensors_is_a_one_line_checkpoint_error_naming_the_file(tmp_path):
    directory = write_hf_checkpoint(random_weights(small_google(), seed=6), tmp_path / "hf")
    path = directory / "model.safetensors"
    path.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(CheckpointError, match=r"model\.safetensors: unreadable safetensors file") as err:
        load_checkpoint(directory)
    assert "\n" not in str(err.value)


def test_corrupt_pytorch_bin_is_a_checkpoint_error(tmp_path):
    pytest.importorskip("torch")
    directory = write_hf_checkpoint(random_weights(small_google(), seed=7), tmp_path / "hf", fmt="bin")
    (directory / "pytorch_model.bin").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(CheckpointError, match=r"pytorch_model\.bin: unreadable pytorch_model\.bin"):
        load_checkpoint(directory)


def test_pytorch_bin_without_torch_explains_what_is_missing(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    directory = write_hf_checkpoint(random_weights(small_google(), seed=8), tmp_path / "hf", fmt="bin")
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(CheckpointError, match="reading pytorch_model.bin needs torch"):
        load_checkpoint(directory)


def test_missing_config_json_is_a_config_error(tmp_path):
    directory = write_hf_checkpoint(random_weights(small_google(), seed=9), tmp_path / "hf")
    (directory / "config.json").unlink()
    with pytest.raises(ConfigError, match="config.json not found beside model.safetensors"):
        load_checkpoint(directory)


def test_writer_refuses_computations_hf_albert_cannot_express(tmp_path):
    with pytest.raises(ConfigError, match="adds position/type embeddings before the projection"):
        write_hf_checkpoint(random_weights(albert_tiny_zh_config().with_changes(vocab_size=VOCAB)), tmp_path / "a")
    with pytest.raises(ConfigError, match="post-LN only"):
        write_hf_checkpoint(random_weights(small_google(ln_type="preln")), tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_sharded_safetensors_with_an_index_loads_every_shard(tmp_path):
    weights = random_weights(small_google(), num_labels=2, seed=10)
    directory = write_hf_checkpoint(weights, tmp_path / "hf")
    state = load_file(str(directory / "model.safetensors"))
    (directory / "model.safetensors").unlink()
    names = sorted(state)
    shards = {"model-00001-of-00002.safetensors": names[: len(names) // 2],
              "model-00002-of-00002.safetensors": names[len(names) // 2:]}
    for shard, keys in shards.items():
        save_file({key: state[key] for key in keys}, str(directory / shard))
    weight_map = {key: shard for shard, keys in shards.items() for key in keys}
    (directory / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    assert_same_tensors(load_checkpoint(directory), weights)


def test_reading_safetensors_and_the_reference_need_neither_tensorflow_nor_torch(tmp_path):
    directory = write_hf_checkpoint(random_weights(small_google(), seed=11), tmp_path / "hf")
    script = (
        "import sys\n"
        "from albert_edge.model import load_checkpoint, reference_forward\n"
        f"weights = load_checkpoint({str(directory)!r})\n"
        "reference_forward(weights, [[2, 3, 4]])\n"
        "print(sorted(m for m in ('tensorflow', 'torch', 'transformers') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
