"""From files to a fine-tuned checkpoint directory: what ``albert-edge finetune`` runs.

Resolves the config (a named preset, a config file, or the ``--init`` checkpoint's own),
the vocab (verified: the albert_tiny preset must get the exact bert-base-chinese vocab it
was designed for, any other config a vocab of its ``vocab_size``) and the labels, then
trains and writes the brightmart-format checkpoint directory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from albert_edge.inputs import option_ranges as ranges
from albert_edge.inputs.data import (
    VOCAB_MD5,
    data_hash,
    infer_labels,
    label_ids,
    md5_of_file,
    read_text_lines,
    read_tsv,
)
from albert_edge.errors import ConfigError, DataError
from albert_edge.finetune.embeddings import ppmi_svd_embeddings
from albert_edge.finetune.teacher import read_soft_targets
from albert_edge.model.config import fit_max_seq_len
from albert_edge.finetune.trainer import (
    FinetuneResult,
    FinetuneSettings,
    encode_examples,
    evaluate_weights,
    finetune,
    training_init,
    with_classifier,
    write_finetuned,
)

#: ``--init-embeddings`` choices for random init: N(0, 0.02), or PPMI-SVD vectors of the train texts.
INIT_EMBEDDINGS = ("random", "ppmi-svd")
#: Names accepted by ``--config`` besides a path to a config JSON.
CONFIG_PRESETS = ("albert_tiny",)


#: Each training setting's flag and range (``option_ranges``, shared with the CLI's converters).
_SETTING_RANGES = {
    "epochs": ("--epochs", ranges.EPOCHS), "max_seq_len": ("--max-seq-len", ranges.MODEL_SEQ_LEN),
    "batch_size": ("--batch-size", ranges.BATCH_SIZE), "eval_batch_size": ("eval_batch_size", ranges.BATCH_SIZE),
    "learning_rate": ("--lr", ranges.LEARNING_RATE), "warmup_ratio": ("--warmup", ranges.SHARE_BELOW_ONE),
    "weight_decay": ("--weight-decay", ranges.WEIGHT_DECAY), "dropout": ("--dropout", ranges.SHARE_BELOW_ONE),
    "clip_norm": ("clip_norm", ranges.CLIP_NORM), "seed": ("--seed", ranges.SEED), "threads": ("--threads", ranges.THREADS),
    "max_steps": ("--max-steps", ranges.COUNT), "evals_per_epoch": ("--evals-per-epoch", ranges.COUNT),
    "distill_weight": ("--distill-weight", ranges.SHARE), "steps": ("--steps", ranges.COUNT),
    "mask_prob": ("--mask-prob", ranges.OPEN_SHARE), "evals": ("--evals", ranges.COUNT),
}


def check_settings(settings: object) -> None:
    """Refuse a training setting outside its range before TensorFlow sees it (``DataError``, one line).

    A NaN learning rate trained "successfully" into a NaN checkpoint, ``threads=-1`` aborted inside
    TensorFlow's C++ with nothing on stderr, and a batch size of 0 crashed; the Python API must
    refuse what the CLI refuses. Works for ``FinetuneSettings`` and ``PretrainSettings`` alike.
    """
    for name, (flag, allowed) in _SETTING_RANGES.items():
        ranges.check_optional(flag, getattr(settings, name, None), allowed, DataError)


def resolve_config(name_or_path: str):
    """``albert_tiny`` -> ``albert_tiny_zh_config()``; anything else is read with ``load_config``."""
    from albert_edge.model import albert_tiny_zh_config, load_config

    if name_or_path == "albert_tiny":
        return albert_tiny_zh_config()
    if not Path(name_or_path).is_file():
        raise ConfigError(f"--config {name_or_path}: expected one of {list(CONFIG_PRESETS)} or a config JSON file")
    return load_config(name_or_path)


def vocab_candidates(vocab: str | None, init: str | None, beside: Sequence[str] = ()) -> list[Path]:
    """Where the training vocab may be, in order: ``--vocab``, else a ``vocab.txt`` beside the ``--init``
    checkpoint (as ``convert`` finds it), beside a ``--config`` JSON, or beside the data files.

    Only an explicit ``--vocab`` is looked at alone: a training command given no vocab used to
    look nowhere when there was no ``--init``, although the data folder usually holds one.
    """
    if vocab:
        return [Path(vocab)]
    folders = [Path(init) if Path(init).is_dir() else Path(init).parent] if init else []
    folders += [Path(p).parent for p in beside if p and Path(p).is_file()]
    return list(dict.fromkeys(folder / "vocab.txt" for folder in folders))


def resolve_vocab(vocab: str | None, init: str | None, config, beside: Sequence[str] = ()) -> Path:
    """The vocab to train with, checked against the config (and md5 for the 21128-token preset).

    ``beside``: other files (a config JSON, the data) whose folder may hold the ``vocab.txt``.
    """
    candidates = vocab_candidates(vocab, init, beside)
    path = next((p for p in candidates if p.is_file()), None)
    if path is None:
        raise DataError(f"--vocab: no vocab.txt found (looked at {', '.join(map(str, candidates)) or 'nothing'}); "
                        "pass --vocab PATH (albert_tiny needs the bert-base-chinese vocab, e.g. "
                        "examples/albert_tiny_zh_sentiment/vocab.txt)")
    from albert_edge.tokenizer import WordPieceTokenizer
    from albert_edge.tokenizer.vocab_fit import vocab_fits

    size = WordPieceTokenizer.from_vocab_file(path).vocab_size
    if not vocab_fits(size, config.vocab_size):  # the same rule convert, quantize and the runtime apply
        raise DataError(f"{path}: vocab has {size} tokens, the config expects vocab_size {config.vocab_size} "
                        "(equal, or the token count rounded up to a multiple of 8-128 for a padded table)")
    if config.vocab_size == 21128 and md5_of_file(path) != VOCAB_MD5:
        raise DataError(f"{path}: md5 {md5_of_file(path)} is not the bert-base-chinese vocab ({VOCAB_MD5})")
    return path


def resolve_labels(labels: str | None, init: str | None, train) -> tuple[str, ...]:
    """Labels from a labels.txt path or ``a,b`` list, else the init checkpoint's labels.txt, else sorted.

    A name given twice is refused: the second would take the id, and class 0 would never be trained.
    """
    if labels:
        source = labels
        names = tuple(str(x) for x in read_text_lines(labels)) if Path(labels).is_file() else \
            tuple(x.strip() for x in labels.split(",") if x.strip())
    elif init and (Path(init) if Path(init).is_dir() else Path(init).parent).joinpath("labels.txt").is_file():
        source = str((Path(init) if Path(init).is_dir() else Path(init).parent) / "labels.txt")
        names = tuple(str(x) for x in read_text_lines(source))
    else:
        return infer_labels(train)
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise DataError(f"{source}: label {repeated[0]!r} is listed more than once in {list(names)}")
    return names


def finetune_files(
    config: str,
    train_path: str,
    dev_path: str,
    out_dir: str,
    settings: FinetuneSettings,
    vocab: str | None = None,
    init: str | None = None,
    labels: str | None = None,
    test_path: str | None = None,
    log: Callable[[str], None] = print,
    progress: bool = True,
    init_embeddings: str = "random",
    teacher: str | None = None,
) -> tuple[FinetuneResult, dict]:
    """Train from TSV files and write the checkpoint directory; returns the result and its summary.

    ``teacher``: a soft-target file for ``train_path`` (``finetune.teacher``), mixed into the
    loss with ``settings.distill_weight``.
    """
    from albert_edge.model import load_checkpoint
    from albert_edge.tokenizer import Preprocessor, WordPieceTokenizer

    check_settings(settings)
    if init:
        weights = load_checkpoint(init)
        model_config = weights.config
        if model_config.model_type not in ("albert", "bert"):  # it saves TF1 ALBERT/BERT (tf1_config_dict)
            raise ConfigError(f"{init}: finetune --init takes ALBERT or BERT checkpoints, this is "
                              f"{model_config.model_type} (fine-tune it with transformers, then convert it)")
    else:
        model_config = resolve_config(config)
        weights = None
    train = read_tsv(train_path)
    label_names = resolve_labels(labels, init, train)
    train = read_tsv(train_path, label_names)
    dev = read_tsv(dev_path, label_names)
    train_hash = data_hash(train)
    soft_targets = None
    if teacher:
        soft_targets = read_soft_targets(teacher, label_names, train_hash, len(train))
    elif settings.distill_weight > 0:
        raise ConfigError("--distill-weight needs --teacher FILE (the teacher's soft targets for --train)")
    vocab_path = resolve_vocab(vocab, init, model_config, beside=(config, train_path, dev_path))
    # None (the CLI default): 128, or the model's positions if fewer; the rule convert and quantize use.
    settings = replace(settings, max_seq_len=fit_max_seq_len(settings.max_seq_len, model_config, "the model config"))
    preprocessor = Preprocessor(WordPieceTokenizer.from_vocab_file(vocab_path), settings.max_seq_len)
    if init_embeddings not in INIT_EMBEDDINGS:
        raise ConfigError(f"--init-embeddings {init_embeddings!r}: expected one of {list(INIT_EMBEDDINGS)}")
    if weights is None:
        vectors = None
        if init_embeddings == "ppmi-svd":
            ids = [seq[1:-1] for seq in encode_examples(train, preprocessor, label_names).input_ids]
            vectors = ppmi_svd_embeddings(ids, model_config.vocab_size, model_config.embedding_size,
                                          seed=settings.seed)
        weights = training_init(model_config, len(label_names), settings.seed, word_embeddings=vectors)
    else:
        weights = with_classifier(weights, len(label_names), settings.seed)
    log(f"labels {list(label_names)}; vocab {vocab_path} (md5 {md5_of_file(vocab_path)}); "
        f"{weights.num_parameters()} parameters; init {weights.source}")
    if soft_targets is not None:
        agree = float((soft_targets.argmax(axis=1) == label_ids(train, label_names)).mean())
        log(f"teacher {teacher}: soft targets for {len(train)} examples, argmax agrees with the labels on "
            f"{agree:.4f}; distill weight {settings.distill_weight}")
    result = finetune(weights, train, dev, preprocessor, label_names, settings, log=log, progress=progress,
                      soft_targets=soft_targets)
    summary = {
        "train": {"path": str(train_path), "examples": len(train), "data_hash": train_hash},
        "dev": {"path": str(dev_path), "examples": len(dev), "data_hash": data_hash(dev)},
        "labels": list(label_names),
        "init": init or f"random (training_init), word embeddings: {init_embeddings}",
        "interrupted": result.interrupted,
    }
    if teacher:
        summary["teacher"] = {"path": str(teacher), "md5": md5_of_file(teacher)}
    if test_path:
        test = read_tsv(test_path, label_names)
        test_acc, _ = evaluate_weights(result.weights, test, preprocessor, label_names, settings.eval_batch_size)
        summary["test"] = {"path": str(test_path), "examples": len(test), "data_hash": data_hash(test),
                           "accuracy": test_acc}
        log(f"test accuracy of the best checkpoint (step {result.best_step}): {test_acc:.4f}")
    write_finetuned(result, out_dir, vocab_path, label_names, settings, extra_log=summary)
    log(f"wrote {result.checkpoint_prefix} (best dev accuracy {result.best_dev_accuracy:.4f} at step {result.best_step})")
    return result, summary


def read_pretraining_texts(paths: Sequence[str]) -> list[str]:
    """Texts of each file: the text columns of a ``.tsv`` (labels unused), else one text per line."""
    texts: list[str] = []
    for path in paths:
        if str(path).endswith(".tsv"):
            for ex in read_tsv(path):
                texts.extend(t for t in (ex.text_a, ex.text_b) if t)
        else:
            texts.extend(read_text_lines(path))
    return texts


def pretrain_files(
    config: str,
    text_paths: Sequence[str],
    heldout_path: str,
    out_dir: str,
    settings,
    vocab: str | None = None,
    init: str | None = None,
    init_embeddings: str = "random",
    log: Callable[[str], None] = print,
    progress: bool = True,
):
    """Masked-LM pre-training from text files; writes the checkpoint directory after every evaluation.

    Returns the ``PretrainResult``. The directory always holds the newest complete
    checkpoint, so an interrupted run can still be fine-tuned from.
    """
    from albert_edge.finetune.pretrain import pretrain, read_mlm_head, write_pretrained
    from albert_edge.model import load_checkpoint
    from albert_edge.tokenizer import WordPieceTokenizer

    check_settings(settings)
    if init:
        weights = load_checkpoint(init)
        model_config = weights.config
        weights = with_classifier(weights, 2, settings.seed)  # the encoder wrapper wants a head; not trained
        mlm_head = read_mlm_head(init, model_config)
    else:
        model_config = resolve_config(config)
        weights, mlm_head = None, None
    # None (the CLI default): 128, or the model's positions if fewer; the rule convert and quantize use.
    settings = replace(settings, max_seq_len=fit_max_seq_len(settings.max_seq_len, model_config, "the model config"))
    vocab_path = resolve_vocab(vocab, init, model_config, beside=(config, *text_paths, heldout_path))
    tokenizer = WordPieceTokenizer.from_vocab_file(vocab_path)
    texts = read_pretraining_texts(text_paths)
    heldout = read_pretraining_texts([heldout_path])
    encode = lambda items: [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in items]
    ids, held_ids = [x for x in encode(texts) if x], [x for x in encode(heldout) if x]
    if weights is None:
        if init_embeddings not in INIT_EMBEDDINGS:
            raise ConfigError(f"--init-embeddings {init_embeddings!r}: expected one of {list(INIT_EMBEDDINGS)}")
        vectors = None
        if init_embeddings == "ppmi-svd":
            vectors = ppmi_svd_embeddings(ids, model_config.vocab_size, model_config.embedding_size,
                                          seed=settings.seed)
        weights = training_init(model_config, 2, settings.seed, word_embeddings=vectors)
    log(f"vocab {vocab_path} (md5 {md5_of_file(vocab_path)}); {len(texts)} texts from "
        f"{', '.join(map(str, text_paths))}; held-out {len(heldout)} texts from {heldout_path}; init {weights.source}"
        + (f" (MLM head resumed from {init})" if mlm_head is not None else "; MLM head fresh"))
    summary = {
        "texts": [{"path": str(p), "md5": md5_of_file(p)} for p in text_paths],
        "heldout": {"path": str(heldout_path), "md5": md5_of_file(heldout_path)},
        "init": init or f"random (training_init), word embeddings: {init_embeddings}",
        "vocab_md5": md5_of_file(vocab_path),
    }

    def checkpoint(result) -> None:
        write_pretrained(result, out_dir, vocab_path, settings, extra_log=summary)

    result = pretrain(weights, ids, held_ids, tokenizer, settings, log=log, progress=progress,
                      on_eval=checkpoint, mlm_head=mlm_head)
    prefix = write_pretrained(result, out_dir, vocab_path, settings, extra_log=summary)
    log(f"wrote {prefix} after {result.steps} steps ({result.seconds:.0f}s)")
    return result


__all__: Sequence[str] = ("CONFIG_PRESETS", "finetune_files", "pretrain_files", "read_pretraining_texts",
                          "resolve_config", "resolve_labels", "resolve_vocab")
