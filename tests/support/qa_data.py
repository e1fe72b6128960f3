"""Questions over the NER test sentences (tests/support/ner_data.py), with answers as character spans.

A context is one to three sentences about different people; a question names one of them and asks
for the city or the company of that person's sentence ("Which city is Grace Lee linked to?",
"李娜和哪个城市有关？"). The model has to find the person's sentence and then the entity in it, so
it must read the question, not just tag cities. English and Chinese; the held-out questions pair
names, templates and contexts the training never saw.
"""

from __future__ import annotations

import random
import re
from pathlib import Path

from tests.support.ner_data import sentences
from tests.support.ner_data import vocab as ner_vocab

#: Real English sentences (tests/data/english_sentences.txt) mixed into contexts as distractors:
#: the first 30 for training, the rest only in held-out long contexts.
FILLER = [line.strip() for line in (Path(__file__).parents[1] / "data" / "english_sentences.txt")
          .read_text(encoding="utf-8").splitlines() if line.strip()]
TRAIN_FILLER, HELD_OUT_FILLER = FILLER[:30], FILLER[30:]

QUESTION_WORDS = ["which", "city", "company", "is", "linked", "?"]
ZH_QUESTION = {"LOC": "{PER}和哪个城市有关？", "ORG": "{PER}和哪家公司有关？"}
EN_QUESTION = {"LOC": "Which city is {PER} linked to?", "ORG": "Which company is {PER} linked to?"}

Example = dict  # {"question", "context", "answers": [{"text", "answer_start"}]}


def _first(entities, kind):
    return next(((s, e) for s, e, k in entities if k == kind), None)


def examples(seed: int, n: int, chinese: bool = False, max_sentences: int = 3,
             min_sentences: int = 1, filler: list[str] | None = None, max_filler: int = 0) -> list[Example]:
    """``n`` seeded questions, each over ``min_sentences``..``max_sentences`` sentences with distinct
    people, plus up to ``max_filler`` sentences of ``filler`` (English only) at random places."""
    rng = random.Random(seed)
    pool = sentences(seed + 1000, 6 * n + 50, chinese=chinese)
    out = []
    while len(out) < n:
        k = rng.randint(min_sentences, max_sentences)
        picked = rng.sample(pool, k)
        people = [text[s:e] for text, ents in picked for s, e, t in ents if t == "PER"]
        if len(set(people)) != len(people):
            continue  # a question must name exactly one sentence's person
        target = rng.randrange(k)
        text, ents = picked[target]
        kind = rng.choice(["LOC", "ORG"])
        span = _first(ents, kind)
        if span is None:
            continue
        person = next(text[s:e] for s, e, t in ents if t == "PER")
        for _ in range(rng.randint(0, max_filler) if filler else 0):
            picked.insert(rng.randint(0, len(picked)), (rng.choice(filler), []))
        target = next(i for i, (sentence, _) in enumerate(picked) if sentence == text)
        context, offset = "", 0
        for i, (sentence, _) in enumerate(picked):
            if context:
                context += "" if chinese else " "
            if i == target:
                offset = len(context)
            context += sentence
        start = offset + span[0]
        answer = context[start:offset + span[1]]
        template = ZH_QUESTION if chinese else EN_QUESTION
        out.append({"question": template[kind].format(PER=person), "context": context,
                    "answers": [{"text": answer, "answer_start": start}]})
    return out


def vocab() -> list[str]:
    """The NER vocabulary plus the question words and characters and the filler's words."""
    words = ner_vocab()
    have = set(words)
    filler_words = sorted({w for line in FILLER for w in re.findall(r"\w+|[^\w\s]", line.lower())} - have)
    extra = [w for w in QUESTION_WORDS if w not in have and w not in filler_words] + filler_words
    extra += sorted({ch for q in ZH_QUESTION.values() for ch in q.replace("{PER}", "") if ch not in have})
    return words + extra


def training_set() -> list[Example]:
    return (examples(seed=1, n=900, max_sentences=2, filler=TRAIN_FILLER, max_filler=2)
            + examples(seed=2, n=600, chinese=True, max_sentences=2))


def held_out(n: int = 40, chinese: bool = False) -> list[Example]:
    """Questions whose (question, context) pair the training never saw."""
    seen = {(e["question"], e["context"]) for e in training_set()}
    data = examples(seed=21 if not chinese else 22, n=3 * n, chinese=chinese, max_sentences=2)
    return [e for e in data if (e["question"], e["context"]) not in seen][:n]
