"""Hostile checkpoints (issue #14, causes 2-7): each is one line on stderr and exit 2, never a traceback.

Every test here failed before its fix: nested configs were a RecursionError, a shard index could
name itself or a non-string, a billion layers hung ``inspect``, a TF1+HF folder was silently read
as HF, integer weights were cast to a constant model, and a 10-token vocab converted.
About 15 s (one TensorFlow import for the TF1 fixtures).
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from albert_edge.cli import main
from albert_edge.convert.assets import TokenizerAsset, check_vocab_fits
from albert_edge.errors import CheckpointError, TokenizerError
from albert_edge.model import AlbertConfig, load_checkpoint, random_weights, write_hf_checkpoint
from albert_edge.model.tf1 import write_tf1_checkpoint

SMALL = AlbertConfig(vocab_size=120, embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=48, max_position_embeddings=64, embedding_order="project_then_add")
HF_SMALL = SMALL.with_changes(embedding_order="add_then_project")
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"tok{i}" for i in range(115)]
DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture(scope="module")
def tf1_dir(tmp_path_factory) -> Path:
    pytest.importorskip("tensorflow")
    directory = tmp_path_factory.mktemp("tf1")
    write_tf1_checkpoint(random_weights(SMALL, num_labels=2, seed=1), directory / "model.ckpt", scheme="brightmart")
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def hf_dir(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("hf")
    write_hf_checkpoint(random_weights(HF_SMALL, num_labels=2, seed=2), directory)
    (directory / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return directory


def cli(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, err


def assert_refused(code: int, err: str, *fragments: str) -> None:
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


# --- cause 2: nested JSON ---------------------------------------------------------------------

def test_deeply_nested_albert_config_is_one_line(tf1_dir, tmp_path, capsys):
    directory = Path(shutil.copytree(tf1_dir, tmp_path / "c"))
    (directory / "albert_config.json").write_text(DEEP)
    assert_refused(*cli(capsys, "inspect", str(directory / "model.ckpt")), "albert_config.json", "nested")


def test_deeply_nested_hf_config_is_one_line(hf_dir, tmp_path, capsys):
    directory = Path(shutil.copytree(hf_dir, tmp_path / "c"))
    (directory / "config.json").write_text('{"a": ' + DEEP + "}")
    assert_refused(*cli(capsys, "inspect", str(directory)), "config.json", "nested")


def test_deeply_nested_tokenizer_config_is_refused_by_convert(hf_dir, tmp_path, capsys):
    directory = Path(shutil.copytree(hf_dir, tmp_path / "c"))
    (directory / "tokenizer_config.json").write_text(DEEP)
    code, err = cli(capsys, "convert", str(directory), "--out", str(tmp_path / "out"))
    assert_refused(code, err, "tokenizer_config.json", "nested")
    assert not list((tmp_path / "out").glob("*.tflite"))


# --- cause 3: the shard index ---------------------------------------------------------------------

def sharded(hf_dir: Path, target: Path) -> tuple[Path, dict[str, str]]:
    """A copy of ``hf_dir`` split into two safetensors shards with an index."""
    target.mkdir()
    shutil.copy(hf_dir / "config.json", target / "config.json")
    state = load_file(str(hf_dir / "model.safetensors"))
    names = sorted(state)
    weight_map = {}
    for number, part in enumerate((names[: len(names) // 2], names[len(names) // 2:]), start=1):
        shard = f"model-0000{number}-of-00002.safetensors"
        save_file({name: state[name] for name in part}, str(target / shard))
        weight_map.update(dict.fromkeys(part, shard))
    return target / "model.safetensors.index.json", weight_map


def write_index(index: Path, weight_map: object) -> None:
    index.write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))


def test_a_valid_shard_index_loads(hf_dir, tmp_path):
    index, weight_map = sharded(hf_dir, tmp_path / "s")
    write_index(index, weight_map)
    assert load_checkpoint(index.parent).num_parameters() == load_checkpoint(hf_dir).num_parameters()


@pytest.mark.parametrize(("edit", "message"), [
    (lambda m: {**m, next(iter(m)): "model.safetensors.index.json"}, "names an index file"),
    (lambda m: {**m, next(iter(m)): 7}, "names shard 7, expected a file name"),
    (lambda m: {**m, next(iter(m)): "../model-00001-of-00002.safetensors"}, "not a plain file name"),
    (lambda m: {**m, next(iter(m)): "/etc/passwd"}, "not a plain file name"),
    (lambda m: {**m, next(iter(m)): "missing.safetensors"}, "shard missing.safetensors is missing"),
    (lambda m: {**m, next(iter(m)): "config.json"}, "is not a .safetensors file"),
    (lambda m: ["a", "b"], "no weight_map object"),
    (lambda m: {}, "no weight_map object"),
    (lambda m: dict(list(m.items())[1:]), "holds tensor"),
    (lambda m: {**m, "extra.weight": "model-00001-of-00002.safetensors"}, "tensor extra.weight is not in its shard"),
])
def test_a_hostile_shard_index_is_one_line(hf_dir, tmp_path, capsys, edit, message):
    index, weight_map = sharded(hf_dir, tmp_path / "s")
    write_index(index, edit(weight_map))
    assert_refused(*cli(capsys, "inspect", str(index.parent)), "model.safetensors", message)


# --- cause 4: bounds on config numbers ---------------------------------------------------------------

@pytest.mark.parametrize(("field", "value"), [
    ("num_hidden_layers", 1_000_000_000), ("hidden_size", 1 << 40), ("vocab_size", 10**12),
    ("intermediate_size", 1 << 30), ("max_position_embeddings", 1 << 31), ("num_attention_heads", 1 << 20),
    ("type_vocab_size", 1 << 20), ("embedding_size", 1 << 30),
])
def test_absurd_config_sizes_are_refused_at_once(hf_dir, tmp_path, capsys, field, value):
    directory = Path(shutil.copytree(hf_dir, tmp_path / "c"))
    config = json.loads((directory / "config.json").read_text())
    config[field] = value
    (directory / "config.json").write_text(json.dumps(config))
    started = time.perf_counter()
    code, err = cli(capsys, "inspect", str(directory))
    assert time.perf_counter() - started < 5
    assert_refused(code, err, "config.json", field, "larger than any real model")


def test_the_limits_admit_the_largest_real_configs():
    xxlarge = AlbertConfig(vocab_size=30000, embedding_size=128, hidden_size=4096, num_hidden_layers=12,
                           num_attention_heads=64, intermediate_size=16384, max_position_embeddings=512)
    xlmr = AlbertConfig(vocab_size=250002, embedding_size=1024, hidden_size=1024, num_hidden_layers=24,
                        num_attention_heads=16, intermediate_size=4096, num_hidden_groups=24,
                        max_position_embeddings=514, embedding_order="no_projection", model_type="bert")
    assert xxlarge.num_hidden_layers == 12 and xlmr.vocab_size == 250002


# --- cause 5: TF1 and HF in one folder ---------------------------------------------------------------

def test_a_folder_with_tf1_and_hf_checkpoints_is_ambiguous(tf1_dir, hf_dir, tmp_path, capsys):
    directory = Path(shutil.copytree(tf1_dir, tmp_path / "mixed"))
    shutil.copy(hf_dir / "model.safetensors", directory)
    shutil.copy(hf_dir / "config.json", directory)
    (directory / "checkpoint").unlink()
    assert_refused(*cli(capsys, "inspect", str(directory)), "model.ckpt.index", "model.safetensors")
    # Naming one of them is not ambiguous.
    assert load_checkpoint(directory / "model.ckpt").scheme == "brightmart-tf1"
    assert load_checkpoint(directory / "model.safetensors").scheme == "hf-albert"


def test_a_folder_with_a_tf1_state_file_and_hf_is_ambiguous(tf1_dir, hf_dir, tmp_path, capsys):
    directory = Path(shutil.copytree(tf1_dir, tmp_path / "mixed"))
    shutil.copy(hf_dir / "model.safetensors", directory)
    shutil.copy(hf_dir / "config.json", directory)
    assert_refused(*cli(capsys, "inspect", str(directory)), "TF1", "Hugging Face")


# --- cause 6: weight dtypes -------------------------------------------------------------------------

def retyped_tf1(tf1_dir: Path, target: Path, variable: str, dtype: str) -> Path:
    """A copy of the TF1 checkpoint with ``variable`` stored as ``dtype`` (values random)."""
    import tensorflow as tf

    shutil.copytree(tf1_dir, target)
    source = str(tf1_dir / "model.ckpt")
    reader = tf.train.load_checkpoint(source)
    names = sorted(reader.get_variable_to_shape_map())
    tensors = []
    for name in names:
        value = reader.get_tensor(name)
        if name == variable:
            value = np.random.default_rng(0).integers(-5, 5, size=value.shape).astype(dtype) \
                if dtype not in ("float64", "float16", "bfloat16") else value.astype(dtype)
        tensors.append(tf.constant(value))
    prefix = target / "model.ckpt"
    for stale in target.glob("model.ckpt.*"):
        stale.unlink()
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names, shape_and_slices=[""] * len(names), tensors=tensors)
    return prefix


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "complex64"])
def test_non_float_tf1_weights_are_refused_by_name(tf1_dir, tmp_path, capsys, dtype):
    prefix = retyped_tf1(tf1_dir, tmp_path / "c", "bert/embeddings/word_embeddings", dtype)
    code, err = cli(capsys, "convert", str(prefix), "--out", str(tmp_path / "out"))
    assert_refused(code, err, "bert/embeddings/word_embeddings", dtype)
    assert not (tmp_path / "out" / "model_fp32.tflite").exists()


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_float_tf1_weights_of_any_width_are_converted_to_float32(tf1_dir, tmp_path, dtype):
    if dtype == "bfloat16":
        import ml_dtypes  # noqa: F401  (TensorFlow's bfloat16 numpy type)
        dtype = np.dtype("bfloat16").name
    prefix = retyped_tf1(tf1_dir, tmp_path / "c", "bert/embeddings/word_embeddings", dtype)
    weights = load_checkpoint(prefix)
    assert weights.tensors["embeddings.word"].dtype == np.float32


def test_integer_torch_weights_are_refused_and_bfloat16_accepted(hf_dir, tmp_path):
    torch = pytest.importorskip("torch")
    state = {name: torch.from_numpy(array.copy()) for name, array in load_file(str(hf_dir / "model.safetensors")).items()}
    name = "albert.embeddings.word_embeddings.weight"
    directory = tmp_path / "bin"
    directory.mkdir()
    shutil.copy(hf_dir / "config.json", directory)
    torch.save({**state, name: state[name].to(torch.bfloat16),
                "albert.embeddings.position_ids": torch.arange(64)}, str(directory / "pytorch_model.bin"))
    assert load_checkpoint(directory).tensors["embeddings.word"].dtype == np.float32
    torch.save({**state, name: (state[name] * 100).to(torch.int64)}, str(directory / "pytorch_model.bin"))
    with pytest.raises(CheckpointError, match=f"variable {name} is stored as int64"):
        load_checkpoint(directory)


def test_integer_safetensors_weights_are_refused(hf_dir, tmp_path):
    directory = Path(shutil.copytree(hf_dir, tmp_path / "c"))
    state = load_file(str(directory / "model.safetensors"))
    name = "albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"
    state[name] = (state[name] * 100).astype(np.int64)
    save_file(state, str(directory / "model.safetensors"))
    with pytest.raises(CheckpointError, match=f"variable {name} is stored as int64"):
        load_checkpoint(directory)


# --- cause 7: a vocab that is not the model's ----------------------------------------------------------

def test_a_10_token_vocab_for_a_120_row_table_is_refused(tf1_dir, tmp_path, capsys):
    directory = Path(shutil.copytree(tf1_dir, tmp_path / "c"))
    (directory / "vocab.txt").write_text("\n".join(VOCAB[:10]) + "\n", encoding="utf-8")
    code, err = cli(capsys, "convert", str(directory / "model.ckpt"), "--out", str(tmp_path / "out"))
    assert_refused(code, err, "vocab.txt", "10 tokens", "120 rows", "not this model's vocab")
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def _asset(size: int) -> TokenizerAsset:
    return TokenizerAsset(kind="wordpiece", data=b"", path=Path("vocab.txt"), do_lower_case=True, vocab_size=size)


@pytest.mark.parametrize(("tokens", "rows"), [(30522, 30592), (21128, 21128), (50265, 50272), (30000, 30016),
                                             (115, 120)])
def test_padded_embedding_tables_are_accepted(tokens, rows):
    check_vocab_fits(_asset(tokens), rows, "ckpt")


@pytest.mark.parametrize(("tokens", "rows", "message"), [
    (10, 21128, "10 tokens .* 21128 rows \\(fewer tokens"), (21129, 21128, "21129 tokens .*more tokens"),
    (30000, 30100, "fewer tokens"), (10, 120, "fewer tokens"),
])
def test_vocabs_that_do_not_fit_the_table_are_refused(tokens, rows, message):
    with pytest.raises(TokenizerError, match=message):
        check_vocab_fits(_asset(tokens), rows, "ckpt")


# --- fresh battery: non-finite weights ----------------------------------------------------------------

@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_weights_are_refused_by_name(hf_dir, tmp_path, capsys, value):
    """NaN/inf weights made parity "pass" (max |dlogit| 0: NaN fails no comparison) and convert exit 0."""
    directory = Path(shutil.copytree(hf_dir, tmp_path / "c"))
    state = load_file(str(directory / "model.safetensors"))
    name = "albert.encoder.albert_layer_groups.0.albert_layers.0.ffn.weight"
    state[name][0, 0] = value
    save_file(state, str(directory / "model.safetensors"))
    code, err = cli(capsys, "convert", str(directory), "--out", str(tmp_path / "out"), "--formats", "onnx")
    assert_refused(code, err, name, "NaN or infinite")
    assert not (tmp_path / "out" / "model_fp32.onnx").exists()


def test_float64_weights_beyond_float32_range_are_refused(tf1_dir, tmp_path):
    prefix = retyped_tf1(tf1_dir, tmp_path / "c", "bert/embeddings/word_embeddings", "float64")
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(prefix))
    names = sorted(reader.get_variable_to_shape_map())
    tensors = [reader.get_tensor(n) * (1e300 if n == "bert/embeddings/word_embeddings" else 1) for n in names]
    for stale in prefix.parent.glob("model.ckpt.*"):
        stale.unlink()
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names, shape_and_slices=[""] * len(names),
                      tensors=[tf.constant(t) for t in tensors])
    with pytest.raises(CheckpointError, match="word_embeddings holds .* once converted to float32"):
        load_checkpoint(prefix)


def test_parity_fails_when_outputs_are_nan(hf_dir, tmp_path):
    """Parity took max(0.0, nan) == 0.0: NaN logits in both the file and the reference "passed"."""
    from albert_edge.convert import ConvertOptions, ModelSource, convert_checkpoint
    from albert_edge.errors import ConversionError

    weights = random_weights(HF_SMALL, num_labels=2, seed=2)
    weights.tensors["pooler.bias"][0] = np.nan  # in memory: the loader would refuse it
    with pytest.raises(ConversionError, match="parity check failed: max \\|dlogits?\\| nan"):
        convert_checkpoint(ModelSource(hf_dir, weights), tmp_path / "out",
                           ConvertOptions(formats="onnx", max_seq_len=16))
    assert not (tmp_path / "out" / "model_fp32.onnx").exists()


def test_bfloat16_safetensors_are_read_and_widened(hf_dir, tmp_path):
    """safetensors.numpy cannot represent bfloat16 (it was refused as 'data type not understood')."""
    torch = pytest.importorskip("torch")
    from safetensors.torch import save_file as save_torch

    directory = Path(shutil.copytree(hf_dir, tmp_path / "c"))
    state = {name: torch.from_numpy(array.copy()) for name, array in load_file(str(hf_dir / "model.safetensors")).items()}
    name = "albert.embeddings.word_embeddings.weight"
    save_torch({**state, name: state[name].to(torch.bfloat16)}, str(directory / "model.safetensors"))
    word = load_checkpoint(directory).tensors["embeddings.word"]
    assert word.dtype == np.float32
    np.testing.assert_array_equal(word, state[name].to(torch.bfloat16).float().numpy())
    save_torch({**state, name: (state[name] * 100).to(torch.int64).to(torch.bfloat16).to(torch.int16)},
               str(directory / "model.safetensors"))
    with pytest.raises(CheckpointError, match="stored as int16"):
        load_checkpoint(directory)


# --- fresh battery: id2label, pickles ------------------------------------------------------------------

@pytest.mark.parametrize("id2label", [[1, 2], {"0": "a\nb", "1": "c"}, {"0": "a", "2": "b"}, {"0": "a", "1": "a"},
                                      {"0": "", "1": "b"}, {"0": {"x": 1}, "1": "b"}, {"x": "a", "1": "b"}])
def test_an_unusable_id2label_is_refused_naming_the_config(hf_dir, tmp_path, capsys, id2label):
    directory = Path(shutil.copytree(hf_dir, tmp_path / "c"))
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "id2label": id2label}))
    code, err = cli(capsys, "convert", str(directory), "--out", str(tmp_path / "out"), "--formats", "onnx")
    if isinstance(id2label, list):
        assert code == 0, err  # not a mapping at all: no names, LABEL_i as before
    else:
        assert_refused(code, err, "config.json", "id2label", "--labels")


def test_id2label_names_become_the_pack_labels(hf_dir, tmp_path, capsys):
    directory = Path(shutil.copytree(hf_dir, tmp_path / "c"))
    config = json.loads((directory / "config.json").read_text())
    (directory / "config.json").write_text(json.dumps({**config, "id2label": {"1": "好", "0": "差"}}))
    from albert_edge.convert.source import hf_labels

    assert hf_labels(directory) == ["差", "好"]


def test_a_malicious_pickle_is_one_line_without_torch_warnings(hf_dir, tmp_path, capsys):
    pytest.importorskip("torch")
    import os
    import pickle

    class Exploit:
        def __reduce__(self):
            return (os.system, (f"touch {tmp_path / 'pwned'}",))

    directory = tmp_path / "bin"
    directory.mkdir()
    shutil.copy(hf_dir / "config.json", directory)
    (directory / "pytorch_model.bin").write_bytes(pickle.dumps(Exploit()))
    import warnings

    with warnings.catch_warnings(record=True) as caught:  # outside pytest a warning is a second stderr line
        warnings.simplefilter("always")
        assert_refused(*cli(capsys, "inspect", str(directory)), "pytorch_model.bin")
    assert not caught, [str(w.message)[:80] for w in caught]
    assert not (tmp_path / "pwned").exists()
