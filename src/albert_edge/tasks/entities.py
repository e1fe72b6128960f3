"""Entity spans from per-token tag sequences (BIO, BIOES/BILOU, IO), and entity-level F1.

Pure functions over label strings, shared by the runtime (``TokenClassifier``) and by the
quantize/bench drift metric, so that what is judged is exactly what an app is shown.

Decoding is lenient the way Hugging Face's ``aggregation_strategy="simple"`` and seqeval's
default mode are: an ``I-X`` (or ``E-X``) that does not continue an open ``X`` entity starts a
new one rather than being dropped, so a model that forgets the ``B-`` still yields the entity.
``E-X`` and ``S-X`` close their entity; an unprefixed label ``X`` (IO scheme) acts as ``I-X``;
"O" and anything starting with "O" outside a prefix closes the open entity.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

#: Prefix -> role. BILOU's U-/L- are BIOES's S-/E-.
_ROLES = {"B": "begin", "I": "inside", "E": "end", "L": "end", "S": "single", "U": "single"}


def parse_tag(tag: str) -> tuple[str, str | None]:
    """("begin"|"inside"|"end"|"single"|"outside", entity type or None) for one label string."""
    if tag == "O" or not tag:
        return "outside", None
    for sep in ("-", "_"):
        head, found, rest = tag.partition(sep)
        if found and head.upper() in _ROLES and rest:
            return _ROLES[head.upper()], rest
    return "inside", tag


def decode_tags(tags: Sequence[str]) -> list[tuple[int, int, str]]:
    """Token tags -> entities as (first token, last token + 1, type), in order."""
    out: list[tuple[int, int, str]] = []
    start: int | None = None
    kind: str | None = None

    def close(end: int) -> None:
        nonlocal start, kind
        if start is not None and kind is not None:
            out.append((start, end, kind))
        start, kind = None, None

    for i, tag in enumerate(tags):
        role, typ = parse_tag(tag)
        if role == "outside":
            close(i)
        elif role == "begin":
            close(i)
            start, kind = i, typ
        elif role == "single":
            close(i)
            out.append((i, i + 1, typ))  # type: ignore[arg-type]
        else:  # inside / end
            if start is None or kind != typ:
                close(i)
                start, kind = i, typ
            if role == "end":
                close(i + 1)
    close(len(tags))
    return out


def entity_counts(predicted: Iterable[tuple], gold: Iterable[tuple]) -> tuple[int, int, int]:
    """(true positives, predicted count, gold count) of exact (start, end, type) matches."""
    p, g = set(predicted), set(gold)
    return len(p & g), len(p), len(g)


def f1_from_counts(tp: int, predicted: int, gold: int) -> float:
    """Micro F1; 1.0 when both sides have no entities (nothing to get wrong)."""
    if predicted == 0 and gold == 0:
        return 1.0
    return 2.0 * tp / (predicted + gold)
