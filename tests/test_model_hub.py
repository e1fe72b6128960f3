"""Hub ids, Hugging Face cache folders and tokenizer.json-only folders as checkpoints (issue #30).

Nothing downloads: the tests write a Hugging Face cache themselves (``models--ORG--NAME/snapshots/<sha>``
with ``refs/main``, the layout huggingface_hub reads) and run the CLI with ``HF_HUB_OFFLINE=1``, in a
subprocess so that huggingface_hub reads the environment at import as it does for a user.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from albert_edge.cli import main
from albert_edge.convert.assets import find_tokenizer_asset
from albert_edge.errors import CheckpointError, TokenizerError
from albert_edge.model import AlbertConfig, random_weights, write_hf_checkpoint
from albert_edge.model.hub import cache_snapshot, looks_like_hub_id, resolve_checkpoint
from albert_edge.tokenizer.tokenizer_json import wordpiece_vocab_from_tokenizer_json

COMMIT = "0123456789abcdef0123456789abcdef01234567"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "##s", "a", "dog", "好", "书"]


def _checkpoint(directory: Path, tokenizer: str = "vocab.txt") -> Path:
    """A tiny Hugging Face BERT written by albert-edge's own writer, with one kind of tokenizer file."""
    config = AlbertConfig(model_type="bert", vocab_size=len(VOCAB), embedding_size=32, hidden_size=32,
                          num_hidden_layers=1, num_hidden_groups=1, num_attention_heads=4, intermediate_size=64,
                          max_position_embeddings=32, embedding_order="no_projection", hidden_act="gelu_exact")
    write_hf_checkpoint(random_weights(config, num_labels=2, seed=1), directory)
    vocab_file = directory / "vocab.txt"
    vocab_file.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    if tokenizer == "tokenizer.json":
        from tokenizers import BertWordPieceTokenizer

        BertWordPieceTokenizer(str(vocab_file), lowercase=False).save(str(directory / "tokenizer.json"))
        vocab_file.unlink()
    return directory


def _cache(root: Path, repo: str = "acme/tiny-bert") -> Path:
    """``root`` laid out as HF_HUB_CACHE holding ``repo`` at COMMIT."""
    repo_dir = root / ("models--" + repo.replace("/", "--"))
    _checkpoint(repo_dir / "snapshots" / COMMIT)
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(COMMIT, encoding="utf-8")
    return repo_dir


def _cli(args: list[str], cache: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HUB_CACHE=str(cache), HF_HUB_OFFLINE="1", HF_HOME=str(cache.parent / "hf_home"))
    return subprocess.run([sys.executable, "-m", "albert_edge", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=600)


def test_hub_ids_are_told_from_paths() -> None:
    for text in ("voidful/albert_chinese_tiny", "bert-base-chinese", "sentence-transformers/all-MiniLM-L6-v2"):
        assert looks_like_hub_id(text), text
    for text in ("./model", "/abs/model", "~/model", "a/b/c", "../x", "model.index", "x.tflite", "org/..", ""):
        assert not looks_like_hub_id(text), text


def test_a_cache_repo_folder_reads_as_its_snapshot(tmp_path: Path) -> None:
    repo_dir = _cache(tmp_path)
    assert cache_snapshot(repo_dir) == repo_dir / "snapshots" / COMMIT
    assert resolve_checkpoint(repo_dir) == repo_dir / "snapshots" / COMMIT
    assert resolve_checkpoint(repo_dir, revision=COMMIT) == repo_dir / "snapshots" / COMMIT
    with pytest.raises(CheckpointError, match="without a snapshot for 'v2'"):
        resolve_checkpoint(repo_dir, revision="v2")
    plain = _checkpoint(tmp_path / "plain")
    assert resolve_checkpoint(plain) == plain  # a local folder is never looked up on the Hub


def test_without_the_hub_extra_an_id_is_one_line_naming_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(CheckpointError, match=r"pip install 'albert-edge\[hub\]'"):
        resolve_checkpoint("acme/not-here")


def test_inspect_and_convert_take_a_hub_id_from_the_cache_offline(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    _cache(cache)
    inspected = _cli(["inspect", "acme/tiny-bert", "--json"], cache, tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["task"]["name"] == "sequence_classification"
    assert f"acme/tiny-bert: reading {cache}" in inspected.stderr

    converted = _cli(["convert", "acme/tiny-bert", "--out", "out", "--formats", "onnx", "--labels", "a,b"], cache, tmp_path)
    assert converted.returncode == 0, converted.stderr
    assert (tmp_path / "out" / "model_fp32.onnx").is_file()
    # Nothing was written into the cache.
    assert sorted(p.name for p in (cache / "models--acme--tiny-bert" / "snapshots" / COMMIT).iterdir()) == [
        "config.json", "model.safetensors", "vocab.txt"]


def test_a_missing_id_offline_is_one_line_and_exit_2(tmp_path: Path) -> None:
    cache = tmp_path / "hub"
    cache.mkdir()
    result = _cli(["convert", "acme/nowhere", "--out", "out"], cache, tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert "acme/nowhere" in result.stderr and "not in the Hugging Face cache while offline" in result.stderr
    assert not (tmp_path / "out").exists()


def test_quantize_of_a_cached_model_needs_an_out_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo_dir = _cache(tmp_path / "hub")
    calib = tmp_path / "calib.txt"
    calib.write_text("the cat sat\n", encoding="utf-8")
    assert main(["quantize", str(repo_dir), "--calib", str(calib), "--mode", "dynamic"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "pass --out DIR" in err  # the "reading" line, then the error
    assert not (repo_dir / "snapshots" / COMMIT / "quantized").exists()


def test_a_folder_with_only_tokenizer_json_gets_its_wordpiece_vocab(tmp_path: Path) -> None:
    folder = _checkpoint(tmp_path / "ckpt", tokenizer="tokenizer.json")
    asset = find_tokenizer_asset(folder, embedding_rows=len(VOCAB))
    assert asset.kind == "wordpiece" and asset.path.name == "tokenizer.json"
    assert asset.data.decode("utf-8").splitlines() == VOCAB
    assert asset.do_lower_case is False  # from the saved BertNormalizer


@pytest.mark.parametrize(("model", "message"), [
    ({"type": "Unigram", "vocab": [["a", 0.0]]}, "needs its spiece.model"),
    ({"type": "WordPiece", "vocab": {"a": 0, "b": 2}}, "ids must be 0..1"),
    ({"type": "WordPiece", "vocab": {"a": 0, "b": True}}, "ids must be"),
    ({"type": "WordPiece", "vocab": {}}, "missing or empty"),
])
def test_a_tokenizer_json_that_cannot_be_a_wordpiece_vocab_is_refused(tmp_path: Path, model: dict, message: str) -> None:
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": model}), encoding="utf-8")
    with pytest.raises(TokenizerError, match=message):
        wordpiece_vocab_from_tokenizer_json(path)
