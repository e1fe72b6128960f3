"""Golden files for the Android core's token-classification path: offsets and entities.

The phone cuts entities out of what the user typed, so the Java tokenizers must give the same
character offsets as ``tokenize_with_offsets`` and the Java decoder the same entities as
``TokenClassifier``. Like the tokenization goldens in :mod:`albert_edge.android.goldens`, nothing is
argued; these files are computed here and reproduced by the JVM tests
(``android_demo/albert-core``):

* ``golden_offsets.jsonl``: WordPiece ``(token, start, end)`` per text, both casings, on the
  bert-base-chinese vocab (tokenizer corpus, edge texts, offset corner cases, reviews, random).
* ``golden_sp_offsets.jsonl``: the same for SentencePiece on a committed ALBERT-layout
  ``spiece.model``, plus ``tokenize()``'s pieces and the ids.
* ``golden_ner.jsonl``: a real NER model file's window logits per text (LiteRT, each window
  ``[CLS] tokens [SEP]``), the tokens with offsets, the tags and the entities Python decodes
  from exactly those logits. The JVM test feeds the same logits to ``EntityExtractor`` and must
  get the same entities, offsets included.

Offsets are code points (Python ``str`` indices) in every file; the Java side converts to UTF-16
only where it cuts a Java string.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from albert_edge.android.golden_inputs import (
    EDGE_TEXTS,
    GOLDEN_NER,
    SENTENCES_FILE,
    VOCAB_FILE,
    random_texts,
    read_sentences,
    render_jsonl,
)
from albert_edge.outputs.atomic import ensure_writable_dir, write_bytes_atomic
from albert_edge.errors import DataError, ModelFileError
from albert_edge.inputs.jsonfile import load_json_text
from albert_edge.runtime.pack import ModelPack

# GOLDEN_NER is re-exported: one name for the asset writer (android/goldens.py) and the tests.
__all__ = [
    "CORPUS_FILE",
    "DEFAULT_NER_TEXTS",
    "GOLDEN_DECODING",
    "GOLDEN_NER",
    "GOLDEN_NER_SP",
    "GOLDEN_OFFSETS",
    "GOLDEN_SP_CODEPOINTS",
    "GOLDEN_SP_OFFSETS",
    "NER_MODEL",
    "NER_MODEL_SP",
    "SPIECE_FILE",
    "decode_golden_logits",
    "decoding_golden",
    "ner_records",
    "render_ner_golden",
    "render_offset_goldens",
    "sentencepiece_asset_goldens",
    "sentencepiece_codepoint_digests",
    "sentencepiece_offset_records",
    "wordpiece_offset_records",
    "write_offset_goldens",
]

GOLDEN_OFFSETS = "golden_offsets.jsonl"
GOLDEN_SP_OFFSETS = "golden_sp_offsets.jsonl"
GOLDEN_DECODING = "golden_decoding.json"
GOLDEN_SP_CODEPOINTS = "golden_sp_codepoints.json"
SPIECE_FILE = "spiece.model"
CORPUS_FILE = "tokenizer_corpus.jsonl"
NER_MODEL = "ner_model.tflite"
NER_MODEL_SP = "ner_model_sp.tflite"
GOLDEN_NER_SP = "golden_ner_sp.jsonl"
_OFFSETS_SEED = 20240611

# Where offsets go wrong in a port; each line says why.
OFFSET_TEXTS: tuple[str, ...] = (
    "She said ``hello'' and then ''goodbye'' to everyone.",  # `` / '' pairs: one quote spanning both
    "a `` b '' c ` d ' e ''' f ````",  # odd runs of quotes
    "\u2581 bare \u2581\u2581 underline \u2581x",  # a literal U+2581 in the text
    "We paid 1,250 dollars on day 12, then 3, 4, and 5,000 more; ①, ², ٣,",  # digit+comma re-split
    "  leading and trailing spaces \t\n ",  # whitespace runs collapse; spans skip them
    "e\u0301 a\u0308\u0301 o\u0302\u0323 q\u0323\u0302",  # combining marks, some out of canonical order
    "İstanbul ΟΔΥΣΣΕΥΣ İΣ",  # U+0130 lower-cases to two code points; final sigma
    "Zoë, Ångström, ﬁnance, Ｆｕｌｌ ｗｉｄｔｈ, ㈱, ½",  # NFKD compatibility forms and ligatures
    "😀 emoji 👍🏽 family 👨\u200d👩\u200d👧 flag 🇨🇳 𠀀𠀁 astral",  # surrogate pairs in Java
    "zero\u200bwidth soft\u00adhyphen bom\ufeff nul\x00 repl\ufffd",  # Cf/Cc, U+FFFD dropped
    "北京Beijing上海shanghai，深圳。",  # CJK and Latin without spaces
    "[CLS] [SEP] <unk> <pad> ##ing",  # special-token spellings are text
    "",  # nothing
    "   ",  # only whitespace
)


def read_corpus(path: str | Path) -> list[str]:
    """The texts (``a`` and non-null ``b``) of a tokenizer corpus JSONL file."""
    try:
        lines = Path(path).read_text(encoding="utf-8").split("\n")
        rows = [load_json_text(line, f"{path}:{n}", DataError) for n, line in enumerate(lines, 1) if line.strip()]
        return [r["a"] for r in rows] + [r["b"] for r in rows if r.get("b") is not None]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"{path}: not a tokenizer corpus JSONL file ({exc})") from None


def offset_texts(corpus: Sequence[str], sentences: Sequence[str]) -> list[str]:
    """Golden offset inputs: the corpus, the edge and offset texts, every 5th review, random texts."""
    return [*corpus, *EDGE_TEXTS, *OFFSET_TEXTS, *sentences[::5], *random_texts(60, seed=_OFFSETS_SEED)]


def _spans(triples: Sequence[tuple[str, int, int]]) -> list[list[Any]]:
    return [[t, a, b] for t, a, b in triples]


def wordpiece_offset_records(vocab_text: str, texts: Sequence[str]) -> list[dict[str, Any]]:
    """``{text, do_lower_case, tokens: [[token, start, end], ...]}`` per text and casing."""
    from albert_edge.tokenizer import WordPieceTokenizer

    out = []
    for lower in (True, False):
        tok = WordPieceTokenizer.from_vocab_text(vocab_text, do_lower_case=lower, source=VOCAB_FILE)
        out += [{"text": t, "do_lower_case": lower, "tokens": _spans(tok.tokenize_with_offsets(t))} for t in texts]
    return out


def sentencepiece_offset_records(model: bytes, texts: Sequence[str]) -> list[dict[str, Any]]:
    """``{text, do_lower_case, pieces, ids, tokens}``: ``tokenize()``'s pieces, their ids, and the
    ``tokenize_with_offsets`` triples."""
    from albert_edge.tokenizer.spiece import SentencePieceTokenizer

    out = []
    for lower in (True, False):
        tok = SentencePieceTokenizer.from_model_bytes(model, lower, source=SPIECE_FILE)
        for text in texts:
            pieces = tok.tokenize(text)
            out.append({"text": text, "do_lower_case": lower, "pieces": pieces,
                        "ids": tok.convert_tokens_to_ids(pieces), "tokens": _spans(tok.tokenize_with_offsets(text))})
    return out


# Label strings for the decoding golden: every scheme's prefixes in both cases and separators,
# unprefixed (IO) labels, and the strings where parse_tag's rules bite: U+0131 and U+017F upper-case
# to I and S in Python, a prefix with nothing after it, a multi-letter head, "O" as a type.
_TAG_POOL = ("O", "B-PER", "I-PER", "E-PER", "S-PER", "L-PER", "U-PER", "b-LOC", "i-LOC", "e_LOC", "s_LOC",
             "B_ORG", "I_ORG", "PER", "LOC", "\u0131-PER", "\u017f-LOC", "B-", "I-", "BI-PER", "O-PER", "B-I-X",
             "I-B_Y", "", "X", "B-\u4eba\u540d", "I-\u4eba\u540d")
_DECODING_SEED = 20240612


def decoding_golden() -> dict[str, Any]:
    """Seeded tag sequences with ``decode_tags``' entities, and ``window_starts`` over a grid.

    The Java decoder and window cutter must give the same answers on every one of them.
    """
    import random

    from albert_edge.runtime.token_classifier import window_starts
    from albert_edge.tasks.entities import decode_tags

    rng = random.Random(_DECODING_SEED)
    sequences = [[rng.choice(_TAG_POOL) for _ in range(rng.randint(0, 14))] for _ in range(400)]
    tags = [{"tags": seq, "entities": [list(e) for e in decode_tags(seq)]} for seq in sequences]
    windows = [{"n": n, "window": w, "stride": s, "starts": window_starts(n, w, s)}
               for w in (1, 2, 5, 30, 126) for s in sorted({0, w // 4, min(w // 4, 32), w - 1})
               for n in (0, 1, 2, 3, 4, 5, 6, 7, 29, 30, 31, 59, 60, 61, 126, 127, 300, 1000)]
    return {"tags": tags, "windows": windows}


def render_offset_goldens(vocab_text: str, spiece: bytes, texts: Sequence[str]) -> dict[str, bytes]:
    """File name -> bytes of the offset, decoding and SentencePiece code point goldens (pure)."""
    from albert_edge.tokenizer.spiece import SentencePieceTokenizer

    digests = sentencepiece_codepoint_digests(SentencePieceTokenizer.from_model_bytes(spiece, True, SPIECE_FILE), True)
    return {
        GOLDEN_SP_CODEPOINTS: (json.dumps(digests, indent=0, ensure_ascii=False) + "\n").encode("utf-8"),
        GOLDEN_OFFSETS: render_jsonl(wordpiece_offset_records(vocab_text, texts)).encode("utf-8"),
        GOLDEN_SP_OFFSETS: render_jsonl(sentencepiece_offset_records(spiece, texts)).encode("utf-8"),
        GOLDEN_DECODING: (json.dumps(decoding_golden(), ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8"),
    }


def committed_offset_inputs(resources: str | Path) -> tuple[str, bytes, list[str]]:
    """(vocab text, spiece.model bytes, texts) from a resources directory's committed inputs."""
    root = Path(resources)
    try:
        vocab = (root / VOCAB_FILE).read_text(encoding="utf-8")
        spiece = (root / SPIECE_FILE).read_bytes()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{root}: cannot read the offset goldens' inputs ({exc})") from None
    texts = offset_texts(read_corpus(root / CORPUS_FILE), read_sentences(root / SENTENCES_FILE))
    return vocab, spiece, texts


def write_offset_goldens(resources: str | Path) -> list[Path]:
    """Regenerate golden_offsets.jsonl, golden_sp_offsets.jsonl and golden_decoding.json from the committed inputs."""
    out = ensure_writable_dir(resources)
    rendered = render_offset_goldens(*committed_offset_inputs(out))
    return [write_bytes_atomic(out / name, data) for name, data in rendered.items()]


def sentencepiece_codepoint_digests(tokenizer: Any, lower: bool) -> dict[str, Any]:
    """``android.codepoint_digests``' format for a SentencePiece tokenizer: per block of 4096 code
    points, the SHA-256 of the pieces of ``A + chr(cp) + Σb`` (pieces joined by U+0001, lines by \\n).

    Java's ``TokenizerDigest.blockDigest`` recomputes them with any ``TextTokenizer``.
    """
    import hashlib

    from albert_edge.android.golden_inputs import CODEPOINT_BLOCK, CODEPOINT_CONTEXT

    before, after = CODEPOINT_CONTEXT
    digests: list[str] = []
    for start in range(0, 0x110000, CODEPOINT_BLOCK):
        lines = ["\x01".join(tokenizer.tokenize(before + chr(cp) + after))
                 for cp in range(start, start + CODEPOINT_BLOCK) if not 0xD800 <= cp <= 0xDFFF]
        digests.append(hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest())
    return {"context": [before, after], "block": CODEPOINT_BLOCK, "lower" if lower else "cased": digests}


def sentencepiece_asset_goldens(pack: ModelPack, cases: Sequence[Any], source: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(golden_tokenization records, golden_codepoints digests) for a SentencePiece pack's assets.

    The same formats as the WordPiece ones of :mod:`albert_edge.android.goldens` (``tokenization_record``,
    ``codepoint_digests``), computed with the pack's own ``spiece.model`` and casing, so the app's
    instrumented test reads them unchanged.
    """
    from albert_edge.android.golden_inputs import tokenization_record
    from albert_edge.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, source)
    records = [tokenization_record(case, tokenizer) for case in cases]
    return records, sentencepiece_codepoint_digests(tokenizer, pack.do_lower_case)


# --------------------------------------------------------------------------- entities

# Asset golden texts when none are given: names, places and companies in English and Chinese, a
# text longer than one window of a max_seq_len 32 model, and the offset traps (case, emoji, accents).
DEFAULT_NER_TEXTS: tuple[str, ...] = (
    "Alice Smith moved to Paris last year.",
    "Bob Jones works for Acme Corp in Berlin.",
    "ALICE SMITH met Zoë Clark in Tokyo 😀 yesterday.",
    "张伟在北京的华为工作。",
    "昨天王芳从上海飞往深圳。",
    ("In London, Grace Lee met the chief of Globex. Henry Adams left Initech and joined Hooli. "
     "We visited Rome with Irene Walker in the spring. 李娜离开了腾讯，加入了百度。"),
)


class _WindowModel:
    """The interpreter of record (LiteRT) on one token-classification file: raw window logits."""

    def __init__(self, data: bytes, pack: ModelPack, source: str) -> None:
        from albert_edge.runtime.backends import available_backends, open_backend

        if "litert" not in available_backends():
            raise ModelFileError(f"{source}: ai-edge-litert is not installed; install albert-edge[runtime] for NER goldens")
        self.pack, self.source = pack, source
        self.backend = open_backend(bytes(data), source, "litert")

    def run(self, ids: Sequence[int]) -> np.ndarray:
        """[len(ids), labels] logits of one ``[CLS] ... [SEP]`` row (fed unpadded, by input name)."""
        row = np.asarray([list(ids)], np.int32)
        feeds = {"input_ids": row, "attention_mask": np.ones_like(row), "token_type_ids": np.zeros_like(row)}
        logits = np.asarray(self.backend.run({n: feeds[n] for n in self.pack.inputs})["logits"], np.float32)
        if logits.shape != (1, row.shape[1], len(self.pack.labels or ())):
            raise ModelFileError(f"{self.source}: output 'logits' has shape {list(logits.shape)}, expected "
                                 f"[1, {row.shape[1]}, {len(self.pack.labels or ())}]")
        return logits[0]


def ner_record(model: _WindowModel, tokenizer: Any, text: str, stride: int | None = None) -> dict[str, Any]:
    """One NER golden line: tokens, windows and their logits, tags, entities, all from Python's code.

    Decoding goes through the runtime's own functions (``window_starts``, ``merge_windows``,
    ``softmax``, ``TokenClassifier.entities``), so the entities are what ``TokenClassifier.predict``
    returns for these logits.
    """
    from albert_edge.runtime.classifier import softmax
    from albert_edge.runtime.token_classifier import (
        TokenClassifier,
        TokenTag,
        merge_windows,
        window_starts,
    )

    labels = list(model.pack.labels or ())
    window = model.pack.max_seq_len - 2
    stride = min(window // 4, 32) if stride is None else stride
    tokens = tokenizer.tokenize_with_offsets(text)
    ids = tokenizer.convert_tokens_to_ids([t for t, _, _ in tokens])
    starts = window_starts(len(ids), window, stride) if tokens else []
    rows = [model.run([tokenizer.cls_id, *ids[s:s + window], tokenizer.sep_id]) for s in starts]
    tags: list[TokenTag] = []
    if tokens:
        merged = merge_windows(len(ids), starts, [r[1:-1] for r in rows])
        probs = softmax(merged)
        top = probs.argmax(-1)
        tags = [TokenTag(t, a, b, labels[k], float(probs[i, k])) for i, ((t, a, b), k) in enumerate(zip(tokens, top))]
    entities = TokenClassifier.entities(text, tags)
    return {
        "text": text,
        "max_seq_len": model.pack.max_seq_len,
        "stride": stride,
        "labels": labels,
        "tokens": _spans(tokens),
        "ids": list(ids),
        "window_starts": list(starts),
        "window_logits": [[[float(v) for v in row] for row in r] for r in rows],
        "tags": [t.tag for t in tags],
        "entities": [{"label": e.label, "start": e.start, "end": e.end, "text": e.text, "score": e.score,
                      "tokens": list(e.tokens)} for e in entities],
    }


def ner_records(data: bytes, source: str, texts: Sequence[str], strides: Sequence[int | None] = (None,)) -> list[dict[str, Any]]:
    """NER goldens for a packed token-classification ``.tflite`` (``data``): every text at each stride.

    Checked before anything is written: for the default stride, ``TokenClassifier.predict`` on the
    same file must return exactly the recorded entities (the goldens are the runtime's answers).
    """
    from albert_edge.runtime import TokenClassifier
    from albert_edge.runtime.consistency import checked_pack
    from albert_edge.runtime.pack import read_pack_bytes
    from albert_edge.tasks import TokenClassification
    from albert_edge.tokenizer import load_tokenizer

    pack = read_pack_bytes(data, source)
    if not isinstance(pack.task_object(source), TokenClassification):
        raise ModelFileError(f"{source}: pack task is {pack.task}; NER goldens need a {TokenClassification.name} model")
    pack = checked_pack(data, source, pack)
    model = _WindowModel(data, pack, source)
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, source)
    runtime = TokenClassifier.from_bytes(data, source, backend="litert")
    out = []
    for stride in strides:
        for text in texts:
            record = ner_record(model, tokenizer, text, stride)
            if stride is None:
                got = [(e.label, e.start, e.end, e.text) for e in runtime.predict(text)]
                want = [(e["label"], e["start"], e["end"], e["text"]) for e in record["entities"]]
                if got != want:
                    raise ModelFileError(f"{source}: golden entities {want} differ from TokenClassifier's {got} "
                                         f"for {text!r}")
            out.append(record)
    return out


def render_ner_golden(data: bytes, source: str, texts: Sequence[str], strides: Sequence[int | None] = (None,)) -> str:
    return render_jsonl(ner_records(data, source, texts, strides))


def decode_golden_logits(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The entities Python decodes from a golden record's own window logits (no interpreter)."""
    from albert_edge.runtime.classifier import softmax
    from albert_edge.runtime.token_classifier import (
        TokenClassifier,
        TokenTag,
        merge_windows,
    )

    tokens = record["tokens"]
    if not tokens:
        return []
    logits = [np.asarray(r, np.float32)[1:-1] for r in record["window_logits"]]
    probs = softmax(merge_windows(len(tokens), record["window_starts"], logits))
    top = probs.argmax(-1)
    tags = [TokenTag(t, a, b, record["labels"][k], float(probs[i, k])) for i, ((t, a, b), k) in enumerate(zip(tokens, top))]
    return [{"label": e.label, "start": e.start, "end": e.end, "text": e.text, "score": e.score, "tokens": list(e.tokens)}
            for e in TokenClassifier.entities(record["text"], tags)]
