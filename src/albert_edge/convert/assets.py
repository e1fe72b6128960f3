"""Find and validate the tokenizer asset that goes into the model pack.

A checkpoint rarely says where its vocabulary is, so we look beside it in the places each
publisher puts it: brightmart albert_zh and BERT ship ``vocab.txt``, Hugging Face ALBERT
``spiece.model``, Google's ALBERT TF-Hub/TF1 releases ``30k-clean.model``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from albert_edge.errors import TokenizerError
from albert_edge.inputs.jsonfile import load_json_file
from albert_edge.inputs.userfile import read_user_bytes
from albert_edge.tokenizer.bytelevel_bpe import BPE_VOCAB_JSON, asset_from_tokenizer_json, asset_from_vocab_merges
from albert_edge.tokenizer.fairseq_spm import (FAIRSEQ_MODEL_NAME, model_from_unigram_tokenizer_json,
                                               rebase_fairseq_model)
from albert_edge.tokenizer.tokenizer_json import TOKENIZER_JSON, wordpiece_vocab_from_tokenizer_json
from albert_edge.tokenizer.vocab_fit import vocab_fits

#: The largest real tokenizer assets are a few MB (multilingual SentencePiece models ~5 MB).
MAX_ASSET_BYTES = 256 << 20
# File name -> tokenizer kind, in search order.
ASSET_NAMES: tuple[tuple[str, str], ...] = (
    ("vocab.txt", "wordpiece"),
    ("spiece.model", "sentencepiece"),
    ("30k-clean.model", "sentencepiece"),
    (FAIRSEQ_MODEL_NAME, "sentencepiece"),  # XLM-R: rebuilt in the model's id layout (``fairseq_spm``)
    (BPE_VOCAB_JSON, "bytelevel_bpe"),  # RoBERTa: vocab.json + merges.txt, packed as one bpe.json
)


@dataclass(frozen=True)
class TokenizerAsset:
    """The bytes that the pack stores, what kind they are, and where they came from."""

    kind: str  # "wordpiece" | "sentencepiece"
    data: bytes
    path: Path
    do_lower_case: bool
    vocab_size: int


def checkpoint_dir(checkpoint: str | os.PathLike[str]) -> Path:
    """The directory holding a checkpoint: itself if a directory, else the parent of a file or TF1 prefix."""
    path = Path(checkpoint)
    return path if path.is_dir() else path.parent


def kind_of_asset(path: Path, data: bytes) -> str:
    """"wordpiece" for a UTF-8 text vocab, "sentencepiece" for a binary SentencePiece model."""
    if path.suffix == ".txt":
        return "wordpiece"
    if path.suffix == ".model":
        return "sentencepiece"
    try:
        data[:4096].decode("utf-8")
    except UnicodeDecodeError:
        return "sentencepiece"
    return "wordpiece"


def check_vocab_fits(asset: TokenizerAsset, embedding_rows: int, source: str) -> None:
    """Refuse a tokenizer that does not belong to an embedding table of ``embedding_rows`` rows.

    More tokens than rows would index past the table. Fewer tokens means either padding (the
    rows are the token count rounded up to a multiple of 8..128, ids never reach the extra rows)
    or another model's vocab (a 10-token vocab for a 21,128-row table): every id would then name a
    different word than in training, and the model would still convert, pass parity and run.
    """
    if vocab_fits(asset.vocab_size, embedding_rows):
        return
    what = "more tokens than" if asset.vocab_size > embedding_rows else "fewer tokens than"
    raise TokenizerError(f"{asset.path}: tokenizer has {asset.vocab_size} tokens but the word embedding of {source} "
                         f"has {embedding_rows} rows ({what} rows, and not padding to a multiple of 8-128), so it "
                         "is not this model's vocab; pass the --vocab it was trained with")


def find_tokenizer_asset(
    checkpoint: str | os.PathLike[str],
    vocab: str | os.PathLike[str] | None = None,
    do_lower_case: bool | None = None,
    embedding_rows: int | None = None,
    source: str = "the checkpoint",
) -> TokenizerAsset:
    """Load ``vocab`` if given, else the first of ASSET_NAMES beside ``checkpoint``; validate it.

    ``do_lower_case`` defaults to the checkpoint's tokenizer_config.json, else True (what the
    Chinese and ALBERT releases were trained with). With ``embedding_rows`` (the model's
    vocab_size) the tokenizer must fit that table (``check_vocab_fits``).
    """
    from albert_edge.tokenizer.loader import load_tokenizer

    directory = checkpoint_dir(checkpoint)
    json_lower_case: bool | None = None
    if vocab is not None:
        path = Path(vocab)
        if not path.is_file():
            raise TokenizerError(f"{path}: --vocab file not found")
    else:
        path = next((directory / name for name, _ in ASSET_NAMES if (directory / name).is_file()), None)
        if path is None and (directory / TOKENIZER_JSON).is_file():
            path = directory / TOKENIZER_JSON
        if path is None:
            names = ", ".join([name for name, _ in ASSET_NAMES] + [TOKENIZER_JSON])
            raise TokenizerError(f"{directory}: no tokenizer asset beside the checkpoint (looked for {names}); "
                                 "pass --vocab PATH")
    parsed = load_json_file(path, TokenizerError) if path.name == TOKENIZER_JSON else None
    bpe = asset_from_tokenizer_json(parsed, str(path)) if parsed is not None else None
    unigram = model_from_unigram_tokenizer_json(parsed, str(path)) if parsed is not None else None
    if bpe is not None:  # RoBERTa's byte-level BPE
        data, kind, json_lower_case = bpe, "bytelevel_bpe", False
    elif unigram is not None:  # XLM-R's SentencePiece, rebuilt from its Unigram tokenizer.json
        data, kind, json_lower_case = unigram, "sentencepiece", False
    elif path.name == TOKENIZER_JSON:
        # Only a fast tokenizer's file: its WordPiece vocab becomes the pack's vocab.txt.
        data, json_lower_case = wordpiece_vocab_from_tokenizer_json(path)
        kind = "wordpiece"
    elif path.name == BPE_VOCAB_JSON:
        data, kind = asset_from_vocab_merges(path), "bytelevel_bpe"
    else:
        data = read_user_bytes(path, MAX_ASSET_BYTES, TokenizerError, "tokenizer asset")
        kind = kind_of_asset(path, data)
        if path.name == FAIRSEQ_MODEL_NAME:
            data = rebase_fairseq_model(data, str(path))
    if do_lower_case is None:
        do_lower_case = _lower_case_from_config(directory, json_lower_case)
    tokenizer = load_tokenizer(kind, data, do_lower_case=do_lower_case, source=str(path))
    do_lower_case = bool(getattr(tokenizer, "do_lower_case", do_lower_case))  # XLM-R's is cased whatever the config says
    asset = TokenizerAsset(kind=kind, data=data, path=path, do_lower_case=do_lower_case,
                           vocab_size=int(tokenizer.vocab_size))
    if embedding_rows is not None:
        check_vocab_fits(asset, embedding_rows, source)
    return asset


def _lower_case_from_config(directory: Path, fallback: bool | None = None) -> bool:
    """tokenizer_config.json's ``do_lower_case``, else ``fallback`` (tokenizer.json's normalizer), else True."""
    config = directory / "tokenizer_config.json"
    if config.is_file():
        # A broken file is refused, not skipped: guessing the casing would export a model whose
        # tokenizer silently differs from training (parity cannot see that).
        data = load_json_file(config, TokenizerError)
        value = data.get("do_lower_case") if isinstance(data, dict) else None
        if isinstance(value, bool):
            return value
    return True if fallback is None else fallback
