"""English sentences with people, cities and organisations, annotated by character span.

Written for the token-classification tests: templates x names, so the train and held-out sets
share a vocabulary but the held-out sentences pair names and templates the training never saw.
"""

from __future__ import annotations

import itertools
import random

PEOPLE = ["Alice Smith", "Bob Jones", "Carol White", "David Brown", "Emma Clark", "Frank Miller", "Grace Lee",
          "Henry Adams", "Irene Walker", "Jack Turner"]
CITIES = ["Paris", "Berlin", "London", "Madrid", "New York", "Tokyo", "Rome", "Vienna", "Oslo", "Cairo"]
ORGS = ["Acme Corp", "Globex", "Initech", "Umbrella Group", "Stark Industries", "Wayne Enterprises", "Hooli",
        "Vandelay Imports"]
TEMPLATES = [
    "{PER} moved to {LOC} last year.",
    "{PER} works for {ORG} in {LOC}.",
    "The {ORG} office in {LOC} hired {PER}.",
    "Yesterday {PER} flew from {LOC} to {LOC2}.",
    "{ORG} opened a new store in {LOC}, said {PER}.",
    "In {LOC}, {PER} met the chief of {ORG}.",
    "{PER} left {ORG} and joined {ORG2}.",
    "We visited {LOC} with {PER} in the spring.",
]
LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC", "B-ORG", "I-ORG"]


def fill(template: str, values: dict[str, str]) -> tuple[str, list[tuple[int, int, str]]]:
    """The sentence and its (start, end, type) entities."""
    text, entities, rest = "", [], template
    while "{" in rest:
        before, _, tail = rest.partition("{")
        key, _, rest = tail.partition("}")
        text += before
        value = values[key]
        entities.append((len(text), len(text) + len(value), key.rstrip("2")))
        text += value
    return text + rest, entities


def sentences(seed: int, n: int) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """``n`` seeded sentences."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        template = rng.choice(TEMPLATES)
        loc, loc2 = rng.sample(CITIES, 2)
        org, org2 = rng.sample(ORGS, 2)
        out.append(fill(template, {"PER": rng.choice(PEOPLE), "LOC": loc, "LOC2": loc2, "ORG": org, "ORG2": org2}))
    return out


def vocab() -> list[str]:
    """Specials, every lower-cased word and punctuation mark of the material, and a few ## pieces."""
    words = set()
    for text in itertools.chain(TEMPLATES, PEOPLE, CITIES, ORGS):
        for word in text.replace("{", " ").replace("}", " ").replace(",", " , ").replace(".", " . ").split():
            if word not in ("PER", "LOC", "LOC2", "ORG", "ORG2"):
                words.add(word.lower())
    # Split a few names into WordPieces so entities span ## continuations too.
    for name in ("vandelay", "initech", "hooli"):
        words.discard(name)
    pieces = ["van", "##del", "##ay", "init", "##ech", "hoo", "##li"]
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words) + pieces
