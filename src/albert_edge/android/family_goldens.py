"""Golden files for RoBERTa's byte-level BPE and XLM-R's SentencePiece in fairseq's id layout, the judge
of albert-core's ports (``ByteLevelBpeTokenizer``, ``SentencePieceTokenizer`` on a fairseq-layout model).

The Java port reproduces these files (the committed ones: ``tests/support/family_goldens_resources.py``). They are written from a packed model (its own
tokenizer member, so the port is judged on exactly what the app will carry), in the formats the
WordPiece goldens use (``golden_inputs.tokenization_record``, JSONL by ``render_jsonl``), plus each
single text's character offsets (``offsets``: ``[start, end)`` per token, without ``<s>`` / ``</s>``;
what NER and QA map answers back with):

* ``<member>``: the pack's tokenizer file, unchanged (``bpe.json`` or ``spiece.model``);
* ``golden_tokenization.jsonl``: one record per case: text(s), budget, tokens, ids, type ids, mask,
  truncated (or ``error``), and ``offsets`` for single texts.

The cases are the WordPiece goldens' edge texts and random texts (``golden_inputs``) at a few budgets,
pairs included, so truncation and ``</s></s>`` joins are covered.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from albert_edge.android.golden_inputs import EDGE_TEXTS, GoldenCase, random_texts, render_jsonl, tokenization_record
from albert_edge.errors import ModelFileError, TokenizerError
from albert_edge.outputs.atomic import ensure_writable_dir, write_bytes_atomic
from albert_edge.runtime.pack import ModelPack
from albert_edge.tokenizer import load_tokenizer

GOLDEN_FILE = "golden_tokenization.jsonl"
BUDGETS = (8, 16, 128)


def family_cases(texts: Sequence[str] | None = None) -> list[GoldenCase]:
    """Every text alone at each budget, and consecutive texts as pairs at each budget; casing is the
    tokenizer's own (both families are cased), recorded as False."""
    texts = list(texts) if texts is not None else [*EDGE_TEXTS, *random_texts(60)]
    cases = [GoldenCase(t, None, budget, False) for t in texts for budget in BUDGETS]
    cases += [GoldenCase(a, b, budget, False) for a, b in zip(texts[::2], texts[1::2]) for budget in BUDGETS]
    return cases


def family_records(pack: ModelPack, cases: Sequence[GoldenCase], source: str) -> list[dict[str, Any]]:
    """The golden records of ``cases`` under ``pack``'s own tokenizer (one of the families above)."""
    return asset_records(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, cases, source)


def asset_records(tokenizer_type: str, asset: bytes, do_lower_case: bool, cases: Sequence[GoldenCase],
                  source: str) -> list[dict[str, Any]]:
    """The golden records of ``cases`` under the tokenizer a pack member ``asset`` of ``tokenizer_type`` holds
    (how albert-core's committed goldens are made from its committed ``bpe.json`` and XLM-R model)."""
    tokenizer = load_tokenizer(tokenizer_type, asset, do_lower_case, source)
    if tokenizer_type != "bytelevel_bpe" and not getattr(tokenizer, "fairseq", False):
        raise ModelFileError(f"{source}: its {tokenizer_type} tokenizer is albert-core's own; its goldens "
                             "come from `albert-edge android-assets`")
    records = []
    for case in cases:
        record = tokenization_record(case, tokenizer)  # type: ignore[arg-type]
        if case.text_b is None and "error" not in record:
            try:
                record["offsets"] = [[s, e] for _, s, e in tokenizer.tokenize_with_offsets(case.text_a)]
            except TokenizerError as exc:
                record["offsets_error"] = str(exc)
        records.append(record)
    return records


def write_family_goldens(pack: ModelPack, out_dir: str | Path, source: str,
                         texts: Sequence[str] | None = None) -> list[Path]:
    """Write the tokenizer member and ``golden_tokenization.jsonl`` into ``out_dir``; the paths written."""
    records = family_records(pack, family_cases(texts), source)
    out = ensure_writable_dir(out_dir)
    return [write_bytes_atomic(out / pack.tokenizer_file, pack.tokenizer_asset),
            write_bytes_atomic(out / GOLDEN_FILE, render_jsonl(records).encode("utf-8"))]
