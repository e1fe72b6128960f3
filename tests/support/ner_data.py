"""English and Chinese sentences with people, cities and organisations, annotated by character span.

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
ZH_PEOPLE = ["张伟", "王芳", "李娜", "刘洋", "陈静", "赵磊", "孙丽", "周杰"]
ZH_CITIES = ["北京", "上海", "广州", "深圳", "杭州", "成都", "武汉", "南京"]
ZH_ORGS = ["阿里巴巴", "腾讯", "华为", "小米", "百度", "京东"]
ZH_TEMPLATES = [
    "{PER}去年搬到了{LOC}。",
    "{PER}在{LOC}的{ORG}工作。",
    "{ORG}在{LOC}开了一家新店，{PER}说。",
    "昨天{PER}从{LOC}飞往{LOC2}。",
    "我们和{PER}一起去了{LOC}。",
    "{PER}离开了{ORG}，加入了{ORG2}。",
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


def sentences(seed: int, n: int, chinese: bool = False) -> list[tuple[str, list[tuple[int, int, str]]]]:
    """``n`` seeded sentences (English, or Chinese with ``chinese``)."""
    rng = random.Random(seed)
    templates, people, cities, orgs = ((ZH_TEMPLATES, ZH_PEOPLE, ZH_CITIES, ZH_ORGS) if chinese
                                       else (TEMPLATES, PEOPLE, CITIES, ORGS))
    out = []
    for _ in range(n):
        template = rng.choice(templates)
        loc, loc2 = rng.sample(cities, 2)
        org, org2 = rng.sample(orgs, 2)
        out.append(fill(template, {"PER": rng.choice(people), "LOC": loc, "LOC2": loc2, "ORG": org, "ORG2": org2}))
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
    # Chinese: one token per character, as BERT's tokenizer splits CJK ideographs.
    chinese = sorted({ch for text in itertools.chain(ZH_TEMPLATES, ZH_PEOPLE, ZH_CITIES, ZH_ORGS)
                      for ch in text if ch not in "{}" and not ch.isascii()})
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + sorted(words) + pieces + chinese
