"""albert-core's committed goldens for the tokenizers ported from Python (#40): RoBERTa's byte-level BPE
(``bpe.json``) and XLM-R's SentencePiece in the fairseq id layout (``xlmr_spiece.model``).

The tokenizer members are trained once here (deterministically: ``tokenizers``' BPE trainer and
SentencePiece's unigram trainer on fixed sentences) and committed; the golden records are always
regenerated from the committed members (``render``), so a tokenizer library upgrade cannot move them.
``tests/test_android_family_golden.py`` checks the committed records equal a fresh rendering; the JVM
tests (``FamilyGoldenTest``) replay them. Rewrite all of them with::

    python -m tests.support.family_goldens_resources            # retrain the members too
    python -m tests.support.family_goldens_resources --golden-only  # records from the committed members
"""

from __future__ import annotations

from pathlib import Path

from albert_edge.android.family_goldens import asset_records, family_cases
from albert_edge.android.golden_inputs import EDGE_TEXTS, random_texts, render_jsonl
from albert_edge.tokenizer.bytelevel_bpe import asset_bytes

RESOURCES = Path(__file__).resolve().parents[2] / "android_demo/albert-core/src/test/resources"
#: resource member -> (pack tokenizer.type, golden file)
FAMILIES = {
    "bpe.json": ("bytelevel_bpe", "golden_bpe_tokenization.jsonl"),
    "xlmr_spiece.model": ("sentencepiece", "golden_xlmr_tokenization.jsonl"),
}
#: resource member -> its code point digests (every code point between two contexts, per 4096-block)
DIGESTS = {"bpe.json": "golden_bpe_codepoints.json", "xlmr_spiece.model": "golden_xlmr_codepoints.json"}


#: Byte-level BPE's own corners, before the shared edge and random texts: every GPT-2 contraction (and
#: spellings that are not one), runs of spaces before words and at the end, tabs, numbers in other scripts.
PATTERN_TEXTS: tuple[str, ...] = (
    "I'll go; you'd've gone, we're here, they've left, I'm in, it's his, don't 'tis",
    "O'Neil's 'quote' 'LL 'S 'Re x'y '' ' '",
    "two  spaces   three    four\t\ttabs \n newline  ",
    "  leading and trailing  ",
    "digits١٢٣ ½ ² Ⅻ 42nd 3.14 1,000 x2y",
    "mixed👍🏽emoji😀 and 中文 words,punct!!?",
    "``quoted'' 1, 2, 3, 1, 2, 3, 1, 2, 3, 10, 20, 1,2,3 ALBERT re-splits digit-comma pieces, XLM-R does not",
)


def render(member: str, asset: bytes) -> bytes:
    """The golden JSONL of the committed ``member`` (edge and random texts, three budgets, pairs, offsets)."""
    kind, _ = FAMILIES[member]
    texts = [*PATTERN_TEXTS, *EDGE_TEXTS, *random_texts(60)]
    return render_jsonl(asset_records(kind, asset, False, family_cases(texts), member)).encode("utf-8")


def render_digests(member: str, asset: bytes) -> bytes:
    """``golden_codepoints.json``'s format for the committed ``member`` (what ``android-assets`` writes for
    an app): Java's ``TokenizerDigest.blockDigest`` recomputes each block. Minutes in Python."""
    import json

    from albert_edge.android.ner import sentencepiece_codepoint_digests
    from albert_edge.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(FAMILIES[member][0], asset, False, member)
    return (json.dumps(sentencepiece_codepoint_digests(tokenizer, False), indent=0, ensure_ascii=False) + "\n").encode()


def train_members() -> dict[str, bytes]:
    """Fresh tokenizer members, trained on the tiny families' sentences, the pattern texts and the edge
    texts (so that merges span contractions and space runs, and a pre-tokenizer slip shows in the symbols)."""
    from albert_edge.tokenizer.fairseq_spm import rebase_fairseq_model
    from tests.support.family_tokenizers import train_bytelevel_bpe, train_fairseq_spm
    from tests.support.tiny_families import SENTENCES

    corpus = [*SENTENCES, *PATTERN_TEXTS, *EDGE_TEXTS]
    vocab, merges = train_bytelevel_bpe(corpus, vocab_size=600)
    return {"bpe.json": asset_bytes(vocab, merges, False),
            "xlmr_spiece.model": rebase_fairseq_model(train_fairseq_spm(corpus, vocab_size=300), "xlmr")}


def main() -> None:
    import sys

    members = train_members() if "--golden-only" not in sys.argv else {m: (RESOURCES / m).read_bytes() for m in FAMILIES}
    for member, asset in members.items():
        (RESOURCES / member).write_bytes(asset)
        (RESOURCES / FAMILIES[member][1]).write_bytes(render(member, asset))
        (RESOURCES / DIGESTS[member]).write_bytes(render_digests(member, asset))
        print(f"wrote {member}, {FAMILIES[member][1]} and {DIGESTS[member]} in {RESOURCES}")


if __name__ == "__main__":
    main()
