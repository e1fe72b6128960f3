"""`pretrain` / `finetune --config albert_tiny` find their vocab without `--init` (issue #38).

They used to look only beside `--init`, so the documented `--config albert_tiny` runs failed with
"no vocab.txt found (looked at nothing)". Now a vocab.txt beside a `--config` JSON or the data files
is found, and when none is, the line says where it looked and what to pass.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from albert_edge.errors import DataError
from albert_edge.finetune.recipe import resolve_config, resolve_vocab, vocab_candidates

SAMPLE_VOCAB = Path(__file__).resolve().parents[1] / "examples" / "albert_tiny_zh_sentiment" / "vocab.txt"


def test_the_vocab_beside_the_data_files_is_found_without_init(tmp_path: Path) -> None:
    shutil.copy(SAMPLE_VOCAB, tmp_path / "vocab.txt")
    train = tmp_path / "train.tsv"
    train.write_text("pos\t好\n", encoding="utf-8")
    found = resolve_vocab(None, None, resolve_config("albert_tiny"), beside=("albert_tiny", str(train)))
    assert found == tmp_path / "vocab.txt"


def test_an_explicit_vocab_is_the_only_place_looked_at(tmp_path: Path) -> None:
    train = tmp_path / "train.tsv"
    train.write_text("pos\t好\n", encoding="utf-8")
    assert vocab_candidates("v.txt", None, beside=(str(train),)) == [Path("v.txt")]


def test_a_preset_name_is_not_taken_for_a_folder(tmp_path: Path) -> None:
    assert vocab_candidates(None, None, beside=("albert_tiny",)) == []


def test_no_vocab_anywhere_names_the_places_and_the_flag(tmp_path: Path) -> None:
    train = tmp_path / "train.tsv"
    train.write_text("pos\t好\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        resolve_vocab(None, None, resolve_config("albert_tiny"), beside=(str(train),))
    message = str(caught.value)
    assert str(tmp_path / "vocab.txt") in message and "pass --vocab PATH" in message
    assert "looked at nothing" not in message
