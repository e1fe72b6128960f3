"""A sentence-transformers folder means what sentence-transformers itself makes of it (issue #27, causes 11, 15).

The judge is the ``sentence-transformers`` package (pinned in the test extra): its ``Pooling.load`` decides
which pooling a config names (``pooling_mode`` wins over the legacy booleans; no boolean means mean), and a
folder it saves itself (v6 writes its modules' real class paths) converts to a file whose embeddings equal
``SentenceTransformer.encode``'s.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from albert_edge.errors import CheckpointError
from albert_edge.model import AlbertConfig, random_weights, write_hf_checkpoint
from albert_edge.model.sentence_transformers import read_pooling

st_modules = pytest.importorskip("sentence_transformers.sentence_transformer.modules")

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "##s", "a", "dog", "ran",
         "far", "and", "slept", "in", "sun", "rain"]
TEXTS = ["the cat sat on the mat", "a dog ran far", "the sun and the rain", "cats slept in the sun", "dog"]

CONFIGS = [
    {"pooling_mode_cls_token": True},
    {"pooling_mode_max_tokens": True, "pooling_mode_mean_tokens": False},
    {"pooling_mode": "max", "pooling_mode_mean_tokens": True},        # the name wins over the booleans
    {"pooling_mode": "cls", "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True},
    {"pooling_mode": "mean"},                                         # v6 writes only the name
    {},                                                               # nothing said: mean
    {"pooling_mode": ["mean", "max"]},                                # concatenation: not exported
    {"pooling_mode_cls_token": True, "pooling_mode_max_tokens": True},
    {"pooling_mode": "lasttoken"},
    {"pooling_mode_weightedmean_tokens": True},
    {"pooling_mode": "weightedmean", "pooling_mode_mean_tokens": True},
]


def _folder(root: Path, pooling: dict) -> Path:
    (root / "1_Pooling").mkdir(parents=True)
    (root / "1_Pooling" / "config.json").write_text(json.dumps({"word_embedding_dimension": 32, **pooling}))
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    (root / "modules.json").write_text(json.dumps(modules))
    return root


@pytest.mark.parametrize("pooling", CONFIGS, ids=[json.dumps(c, sort_keys=True) for c in CONFIGS])
def test_the_pooling_we_read_is_the_one_sentence_transformers_runs(tmp_path: Path, pooling: dict) -> None:
    folder = _folder(tmp_path, pooling)
    theirs = st_modules.Pooling.load(str(folder), subfolder="1_Pooling").pooling_mode
    if isinstance(theirs, str) and theirs in ("cls", "mean", "max"):
        assert read_pooling(folder).mode == theirs
    else:
        with pytest.raises(CheckpointError, match="not supported|concatenates"):
            read_pooling(folder)


def test_a_pooling_config_outside_the_folder_or_an_odd_modules_file_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps({"pooling_mode": "cls"}))
    folder = _folder(tmp_path / "ckpt", {"pooling_mode": "mean"})
    (folder / "1_Pooling" / "config.json").unlink()
    os.symlink(outside / "config.json", folder / "1_Pooling" / "config.json")
    with pytest.raises(CheckpointError, match="outside the checkpoint folder"):
        read_pooling(folder)

    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "modules.json").mkdir()
    with pytest.raises(CheckpointError, match="modules.json: is not a regular file"):
        read_pooling(odd)


def _saved_by_sentence_transformers(tmp_path: Path, pooling: str, normalize: bool) -> Path:
    """A tiny BERT written by albert-edge, wrapped and saved by sentence-transformers itself."""
    from sentence_transformers import SentenceTransformer

    bert = tmp_path / "bert"
    config = AlbertConfig(model_type="bert", vocab_size=len(VOCAB), embedding_size=32, hidden_size=32,
                          num_hidden_layers=2, num_hidden_groups=2, num_attention_heads=4, intermediate_size=64,
                          max_position_embeddings=64, embedding_order="no_projection", hidden_act="gelu_exact")
    write_hf_checkpoint(random_weights(config, num_labels=None, seed=5), bert)
    (bert / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    (bert / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True, "tokenizer_class": "BertTokenizer"}))
    transformer = st_modules.Transformer(str(bert), max_seq_length=32)
    modules = [transformer, st_modules.Pooling(32, pooling_mode=pooling)]
    if normalize:
        modules.append(st_modules.Normalize())
    saved = tmp_path / "st"
    SentenceTransformer(modules=modules, device="cpu").save(str(saved))
    return saved


@pytest.mark.parametrize(("pooling", "normalize"), [("mean", True), ("cls", False), ("max", True)])
def test_a_folder_saved_by_sentence_transformers_converts_to_its_embeddings(
        tmp_path: Path, pooling: str, normalize: bool) -> None:
    from sentence_transformers import SentenceTransformer

    from albert_edge.convert.pipeline import ConvertOptions, convert_checkpoint
    from albert_edge.runtime import TextEmbedder

    folder = _saved_by_sentence_transformers(tmp_path, pooling, normalize)
    assert read_pooling(folder).mode == pooling and read_pooling(folder).normalize == normalize
    expected = SentenceTransformer(str(folder), device="cpu").encode(TEXTS, convert_to_numpy=True)
    convert_checkpoint(folder, tmp_path / "out", ConvertOptions(formats=("onnx",)))
    got = TextEmbedder.from_file(tmp_path / "out" / "model_fp32.onnx").embed_batch(TEXTS)
    # fp32 through a different runtime: equal to float32 rounding.
    np.testing.assert_allclose(got, expected, atol=2e-5, rtol=1e-4)
