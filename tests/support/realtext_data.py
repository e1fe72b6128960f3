"""Real English text with reproducible NER and QA labels, from pinned registry packages only.

Text: the 5 190 NYT editorial sentences that ``vaderSentiment==3.3.2``'s sdist ships
(``additional_resources/hutto_ICWSM_2014.tar.gz``, ids ``<editorial>_<sentence>``, so the sentences of
one editorial are known and in order; sha256 of the sdist checked by tests/support/registry_cache.py).

NER labels, a documented deterministic rule (no model, no hand labels):

- ``LOC``: a country (ISO 3166-1 ``name`` / ``common_name``) or US state (ISO 3166-2 ``US-*`` of type
  State) name, and ``LANG``: an ISO 639-1 language name of one word ("English", "Arabic", "Chinese"),
  both from the databases that the PyPI wheel ``pycountry==24.6.1`` ships (sha256 checked), matched
  case-sensitively on whole words, longest name first;
- ``NAME``: any other maximal run of capitalised words (first letter upper case; "I" excluded) joined
  by single spaces, except a word that opens the sentence or follows ``. ! ? : ; " (`` (capitalised by
  position, not by being a name).

Words are ``[A-Za-z]+`` joined by ``.`` or ``-`` ("U.S", "Jean-Claude"); an apostrophe ends one.

QA, cloze-style extractive questions (the unsupervised-QA recipe of Lewis et al., 2019): the context is
two consecutive sentences of one editorial; the answer is one NER entity of one of them (seeded
choice); the question is up to 8 words either side of the entity in its own sentence with the entity
replaced by "what" and a question mark. The answer is the entity's exact character span.

Splits are by editorial (seeded), so eval sentences and contexts come from editorials training never saw.
"""

from __future__ import annotations

import json
import random
import re
import zipfile
from functools import lru_cache

from tests.support.registry_cache import (
    VADER_NYT,
    pip_download,
    sha256,
    vader_ground_truth,
)

PYCOUNTRY_REQUIREMENT = "pycountry==24.6.1"
PYCOUNTRY_WHEEL = "pycountry-24.6.1-py3-none-any.whl"
PYCOUNTRY_WHEEL_SHA256 = "f1a4fb391cd7214f8eefd39556d740adcc233c778a27f8942c8dca351d6ce06f"
LABELS = ["O", "B-LOC", "I-LOC", "B-LANG", "I-LANG", "B-NAME", "I-NAME"]
WORD = re.compile(r"[A-Za-z]+(?:[.\-][A-Za-z]+)*")
#: A capitalised word right after one of these (or first in the sentence) is capitalised by position.
OPENERS = set('.!?:;"(')
QUESTION_CONTEXT_WORDS = 8

Entity = tuple[int, int, str]


def nyt_editorials() -> list[list[str]]:
    """The NYT editorial sentences grouped by editorial, in file order (ids ``doc_sentence``)."""
    docs: dict[str, list[str]] = {}
    for parts in vader_ground_truth(VADER_NYT):
        if len(parts) < 3:
            continue
        text = " ".join(" ".join(parts[2:]).split()).replace("''", '"')
        if text:
            docs.setdefault(parts[0].split("_")[0], []).append(text)
    return list(docs.values())


@lru_cache(maxsize=1)
def gazetteer() -> dict[tuple[str, ...], str]:
    """Word tuple -> type (LOC, LANG) from pycountry's ISO 3166-1, 3166-2 (US states) and 639 databases."""
    wheel = pip_download(PYCOUNTRY_REQUIREMENT, PYCOUNTRY_WHEEL, sdist=False)
    assert sha256(wheel) == PYCOUNTRY_WHEEL_SHA256, f"{wheel}: sha256 mismatch (expected {PYCOUNTRY_WHEEL_SHA256})"
    with zipfile.ZipFile(wheel) as zf:
        countries = json.loads(zf.read("pycountry/databases/iso3166-1.json"))["3166-1"]
        subdivisions = json.loads(zf.read("pycountry/databases/iso3166-2.json"))["3166-2"]
        languages = json.loads(zf.read("pycountry/databases/iso639-3.json"))["639-3"]
    names: dict[tuple[str, ...], str] = {}
    for c in countries:
        for key in ("name", "common_name"):
            if key in c:
                names[tuple(WORD.findall(c[key]))] = "LOC"
    for s in subdivisions:
        if s["code"].startswith("US-") and s["type"] == "State":
            names[tuple(WORD.findall(s["name"]))] = "LOC"
    for lang in languages:
        if "alpha_2" in lang and WORD.fullmatch(lang["name"]):
            names.setdefault((lang["name"],), "LANG")
    return names


def entities(text: str) -> list[Entity]:
    """(start, end, type) of every entity of ``text`` by the module's rule, in order."""
    words = list(WORD.finditer(text))
    glued = [i > 0 and text[words[i - 1].end():words[i].start()] == " " for i in range(len(words))]
    names, longest = gazetteer(), max(len(k) for k in gazetteer())
    out: list[Entity] = []
    i = 0
    while i < len(words):
        for n in range(min(longest, len(words) - i), 0, -1):
            key = tuple(w.group() for w in words[i:i + n])
            if key in names and all(glued[i + 1:i + n]):
                out.append((words[i].start(), words[i + n - 1].end(), names[key]))
                i += n
                break
        else:
            if _capitalised(words[i].group()) and not _by_position(text, words, i):
                j = i + 1
                while (j < len(words) and glued[j] and _capitalised(words[j].group())
                       and not any(tuple(w.group() for w in words[j:j + n]) in names for n in range(1, longest + 1))):
                    j += 1
                out.append((words[i].start(), words[j - 1].end(), "NAME"))
                i = j
            else:
                i += 1
    return out


def _capitalised(word: str) -> bool:
    return word[0].isupper() and word != "I"


def _by_position(text: str, words: list, i: int) -> bool:
    before = text[:words[i].start()].rstrip()
    return i == 0 or not before or before[-1] in OPENERS


def split_editorials(seed: int, eval_docs: int) -> tuple[list[list[str]], list[list[str]]]:
    """(train, eval) editorials by a seeded shuffle: no editorial is in both."""
    docs = nyt_editorials()
    random.Random(seed).shuffle(docs)
    return docs[eval_docs:], docs[:eval_docs]


def ner_examples(docs: list[list[str]]) -> list[tuple[str, list[Entity]]]:
    """(sentence, entities) of every sentence of ``docs``."""
    return [(s, entities(s)) for doc in docs for s in doc]


def qa_examples(docs: list[list[str]], seed: int) -> list[dict]:
    """SQuAD-style cloze questions: per two consecutive sentences of an editorial with an entity, one question."""
    rng = random.Random(seed)
    out = []
    for doc in docs:
        for k in range(0, len(doc) - 1, 2):
            pair = doc[k:k + 2]
            found = [(n, e) for n, s in enumerate(pair) for e in entities(s)]
            if not found:
                continue
            n, (s, e, _) = rng.choice(found)
            sentence = pair[n]
            before = WORD.findall(sentence[:s])[-QUESTION_CONTEXT_WORDS:]
            after = WORD.findall(sentence[e:])[:QUESTION_CONTEXT_WORDS]
            offset = 0 if n == 0 else len(pair[0]) + 1
            context = " ".join(pair)
            out.append({"id": f"q{len(out)}", "question": " ".join(before + ["what"] + after) + "?",
                        "context": context,
                        "answers": [{"text": context[offset + s:offset + e], "answer_start": offset + s}]})
    return out
