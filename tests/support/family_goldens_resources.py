"""albert-core's committed goldens for the tokenizers ported from Python (#40): RoBERTa's byte-level BPE
(``bpe.json``) and XLM-R's SentencePiece in the fairseq id layout (``xlmr_spiece.model``).

The tokenizer members are trained once here (deterministically: ``tokenizers``' BPE trainer and
SentencePiece's unigram trainer on fixed sentences) and committed; the golden records are always
regenerated from the committed members (``render``), so a tokenizer library upgrade cannot move them.
``tests/test_android_family_golden.py`` checks the committed records equal a fresh rendering; the JVM
tests (``FamilyGoldenTest``) replay them. Rewrite all of them with::

    python -m tests.support.family_goldens_resources
"""

from __future__ import annotations

from pathlib import Path

from albert_edge.android.family_goldens import asset_records, family_cases
from albert_edge.android.golden_inputs import EDGE_TEXTS, render_jsonl
from albert_edge.tokenizer.bytelevel_bpe import asset_bytes

RESOURCES = Path(__file__).resolve().parents[2] / "android_demo/albert-core/src/test/resources"
#: resource member -> (pack tokenizer.type, golden file)
FAMILIES = {
    "bpe.json": ("bytelevel_bpe", "golden_bpe_tokenization.jsonl"),
    "xlmr_spiece.model": ("sentencepiece", "golden_xlmr_tokenization.jsonl"),
}


def render(member: str, asset: bytes) -> bytes:
    """The golden JSONL of the committed ``member`` (edge and random texts, three budgets, pairs, offsets)."""
    kind, _ = FAMILIES[member]
    return render_jsonl(asset_records(kind, asset, False, family_cases(), member)).encode("utf-8")


def train_members() -> dict[str, bytes]:
    """Fresh tokenizer members, trained on the tiny families' sentences and the edge texts."""
    from albert_edge.tokenizer.fairseq_spm import rebase_fairseq_model
    from tests.support.family_tokenizers import train_bytelevel_bpe, train_fairseq_spm
    from tests.support.tiny_families import SENTENCES

    corpus = [*SENTENCES, *EDGE_TEXTS]
    vocab, merges = train_bytelevel_bpe(corpus, vocab_size=600)
    return {"bpe.json": asset_bytes(vocab, merges, False),
            "xlmr_spiece.model": rebase_fairseq_model(train_fairseq_spm(corpus, vocab_size=300), "xlmr")}


def main() -> None:
    for member, asset in train_members().items():
        (RESOURCES / member).write_bytes(asset)
        (RESOURCES / FAMILIES[member][1]).write_bytes(render(member, asset))
        print(f"wrote {member} and {FAMILIES[member][1]} in {RESOURCES}")


if __name__ == "__main__":
    main()
