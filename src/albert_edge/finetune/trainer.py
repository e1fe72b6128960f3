"""The fine-tuning loop: length-bucketed batches, AdamW with warmup and linear decay, keep the best.

Written for a laptop-class CPU (2 cores): batches are bucketed by length so most of the
time goes into real tokens rather than padding; one ``tf.function`` train step with a
dynamic ``[batch, seq]`` signature compiles once for all lengths; dropout draws from
stateless seeds derived from (seed, step), so the same seed gives the same weights.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tensorflow as tf

from albert_edge.outputs.atomic import ensure_writable_dir
from albert_edge.inputs.data import Example, label_ids
from albert_edge.errors import DataError
from albert_edge.finetune.tf_model import TfAlbertClassifier


@dataclass(frozen=True)
class FinetuneSettings:
    """Everything that determines a run besides the data, the config and the init weights."""

    epochs: float = 3.0
    max_seq_len: int | None = 128  # None: 128, or the model's positions if fewer (recipe.fit_max_seq_len)
    batch_size: int = 32
    learning_rate: float = 1e-3
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    dropout: float = 0.1
    clip_norm: float = 1.0
    seed: int = 0
    threads: int = 2
    max_steps: int | None = None
    eval_batch_size: int = 128
    evals_per_epoch: int = 1
    #: Share of the loss given to the teacher's soft targets (0 = hard labels only); see ``finetune``.
    distill_weight: float = 0.0


@dataclass
class FinetuneResult:
    """What a run produced: the best weights (by dev accuracy) and its history."""

    weights: object
    best_dev_accuracy: float
    best_step: int
    history: list[dict] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    checkpoint_prefix: Path | None = None
    interrupted: bool = False


@dataclass(frozen=True)
class EncodedSet:
    """Unpadded token ids per example plus class ids: what batching needs."""

    input_ids: list[list[int]]
    token_type_ids: list[list[int]]
    labels: np.ndarray  # [N] int32
    truncated: int


def encode_examples(examples: Sequence[Example], preprocessor, labels: Sequence[str]) -> EncodedSet:
    """Tokenize once, up front: the loop then only pads, which is cheap."""
    ids, types, truncated = [], [], 0
    for ex in examples:
        enc = preprocessor.encode(ex.text_a, ex.text_b)
        n = int(sum(enc.attention_mask)) if enc.attention_mask else len(enc.input_ids)
        ids.append(list(enc.input_ids[:n]))
        types.append(list(enc.token_type_ids[:n]))
        truncated += bool(enc.truncated)
    return EncodedSet(ids, types, label_ids(examples, labels), truncated)


def pad_batch(data: EncodedSet, index: np.ndarray, pad_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pad the selected examples to their longest: ``input_ids, attention_mask, token_type_ids`` int32 ``[B, S]``."""
    seq = max(len(data.input_ids[i]) for i in index)
    ids = np.full((len(index), seq), pad_id, dtype=np.int32)
    mask = np.zeros((len(index), seq), dtype=np.int32)
    types = np.zeros((len(index), seq), dtype=np.int32)
    for row, i in enumerate(index):
        n = len(data.input_ids[i])
        ids[row, :n] = data.input_ids[i]
        mask[row, :n] = 1
        types[row, :n] = data.token_type_ids[i]
    return ids, mask, types


def bucketed_batches(lengths: np.ndarray, batch_size: int, rng: np.random.Generator) -> list[np.ndarray]:
    """Shuffle, sort by length within pools of 50 batches, cut into batches, shuffle the batches.

    Batches then hold similar lengths (little padding) while the order stays random.
    """
    order = rng.permutation(len(lengths))
    pool = batch_size * 50
    batches: list[np.ndarray] = []
    for start in range(0, len(order), pool):
        chunk = order[start : start + pool]
        chunk = chunk[np.argsort(lengths[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def learning_rate_at(step: int, total: int, settings) -> float:
    """Linear warmup to ``learning_rate`` over ``warmup_ratio`` of the steps, then linear decay to 0."""
    warmup = max(1, round(settings.warmup_ratio * total))
    if step < warmup:
        return settings.learning_rate * (step + 1) / warmup
    return settings.learning_rate * max(0.0, (total - step) / max(1, total - warmup))


def training_init(config, num_labels: int, seed: int, word_embeddings: tuple[np.ndarray, np.ndarray] | None = None):
    """BERT-style initial weights: N(0, 0.02) truncated at 2 sigma, zero biases, unit LayerNorm.

    ``random_weights`` supplies the canonical names and shapes; its deliberately non-trivial
    biases and LayerNorm parameters are for parity tests, not a good starting point.
    ``word_embeddings`` (``[V, E]`` vectors, ``[V]`` mask) replaces the masked rows of
    ``embeddings.word`` (see ``finetune.embeddings``).
    """
    from albert_edge.model import random_weights

    base = random_weights(config, num_labels=num_labels, seed=seed)
    rng = np.random.default_rng(seed)
    tensors = {}
    for name in sorted(base.tensors):
        shape = base.tensors[name].shape
        if name == "embeddings.projection.kernel" and config.embedding_order == "project_then_add":
            # Projecting N(0, 0.02) word vectors with an N(0, 0.02) kernel leaves them ~0.005 wide,
            # drowned by the N(0, 0.02) position embeddings they are added to: the model then starts
            # blind to the words. Scale so the projected words are as wide as the positions.
            std = 1.0 / math.sqrt(shape[0])
            tensors[name] = (np.clip(rng.standard_normal(shape), -2.0, 2.0) * std).astype(np.float32)
        elif name.endswith(".gamma"):
            tensors[name] = np.ones(shape, np.float32)
        elif name.endswith((".beta", ".bias")):
            tensors[name] = np.zeros(shape, np.float32)
        else:
            tensors[name] = (np.clip(rng.standard_normal(shape), -2.0, 2.0) * 0.02).astype(np.float32)
    source = f"training_init(seed={seed})"
    if word_embeddings is not None:
        vectors, mask = word_embeddings
        tensors["embeddings.word"] = np.where(mask[:, None], vectors, tensors["embeddings.word"]).astype(np.float32)
        source = f"training_init(seed={seed}, word embeddings for {int(mask.sum())} tokens from PPMI-SVD)"
    base.tensors = tensors
    base.source = source
    return base


def with_classifier(weights, num_labels: int, seed: int):
    """Give loaded weights a fresh ``num_labels`` head if they have none or one of another width."""
    kernel = weights.tensors.get("classifier.kernel")
    if kernel is not None and kernel.shape[1] == num_labels:
        return weights
    hidden = weights.config.hidden_size
    rng = np.random.default_rng(seed)
    tensors = dict(weights.tensors)
    tensors["classifier.kernel"] = (np.clip(rng.standard_normal((hidden, num_labels)), -2, 2) * 0.02).astype(np.float32)
    tensors["classifier.bias"] = np.zeros(num_labels, np.float32)
    if "pooler.kernel" not in tensors:
        tensors["pooler.kernel"] = (np.clip(rng.standard_normal((hidden, hidden)), -2, 2) * 0.02).astype(np.float32)
        tensors["pooler.bias"] = np.zeros(hidden, np.float32)
    weights.tensors = tensors
    weights.num_labels = num_labels
    return weights


def _decays(name: str) -> bool:
    # As in BERT/ALBERT: no weight decay on biases and LayerNorm parameters.
    return not name.endswith((".bias", ".beta", ".gamma"))


class _AdamW(tf.Module):
    """AdamW (decoupled weight decay) over a fixed variable list; slots never reach the checkpoint."""

    def __init__(self, variables: list[tf.Variable], names: list[str], weight_decay: float) -> None:
        super().__init__(name="adamw")
        self.vars = variables
        self.decay = [weight_decay if _decays(n) else 0.0 for n in names]
        self.m = [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables]
        self.v = [tf.Variable(tf.zeros_like(v), trainable=False) for v in variables]
        self.t = tf.Variable(0.0, trainable=False)

    def apply(self, grads: list[tf.Tensor], lr: tf.Tensor, beta1=0.9, beta2=0.999, eps=1e-6) -> None:
        self.t.assign_add(1.0)
        c1 = 1.0 - tf.pow(beta1, self.t)
        c2 = 1.0 - tf.pow(beta2, self.t)
        for var, g, m, v, decay in zip(self.vars, grads, self.m, self.v, self.decay):
            m.assign(beta1 * m + (1.0 - beta1) * g)
            v.assign(beta2 * v + (1.0 - beta2) * tf.square(g))
            update = (m / c1) / (tf.sqrt(v / c2) + eps)
            if decay:
                update += decay * var
            var.assign_sub(lr * update)


def _make_steps(model: TfAlbertClassifier, optimizer: _AdamW, clip_norm: float):
    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec, tf.TensorSpec([None], tf.int32), tf.TensorSpec([2], tf.int32),
                                  tf.TensorSpec([], tf.float32), tf.TensorSpec([None, None], tf.float32),
                                  tf.TensorSpec([], tf.float32)], jit_compile=False)
    def train_step(ids, mask, types, labels, seed, lr, soft, soft_weight):
        # (1 - w) * CE(hard label) + w * CE(teacher distribution); w = 0 is plain fine-tuning.
        with tf.GradientTape() as tape:
            logits = model(ids, mask, types, seed=seed)
            hard = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
            distilled = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=soft, logits=logits))
            loss = (1.0 - soft_weight) * hard + soft_weight * distilled
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_list)]
        grads, _ = tf.clip_by_global_norm(grads, clip_norm)
        optimizer.apply(grads, lr)
        correct = tf.reduce_sum(tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), labels), tf.int32))
        return loss, correct

    @tf.function(input_signature=[spec, spec, spec], jit_compile=False)
    def logits_step(ids, mask, types):
        return model(ids, mask, types)

    return train_step, logits_step


def predict_logits(logits_fn, data: EncodedSet, pad_id: int, batch_size: int) -> np.ndarray:
    """Logits ``[N, num_labels]`` in the data's order, batched by length for speed."""
    lengths = np.array([len(x) for x in data.input_ids])
    order = np.argsort(lengths, kind="stable")
    out = None
    for start in range(0, len(order), batch_size):
        index = order[start : start + batch_size]
        logits = logits_fn(*pad_batch(data, index, pad_id)).numpy()
        if out is None:
            out = np.zeros((len(order), logits.shape[1]), np.float32)
        out[index] = logits
    return out


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Share of argmax predictions equal to ``labels``."""
    return float(np.mean(np.argmax(logits, axis=-1) == labels))


def configure_threads(threads: int) -> None:
    """Pin TF's thread pools (must run before the first op) and ask for deterministic kernels."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:
        pass  # TF already initialised in this process (e.g. a second run in one test session)
    tf.config.experimental.enable_op_determinism()


def _checked_soft_targets(train: Sequence[Example], dev: Sequence[Example], labels: Sequence[str],
                          settings: FinetuneSettings, soft_targets: np.ndarray | None) -> np.ndarray:
    """Refuse empty sets and a distillation that cannot run; the teacher's targets (zeros without one)."""
    if not train:
        raise DataError("finetune: the training set is empty")
    if not dev:
        raise DataError("finetune: the dev set is empty")
    if not 0.0 <= settings.distill_weight <= 1.0:
        raise DataError(f"finetune: distill weight {settings.distill_weight} must be in [0, 1]")
    if settings.distill_weight > 0 and soft_targets is None:
        raise DataError("finetune: a distill weight above 0 needs a teacher's soft targets")
    if soft_targets is not None and tuple(soft_targets.shape) != (len(train), len(labels)):
        raise DataError(f"finetune: soft targets are {list(soft_targets.shape)}, "
                        f"expected [{len(train)}, {len(labels)}]")
    return (np.zeros((len(train), len(labels)), np.float32) if soft_targets is None
            else np.asarray(soft_targets, np.float32))


@dataclass
class _Window:
    """Training loss and accuracy over the batches since the last evaluation."""

    loss: float = 0.0
    correct: int = 0
    seen: int = 0

    def add(self, loss: float, correct: int, size: int) -> None:
        self.loss += loss * size
        self.correct += correct
        self.seen += size


def _record_eval(result: FinetuneResult, model: TfAlbertClassifier, step: int, epoch: float, window: _Window,
                 dev_acc: float, started: float) -> tuple[dict[str, float], bool]:
    """Append one history entry; keep the model's weights when its dev accuracy is the best so far."""
    record = {
        "step": step,
        "epoch": epoch,
        "train_loss": window.loss / window.seen,
        "train_accuracy": window.correct / window.seen,
        "dev_accuracy": dev_acc,
        "seconds": round(time.perf_counter() - started, 1),
    }
    result.history.append(record)
    best = dev_acc > result.best_dev_accuracy
    if best:
        result.best_dev_accuracy, result.best_step = dev_acc, step
        result.weights = model.to_weights()
    return record, best


def finetune(
    init_weights,
    train: Sequence[Example],
    dev: Sequence[Example],
    preprocessor,
    labels: Sequence[str],
    settings: FinetuneSettings = FinetuneSettings(),
    log: Callable[[str], None] = print,
    progress: bool = True,
    soft_targets: np.ndarray | None = None,
) -> FinetuneResult:
    """Train ``init_weights`` (with a ``len(labels)``-wide head) on ``train``; keep the best on ``dev``.

    ``soft_targets`` ``[len(train), len(labels)]``: a teacher's class probabilities per
    training example (out-of-fold, see ``finetune.teacher``); the loss then mixes in their
    cross-entropy with weight ``settings.distill_weight``. The reported train loss is that
    mixed loss; train accuracy is always against the hard labels.

    Returns the best weights as ``AlbertWeights`` (dropout plays no part in them) and the
    per-evaluation history (step, epoch, train loss/accuracy, dev accuracy, seconds).
    """
    soft = _checked_soft_targets(train, dev, labels, settings, soft_targets)
    configure_threads(settings.threads)
    tf.random.set_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    pad_id = int(preprocessor.tokenizer.pad_id)

    train_set = encode_examples(train, preprocessor, labels)
    dev_set = encode_examples(dev, preprocessor, labels)
    lengths = np.array([len(x) for x in train_set.input_ids])
    log(
        f"train: {len(train)} examples ({train_set.truncated} truncated to {settings.max_seq_len}), "
        f"mean length {lengths.mean():.1f} tokens; dev: {len(dev)} examples"
    )
    steps_per_epoch = math.ceil(len(train) / settings.batch_size)
    total = max(1, round(settings.epochs * steps_per_epoch))
    if settings.max_steps is not None:
        total = min(total, settings.max_steps)
    eval_every = max(1, steps_per_epoch // max(1, settings.evals_per_epoch))

    model = TfAlbertClassifier(init_weights, dropout=settings.dropout)
    optimizer = _AdamW(model.trainable_list, model.names, settings.weight_decay)
    train_step, logits_step = _make_steps(model, optimizer, settings.clip_norm)

    result = FinetuneResult(weights=model.to_weights(), best_dev_accuracy=-1.0, best_step=0)
    started = time.perf_counter()
    step, epoch = 0, 0
    window = _Window()
    from albert_edge import progress as progress_report

    interrupted = False
    try:
        while step < total:
            epoch += 1
            batches = bucketed_batches(lengths, settings.batch_size, rng)
            bar = progress_report.bar(desc=f"epoch {epoch}", unit="batch", show=progress,
                                      iterable=batches[: total - step])
            for index in bar:
                ids, mask, types = pad_batch(train_set, index, pad_id)
                lr = learning_rate_at(step, total, settings)
                seed = np.array([settings.seed, step], dtype=np.int32)
                loss, correct = train_step(ids, mask, types, train_set.labels[index], seed, np.float32(lr),
                                           soft[index], np.float32(settings.distill_weight))
                step += 1
                window.add(float(loss), int(correct), len(index))
                bar.set_postfix(loss=f"{window.loss / window.seen:.4f}", acc=f"{window.correct / window.seen:.3f}",
                                lr=f"{lr:.2e}", refresh=False)
                if step % eval_every == 0 or step == total:
                    dev_acc = accuracy(predict_logits(logits_step, dev_set, pad_id, settings.eval_batch_size),
                                       dev_set.labels)
                    record, best = _record_eval(result, model, step, round(step / steps_per_epoch, 3), window,
                                                dev_acc, started)
                    log(
                        f"step {step}/{total} epoch {record['epoch']:.2f}: train loss {record['train_loss']:.4f} "
                        f"acc {record['train_accuracy']:.4f}, dev acc {dev_acc:.4f}{' (best)' if best else ''}, "
                        f"{record['seconds']:.0f}s"
                    )
                    window = _Window()
                if step >= total:
                    break
            bar.close()
    except KeyboardInterrupt:
        # Ctrl-C (or SIGINT from a scheduler) ends training early but still yields the best model.
        interrupted = True
        log(f"interrupted at step {step}: keeping the best model so far")
        if not result.history:
            dev_acc = accuracy(predict_logits(logits_step, dev_set, pad_id, settings.eval_batch_size), dev_set.labels)
            result.history.append({"step": step, "epoch": round(step / steps_per_epoch, 3), "dev_accuracy": dev_acc,
                                   "seconds": round(time.perf_counter() - started, 1)})
            result.best_dev_accuracy, result.best_step, result.weights = dev_acc, step, model.to_weights()
    result.interrupted = interrupted
    result.steps = step
    result.seconds = time.perf_counter() - started
    return result


def evaluate_weights(weights, examples: Sequence[Example], preprocessor, labels: Sequence[str],
                     batch_size: int = 128) -> tuple[float, np.ndarray]:
    """Accuracy and logits ``[N, num_labels]`` of ``weights`` on ``examples`` (TF, dropout off)."""
    data = encode_examples(examples, preprocessor, labels)
    model = TfAlbertClassifier(weights)
    _, logits_step = _make_steps(model, _AdamW([], [], 0.0), 1.0)
    logits = predict_logits(logits_step, data, int(preprocessor.tokenizer.pad_id), batch_size)
    return accuracy(logits, data.labels), logits


def copy_vocab(vocab_path: str | Path, out: Path) -> None:
    """Put ``vocab.txt`` beside a checkpoint (whole or not at all), unless it is already that file."""
    if Path(vocab_path).resolve() != (out / "vocab.txt").resolve():
        tmp = out / ".vocab.txt.partial"
        shutil.copyfile(vocab_path, tmp)
        tmp.replace(out / "vocab.txt")


def write_finetuned(
    result: FinetuneResult,
    out_dir: str | Path,
    vocab_path: str | Path,
    labels: Sequence[str],
    settings: FinetuneSettings,
    extra_log: dict | None = None,
) -> Path:
    """Write the best weights as a brightmart albert_zh TF1 checkpoint plus vocab, labels and a log.

    ``out_dir`` gets ``model.ckpt-<step>.{index,data-00000-of-00001}``, ``checkpoint``,
    ``albert_config.json`` (from the checkpoint writer), ``vocab.txt``, ``labels.txt`` and
    ``finetune_log.json``. Only model variables are written, no optimizer slots.
    """
    from albert_edge.model import write_tf1_checkpoint
    from albert_edge.outputs.claim import CHECKPOINT_FILES
    from albert_edge.outputs.output_set import OutputSet

    out = ensure_writable_dir(out_dir)
    log = {
        "settings": asdict(settings),
        "best_dev_accuracy": result.best_dev_accuracy,
        "best_step": result.best_step,
        "steps": result.steps,
        "seconds": round(result.seconds, 1),
        "history": result.history,
        **(extra_log or {}),
    }
    # One set, swapped in whole; refused beside a checkpoint albert-edge did not write (output_claim).
    with OutputSet(out, "finetune", claims=CHECKPOINT_FILES) as staged:
        write_tf1_checkpoint(result.weights, staged.stage_dir() / f"model.ckpt-{result.best_step}", scheme="brightmart")
        copy_vocab(vocab_path, staged.stage_dir())
        staged.adopt_staged()
        staged.write_text("labels.txt", "\n".join(labels) + "\n")
        staged.write_text("finetune_log.json", json.dumps(log, indent=2, ensure_ascii=False) + "\n")
    prefix = out / f"model.ckpt-{result.best_step}"
    result.checkpoint_prefix = prefix
    return prefix
