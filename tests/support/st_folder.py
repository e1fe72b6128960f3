"""A small BERT written as a sentence-transformers folder (random weights, real ``modules.json`` and
``1_Pooling/config.json``): shared by the embeddings tests and the written-files-open tests."""

from __future__ import annotations

import json

from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint


WORDS = ("the cat dog sat ran on a mat park red blue big small house car tree river sun moon "
         "book read wrote fast slow green old new").split()


def vocab_words() -> list[str]:
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS, "in", "and", "by"]


def _st_modules(pooling: str, normalize: bool) -> tuple[list[dict], dict]:
    modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
               {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"})
    config = {"word_embedding_dimension": 32, "pooling_mode_cls_token": pooling == "cls",
              "pooling_mode_mean_tokens": pooling == "mean", "pooling_mode_max_tokens": pooling == "max",
              "pooling_mode_mean_sqrt_len_tokens": False}
    return modules, config


def write_st_folder(directory, pooling: str = "mean", normalize: bool = True, seed: int = 4):
    """A BertModel checkpoint (no head) + vocab + sentence-transformers module files."""
    vocab = vocab_words()
    config = AlbertConfig(model_type="bert", vocab_size=len(vocab), embedding_size=32, hidden_size=32,
                          num_hidden_layers=2, num_hidden_groups=2, num_attention_heads=4, intermediate_size=64,
                          max_position_embeddings=64, embedding_order="no_projection", hidden_act="gelu_exact")
    weights = random_weights(config, num_labels=None, seed=seed)
    write_hf_checkpoint(weights, directory)
    (directory / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    modules, pooling_config = _st_modules(pooling, normalize)
    (directory / "modules.json").write_text(json.dumps(modules))
    (directory / "1_Pooling").mkdir()
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config))
    return directory, weights
