"""The committed Android goldens are exactly what the Python tokenizer produces today.

The JVM tests (android_demo/ci-check.sh) hold the Java port to these files; these tests hold
the files to the Python package, so neither side can drift without a red test.
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

from albert_edge.android import goldens as android
from albert_edge.android.tables import render_unicode_tables_java
from albert_edge.cli import main
from albert_edge.runtime.pack import read_pack

REPO = Path(__file__).resolve().parents[1]
RESOURCES = REPO / android.TEST_RESOURCES
TABLES = REPO / android.UNICODE_TABLES_JAVA


@pytest.fixture(scope="module")
def rendered() -> dict[str, bytes]:
    vocab = (RESOURCES / android.VOCAB_FILE).read_text(encoding="utf-8")
    return android.render_test_goldens(vocab, android.read_sentences(RESOURCES / android.SENTENCES_FILE))


@pytest.mark.parametrize(
    "name",
    [
        android.GOLDEN_TOKENIZATION,
        android.GOLDEN_LOGITS,
        android.GOLDEN_LATENCY,
        android.PACK_FIXTURE,
        android.GOLDEN_PACK,
        android.PACK_METADATA_FIXTURE,
        android.GOLDEN_CODEPOINTS,
        android.GOLDEN_NORMALIZATION,
    ],
)
def test_committed_golden_equals_regeneration(rendered, name):
    committed = (RESOURCES / name).read_bytes()
    assert committed == rendered[name], f"{name} drifted: run albert-edge android-assets --golden-only {android.TEST_RESOURCES}"


def test_committed_unicode_tables_equal_generator():
    committed = TABLES.read_text(encoding="utf-8")
    if f"unicodedata {unicodedata.unidata_version})" not in committed.splitlines()[2]:
        pytest.skip(f"UnicodeTables.java was generated for another Unicode version than {unicodedata.unidata_version}")
    assert committed == render_unicode_tables_java()


def test_committed_vocab_is_bert_base_chinese():
    import hashlib

    assert hashlib.md5((RESOURCES / android.VOCAB_FILE).read_bytes()).hexdigest() == "3b5b76c4aef48ecf8cb3abaafe960f09"


def test_golden_holds_hundreds_of_real_reviews_pairs_and_truncations():
    records = [json.loads(line) for line in (RESOURCES / android.GOLDEN_TOKENIZATION).read_text(encoding="utf-8").splitlines()]
    encoded = [r for r in records if "error" not in r]
    assert len(android.read_sentences(RESOURCES / android.SENTENCES_FILE)) >= 250
    assert len(encoded) >= 400
    assert any(r["truncated"] and r["text_b"] is None for r in encoded)
    assert any(r["truncated"] and r["text_b"] is not None for r in encoded)
    assert any(not r["do_lower_case"] for r in encoded)
    assert all(len(r["input_ids"]) <= r["max_seq_len"] for r in encoded)


def test_golden_texts_reach_every_cjk_range_and_the_astral_planes():
    from albert_edge.tokenizer._text import _CJK_RANGES

    texts = "".join(r["text_a"] + (r["text_b"] or "") for r in map(json.loads, (RESOURCES / android.GOLDEN_TOKENIZATION).open(encoding="utf-8")))
    for lo, hi in _CJK_RANGES:
        assert any(lo <= ord(c) <= hi for c in texts), f"no golden text uses CJK range {lo:X}-{hi:X}"
    assert any(ord(c) > 0xFFFF and unicodedata.category(c) == "So" for c in texts), "no emoji in the goldens"


def test_pack_fixture_reads_back_with_the_committed_vocab():
    pack = read_pack(RESOURCES / android.PACK_FIXTURE)
    assert pack.tokenizer_asset == (RESOURCES / android.VOCAB_FILE).read_bytes()
    assert pack.labels == ("negative", "positive")


def test_metadata_pack_fixture_carries_standard_metadata_and_the_same_pack():
    from albert_edge.runtime.pack import strip_tflite_pack
    from albert_edge.runtime.tflite_metadata import read_standard_metadata

    data = (RESOURCES / android.PACK_METADATA_FIXTURE).read_bytes()
    meta = read_standard_metadata(strip_tflite_pack(data), android.PACK_METADATA_FIXTURE)
    assert meta is not None and meta.tokenizer == "wordpiece" and meta.output_names == ("probabilities", "logits")
    old = read_pack(RESOURCES / android.PACK_FIXTURE)
    assert read_pack(RESOURCES / android.PACK_METADATA_FIXTURE) == old


def test_cli_golden_only_writes_every_golden_and_the_tables(tmp_path, monkeypatch, rendered):
    # The rendering itself is proven above; this checks what the CLI reads and writes, without
    # paying for a second full regeneration.
    from albert_edge.android import ner as android_ner

    for name in (android.VOCAB_FILE, android.SENTENCES_FILE, android_ner.SPIECE_FILE, android_ner.CORPUS_FILE):
        (tmp_path / name).write_bytes((RESOURCES / name).read_bytes())
    seen = {}

    def fake_render(vocab_text, sentences):
        seen["args"] = (vocab_text, list(sentences))
        return rendered

    monkeypatch.setattr(android, "render_test_goldens", fake_render)
    monkeypatch.setattr(android, "render_unicode_tables_java", lambda: "// tables\n")
    tables = tmp_path / "UnicodeTables.java"
    assert main(["android-assets", "--golden-only", str(tmp_path), "--unicode-tables", str(tables)]) == 0
    assert seen["args"] == (
        (RESOURCES / android.VOCAB_FILE).read_text(encoding="utf-8"),
        android.read_sentences(RESOURCES / android.SENTENCES_FILE),
    )
    for name, data in rendered.items():
        assert (tmp_path / name).read_bytes() == data
    for name in (android_ner.GOLDEN_OFFSETS, android_ner.GOLDEN_SP_OFFSETS, android_ner.GOLDEN_DECODING,
                 android_ner.GOLDEN_SP_CODEPOINTS):
        assert (tmp_path / name).read_bytes() == (RESOURCES / name).read_bytes()
    assert tables.read_text(encoding="utf-8") == "// tables\n"


def test_softmax_label_is_first_maximum_on_ties():
    record = android.logits_record([2.0, 2.0, 1.0], ["a", "b", "c"])
    assert record["label"] == "a"
    assert record["probs"][0] == record["probs"][1]


def test_softmax_survives_logits_that_overflow_exp():
    probs = android.softmax([1000.0, -1000.0])
    assert probs == [1.0, 0.0]


def test_review_pick_is_deterministic_and_mixes_in_latin_lines(tmp_path):
    for name in ("pos.txt", "neg.txt"):
        lines = [f"第{i}条评论很好" if i % 3 else f"review {i} with English words" for i in range(400)]
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    first = android.review_sentences(tmp_path / "pos.txt", tmp_path / "neg.txt", per_file=40)
    assert first == android.review_sentences(tmp_path / "pos.txt", tmp_path / "neg.txt", per_file=40)
    assert len(first) == 80
    # Half of each file's picks come from the Latin-mixed lines, although only a third are.
    assert sum("English" in s for s in first) >= 40 + 2 * (20 // 3)
