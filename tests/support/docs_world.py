"""The folder the documentation's examples run in: every placeholder path they name, made for real.

README.md and docs/*.md speak of ``path/to/checkpoint``, ``calib.txt``, ``dev.tsv``, ``models/``,
``minilm/``, ``ner/``, ``qa/``, ``sts/`` ... tests/test_docs_run.py runs their blocks in a copy of this
folder. Checkpoints are tiny random ALBERTs written by the project's own Hugging Face writer (each
task's head); model files are made by the same ``albert-edge`` commands a user runs, so when a command
changes the names of what it writes, the documented paths must follow it or the docs test fails.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from albert_edge.cli import main
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.hf import write_hf_checkpoint

# Characters of the Chinese examples plus the English words of the NER / QA / STS examples.
CHARS = "这家酒店服务很好差不错太了房间干净脏环境糟糕推荐的我们是一个非常满意失望段文字"
WORDS = ("irene walker lives works for vandelay imports in new york rome who which company is jack turner "
         "linked to hooli how do i reset it my password a man playing guitar person plays music the").split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *CHARS, *dict.fromkeys(WORDS), ".", "?", ","]
NER_LABELS = "O,B-PER,I-PER,B-ORG,I-ORG,B-LOC,I-LOC"

#: Names a snippet uses without defining them (the prose around it says what they stand for).
SNIPPET_NAMES = {
    "texts": ["这家酒店服务很好", "房间太脏了"],
    "text": "Irene Walker lives in Rome.",
    "text_a": "这家酒店服务很好",
    "text_b": "房间干净",
    "question": "Who lives in Rome?",
    "context": "Irene Walker lives in Rome. Jack Turner works for Hooli in New York.",
}


def _checkpoint(target: Path, seed: int, max_positions: int = 64, **head) -> Path:
    config = AlbertConfig(vocab_size=len(VOCAB), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64, max_position_embeddings=max_positions)
    checkpoint = write_hf_checkpoint(random_weights(config, seed=seed, **head), target)
    (checkpoint / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return checkpoint


def _texts(rng: random.Random, n: int) -> list[str]:
    return ["".join(rng.choice(CHARS) for _ in range(rng.randint(4, 30))) for _ in range(n)]


def _albert_edge(*argv: str) -> None:
    code = main(["--no-progress", *argv])
    if code != 0:
        raise RuntimeError(f"albert-edge {' '.join(argv)} exited {code} while building the docs world")


def build_docs_world(root: Path) -> Path:
    """Write the checkpoints, data files and model files the documentation names into ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    # 128 positions: the length docs/pack_format.md's snippet packs beside this model's flatbuffer.
    classifier = _checkpoint(root / "path" / "to" / "checkpoint", seed=0, max_positions=128, num_labels=2)
    shutil.copy(classifier / "vocab.txt", root / "vocab.txt")
    (root / "calib.txt").write_text("\n".join(_texts(rng, 300)) + "\n", encoding="utf-8")
    for name, rows in (("dev.tsv", 300), ("test.tsv", 60)):
        labelled = [f"{rng.choice(('neg', 'pos'))}\t{text}" for text in _texts(rng, rows)]
        (root / name).write_text("\n".join(labelled) + "\n", encoding="utf-8")
    build = root / ".build"
    _albert_edge("quantize", str(classifier), "--mode", "dynamic", "--formats", "tflite,onnx", "--labels", "neg,pos",
                 "--rounds", "2", "--out", str(root / "models"))
    shutil.copytree(root / "models", root / "demo_out" / "models")
    shutil.copy(quantized_tflite(root / "models"), root / "model_int8.tflite")
    embedder = _checkpoint(build / "embedder", seed=1, num_labels=None, pooler=False)
    _albert_edge("quantize", str(embedder), "--mode", "dynamic", "--formats", "tflite", "--pooling", "mean",
                 "--normalize", "--rounds", "2", "--out", str(root / "minilm"))
    # A window shorter than 32 tokens: the documented stride must fit small models too.
    ner = _checkpoint(build / "ner", seed=2, max_positions=32, num_labels=len(NER_LABELS.split(",")), pooler=False)
    _albert_edge("convert", str(ner), "--formats", "tflite", "--labels", NER_LABELS, "--task",
                 "token_classification", "--out", str(root / "ner"))
    qa = _checkpoint(build / "qa", seed=3, num_labels=None, span_head=True)
    _albert_edge("convert", str(qa), "--formats", "tflite", "--out", str(root / "qa"))
    sts = _checkpoint(build / "sts", seed=4, num_labels=1)
    _albert_edge("convert", str(sts), "--formats", "tflite", "--out", str(root / "sts"))
    return root


def quantized_tflite(folder: Path) -> Path:
    """A quantized .tflite that ``quantize`` wrote into ``folder`` (whatever it names its files)."""
    from albert_edge.runtime.pack import read_pack

    found = [p for p in sorted(folder.rglob("*.tflite")) if read_pack(p).variant != "fp32"]
    if not found:
        raise FileNotFoundError(f"{folder}: no quantized .tflite")
    return found[0]


def float_tflite(folder: Path) -> Path:
    """The fp32 .tflite ``convert`` or ``quantize`` wrote into ``folder``."""
    from albert_edge.runtime.pack import read_pack

    return next(p for p in sorted(folder.rglob("*.tflite")) if read_pack(p).variant == "fp32")
