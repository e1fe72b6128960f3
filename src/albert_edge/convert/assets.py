"""Find and validate the tokenizer asset that goes into the model pack.

A checkpoint rarely says where its vocabulary is, so we look beside it in the places each
publisher puts it: brightmart albert_zh and BERT ship ``vocab.txt``, Hugging Face ALBERT
``spiece.model``, Google's ALBERT TF-Hub/TF1 releases ``30k-clean.model``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from albert_edge.errors import TokenizerError

# File name -> tokenizer kind, in search order.
ASSET_NAMES: tuple[tuple[str, str], ...] = (
    ("vocab.txt", "wordpiece"),
    ("spiece.model", "sentencepiece"),
    ("30k-clean.model", "sentencepiece"),
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


def find_tokenizer_asset(
    checkpoint: str | os.PathLike[str],
    vocab: str | os.PathLike[str] | None = None,
    do_lower_case: bool | None = None,
) -> TokenizerAsset:
    """Load ``vocab`` if given, else the first of ASSET_NAMES beside ``checkpoint``; validate it.

    ``do_lower_case`` defaults to the checkpoint's tokenizer_config.json, else True (what the
    Chinese and ALBERT releases were trained with).
    """
    from albert_edge.tokenizer.loader import load_tokenizer

    directory = checkpoint_dir(checkpoint)
    if vocab is not None:
        path = Path(vocab)
        if not path.is_file():
            raise TokenizerError(f"{path}: --vocab file not found")
    else:
        path = next((directory / name for name, _ in ASSET_NAMES if (directory / name).is_file()), None)
        if path is None:
            names = ", ".join(name for name, _ in ASSET_NAMES)
            raise TokenizerError(f"{directory}: no tokenizer asset beside the checkpoint (looked for {names}); "
                                 "pass --vocab PATH")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TokenizerError(f"{path}: cannot read tokenizer asset ({exc.strerror or exc})") from None
    if do_lower_case is None:
        do_lower_case = _lower_case_from_config(directory)
    kind = kind_of_asset(path, data)
    tokenizer = load_tokenizer(kind, data, do_lower_case=do_lower_case, source=str(path))
    return TokenizerAsset(kind=kind, data=data, path=path, do_lower_case=do_lower_case,
                          vocab_size=int(tokenizer.vocab_size))


def _lower_case_from_config(directory: Path) -> bool:
    config = directory / "tokenizer_config.json"
    if config.is_file():
        try:
            value = json.loads(config.read_text(encoding="utf-8")).get("do_lower_case")
        except (OSError, ValueError, AttributeError):
            value = None
        if isinstance(value, bool):
            return value
    return True
