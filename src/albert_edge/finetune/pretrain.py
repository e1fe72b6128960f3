"""Masked-LM pre-training of ALBERT on plain text, on the CPU: the warm start fine-tuning lacks.

No pretrained Chinese ALBERT can be downloaded here, and a 4 M-parameter transformer trained
from random init on 14 k labelled reviews stays below a char n-gram baseline. Pre-training on
unlabelled text (the training reviews themselves plus a news corpus from the same registry
package) is the remedy the ALBERT/BERT recipe itself prescribes. The heads and names follow
Google ALBERT's ``run_pretraining``: ``cls/predictions/transform/{dense,LayerNorm}`` maps the
hidden state to the embedding width and the decoder is the word-embedding matrix itself
(tied), plus ``cls/predictions/output_bias``. Texts are packed ``[CLS] a [SEP] b [SEP] ...``
into full-length rows so no step is spent on padding; masks are drawn afresh every step
(15 %: 80 % ``[MASK]``, 10 % random token, 10 % unchanged) from a seeded generator.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import tensorflow as tf

from albert_edge.outputs.atomic import ensure_writable_dir
from albert_edge.errors import CheckpointError, DataError
from albert_edge.finetune.tf_model import TfAlbertClassifier, layer_norm
from albert_edge.finetune.trainer import (
    _AdamW,
    configure_threads,
    copy_vocab,
    learning_rate_at,
)

#: Canonical-ish names of the MLM head -> the TF1 names Google ALBERT's pre-training writes.
MLM_HEAD_TF1_NAMES: dict[str, str] = {
    "mlm.transform.kernel": "cls/predictions/transform/dense/kernel",
    "mlm.transform.bias": "cls/predictions/transform/dense/bias",
    "mlm.layer_norm.gamma": "cls/predictions/transform/LayerNorm/gamma",
    "mlm.layer_norm.beta": "cls/predictions/transform/LayerNorm/beta",
    "mlm.output_bias": "cls/predictions/output_bias",
}


@dataclass(frozen=True)
class PretrainSettings:
    """Everything that determines a pre-training run besides the texts and the init weights."""

    steps: int = 4000
    max_seq_len: int | None = 128  # None: 128, or the model's positions if fewer (recipe.fit_max_seq_len)
    batch_size: int = 32
    learning_rate: float = 5e-4
    warmup_ratio: float = 0.05
    weight_decay: float = 0.01
    dropout: float = 0.1
    clip_norm: float = 1.0
    mask_prob: float = 0.15
    seed: int = 0
    threads: int = 2
    evals: int = 10


@dataclass
class PretrainResult:
    """The weights after the last step, the MLM head, and the held-out MLM history."""

    weights: object
    head: dict[str, np.ndarray]
    history: list[dict] = field(default_factory=list)
    steps: int = 0
    seconds: float = 0.0
    interrupted: bool = False


def pack_sequences(texts: Sequence[Sequence[int]], max_len: int, cls_id: int, sep_id: int) -> list[np.ndarray]:
    """``[CLS] a [SEP] b [SEP] ...`` rows of at most ``max_len`` ids; longer texts are cut into pieces.

    ``texts`` are token ids without special tokens, in the order they should be packed.
    """
    if max_len < 3:
        raise DataError(f"pretrain: max_seq_len {max_len} leaves no room for text")
    room = max_len - 2
    rows: list[np.ndarray] = []
    current: list[int] = [cls_id]
    for ids in texts:
        for start in range(0, len(ids), room):
            piece = list(ids[start : start + room])
            if len(current) + len(piece) + 1 > max_len:
                rows.append(np.asarray(current, np.int32))
                current = [cls_id]
            current.extend(piece)
            current.append(sep_id)
    if len(current) > 1:
        rows.append(np.asarray(current, np.int32))
    return rows


def mask_batch(rows: Sequence[np.ndarray], rng: np.random.Generator, vocab_size: int, mask_id: int,
               special_ids: Sequence[int], mask_prob: float, max_predictions: int, pad_id: int):
    """Pad rows and choose MLM targets: ``ids, attention_mask, positions, target_ids, target_weights``.

    About ``mask_prob`` of the non-special tokens of each row become targets (at least one);
    of those 80 % turn into ``[MASK]``, 10 % into a random token and 10 % stay. Arrays are
    int32 ``[B, S]`` and ``[B, P]`` (weights float32), ``P = max_predictions``.
    """
    seq = max(len(r) for r in rows)
    batch = len(rows)
    ids = np.full((batch, seq), pad_id, np.int32)
    mask = np.zeros((batch, seq), np.int32)
    positions = np.zeros((batch, max_predictions), np.int32)
    targets = np.zeros((batch, max_predictions), np.int32)
    weights = np.zeros((batch, max_predictions), np.float32)
    special = np.asarray(sorted(special_ids), np.int32)
    for b, row in enumerate(rows):
        ids[b, : len(row)] = row
        mask[b, : len(row)] = 1
        candidates = np.flatnonzero(~np.isin(row, special))
        if len(candidates) == 0:
            continue
        count = min(max_predictions, max(1, round(mask_prob * len(candidates))))
        chosen = np.sort(rng.choice(candidates, size=count, replace=False))
        positions[b, :count] = chosen
        targets[b, :count] = row[chosen]
        weights[b, :count] = 1.0
        roll = rng.random(count)
        ids[b, chosen[roll < 0.8]] = mask_id
        randomized = chosen[(roll >= 0.8) & (roll < 0.9)]
        ids[b, randomized] = rng.integers(0, vocab_size, size=len(randomized))
    return ids, mask, positions, targets, weights


def init_mlm_head(config, seed: int) -> dict[str, np.ndarray]:
    """BERT-style init of the MLM head: N(0, 0.02) kernel, zero biases, unit LayerNorm."""
    rng = np.random.default_rng(seed + 1)
    hidden, embed = config.hidden_size, config.embedding_size
    return {
        "mlm.transform.kernel": (np.clip(rng.standard_normal((hidden, embed)), -2, 2) * 0.02).astype(np.float32),
        "mlm.transform.bias": np.zeros(embed, np.float32),
        "mlm.layer_norm.gamma": np.ones(embed, np.float32),
        "mlm.layer_norm.beta": np.zeros(embed, np.float32),
        "mlm.output_bias": np.zeros(config.vocab_size, np.float32),
    }


def read_mlm_head(path: str | Path, config) -> dict[str, np.ndarray] | None:
    """The ``cls/predictions/*`` MLM head of a TF1 pre-training checkpoint, or None if it has none.

    Continued pre-training (``pretrain --init``) should resume the head rather than restart it: a
    fresh head sends random gradients into the encoder for the first few hundred steps. A head that
    is present but only in part, or with shapes that do not fit ``config``, is an error, not a restart.
    """
    from albert_edge.model.tf1 import resolve_tf1_prefix

    prefix = resolve_tf1_prefix(path)
    if prefix is None:
        return None
    reader = tf.train.load_checkpoint(str(prefix))
    shapes = reader.get_variable_to_shape_map()
    present = {n: t for n, t in MLM_HEAD_TF1_NAMES.items() if t in shapes}
    if not present:
        return None
    missing = sorted(set(MLM_HEAD_TF1_NAMES.values()) - set(present.values()))
    if missing:
        raise CheckpointError(f"{prefix}: MLM head incomplete, missing {', '.join(missing)}")
    expected = {n: v.shape for n, v in init_mlm_head(config, 0).items()}
    head = {}
    for name, tf1_name in present.items():
        value = reader.get_tensor(tf1_name).astype(np.float32)
        if value.shape != expected[name]:
            raise CheckpointError(f"{prefix}: {tf1_name} has shape {list(value.shape)}, "
                                  f"expected {list(expected[name])} for this config")
        head[name] = value
    return head


class _MaskedLM(tf.Module):
    """The encoder of a ``TfAlbertClassifier`` plus the tied-decoder MLM head."""

    def __init__(self, encoder: TfAlbertClassifier, head: dict[str, np.ndarray]) -> None:
        super().__init__(name="mlm")
        self.encoder = encoder
        self.head_names = sorted(head)
        self.head = {n: tf.Variable(v, name=n.replace(".", "/")) for n, v in sorted(head.items())}
        # The classifier and pooler take no part in MLM; leaving them out keeps their init intact.
        self.names = [n for n in encoder.names if not n.startswith(("classifier.", "pooler."))] + self.head_names
        self.variables_list = [self.head[n] if n in self.head else encoder.variables_by_name[n] for n in self.names]

    def loss(self, ids, mask, positions, targets, target_weights, seed=None):
        hidden = self.encoder.encode(ids, mask, tf.zeros_like(ids), seed)  # [B, S, H]
        picked = tf.gather(hidden, positions, batch_dims=1)  # [B, P, H]
        x = tf.tensordot(picked, self.head["mlm.transform.kernel"], axes=[[2], [0]]) + self.head["mlm.transform.bias"]
        x = self.encoder.activation(x)
        x = layer_norm(x, self.head["mlm.layer_norm.gamma"], self.head["mlm.layer_norm.beta"],
                       self.encoder.config.layer_norm_eps)
        logits = tf.tensordot(x, self.encoder.variables_by_name["embeddings.word"], axes=[[2], [1]])
        logits += self.head["mlm.output_bias"]  # [B, P, V]
        per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=targets, logits=logits)
        total = tf.reduce_sum(target_weights)
        loss = tf.reduce_sum(per_token * target_weights) / tf.maximum(total, 1.0)
        hits = tf.cast(tf.equal(tf.argmax(logits, -1, output_type=tf.int32), targets), tf.float32)
        return loss, tf.reduce_sum(hits * target_weights), total


@dataclass(frozen=True)
class _Masking:
    """How every batch (training and held-out) is masked: the vocab, the special ids never masked,
    the share of tokens predicted and the fixed number of prediction slots per row."""

    vocab_size: int
    mask_id: int
    special: list[int]
    mask_prob: float
    max_predictions: int
    pad_id: int

    def batch(self, rows: Sequence[np.ndarray], rng: np.random.Generator):
        """``mask_batch`` of ``rows`` under these settings."""
        return mask_batch(rows, rng, self.vocab_size, self.mask_id, self.special, self.mask_prob,
                          self.max_predictions, self.pad_id)


def _masking(tokenizer, vocab_size: int, settings: PretrainSettings) -> _Masking:
    """The masking settings for ``tokenizer``'s vocab; a vocab without [MASK] cannot train a masked LM."""
    if "[MASK]" not in tokenizer.vocab:
        raise DataError(f"{tokenizer.source}: vocab has no [MASK] token, cannot pre-train a masked LM")
    mask_id = tokenizer.vocab["[MASK]"]
    special = [tokenizer.cls_id, tokenizer.sep_id, tokenizer.pad_id, mask_id, tokenizer.unk_id]
    max_predictions = max(1, math.ceil(settings.mask_prob * settings.max_seq_len) + 1)
    return _Masking(vocab_size, mask_id, special, settings.mask_prob, max_predictions, tokenizer.pad_id)


def _compile_steps(model: _MaskedLM, optimizer: _AdamW, clip_norm: float):
    """The graph-compiled training step (loss, clipped gradients, AdamW update) and evaluation step."""
    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec, spec, tf.TensorSpec([None, None], tf.float32),
                                  tf.TensorSpec([2], tf.int32), tf.TensorSpec([], tf.float32)])
    def train_step(ids, mask, positions, targets, weights, seed, lr):
        with tf.GradientTape() as tape:
            loss, hits, total = model.loss(ids, mask, positions, targets, weights, seed)
        grads = [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.variables_list)]
        grads, _ = tf.clip_by_global_norm(grads, clip_norm)
        optimizer.apply(grads, lr)
        return loss, hits, total

    @tf.function(input_signature=[spec, spec, spec, spec, tf.TensorSpec([None, None], tf.float32)])
    def eval_step(ids, mask, positions, targets, weights):
        return model.loss(ids, mask, positions, targets, weights)

    return train_step, eval_step


def _snapshot(encoder: TfAlbertClassifier, model: _MaskedLM, result: PretrainResult) -> None:
    """Copy the encoder (without a classifier) and the MLM head into ``result``: what is written."""
    weights = encoder.to_weights()
    weights.tensors = {n: v for n, v in weights.tensors.items() if not n.startswith("classifier.")}
    weights.num_labels = None
    result.weights = weights
    result.head = {n: v.numpy() for n, v in model.head.items()}


def _eval_record(step: int, window: list[float], held: list, started: float) -> dict[str, float]:
    """One history entry: the training window's MLM loss / accuracy and the held-out set's."""
    held_total = sum(float(t) for _, _, t in held)
    return {
        "step": step,
        "train_mlm_loss": window[0] / window[2],
        "train_mlm_accuracy": window[1] / window[2],
        "heldout_mlm_loss": sum(float(lo) * float(t) for lo, _, t in held) / held_total,
        "heldout_mlm_accuracy": sum(float(h) for _, h, _ in held) / held_total,
        "seconds": round(time.perf_counter() - started, 1),
    }


def pretrain(
    init_weights,
    texts: Sequence[Sequence[int]],
    heldout: Sequence[Sequence[int]],
    tokenizer,
    settings: PretrainSettings = PretrainSettings(),
    log: Callable[[str], None] = print,
    progress: bool = True,
    on_eval: Callable[[PretrainResult], None] | None = None,
    mlm_head: dict[str, np.ndarray] | None = None,
) -> PretrainResult:
    """Masked-LM training of ``init_weights`` on ``texts`` (token ids, no specials) for ``settings.steps``.

    ``heldout`` texts are masked once with a fixed seed and scored ``settings.evals`` times
    (MLM loss and accuracy on the masked tokens). ``on_eval`` gets the result so far after each
    evaluation, e.g. to write a checkpoint that survives an interruption. ``mlm_head`` resumes
    a head from an earlier run (``read_mlm_head``); without it the head starts fresh.
    """
    if not texts:
        raise DataError("pretrain: no training text")
    if not heldout:
        raise DataError("pretrain: no held-out text")
    configure_threads(settings.threads)
    tf.random.set_seed(settings.seed)
    rng = np.random.default_rng(settings.seed)
    config = init_weights.config
    masking = _masking(tokenizer, config.vocab_size, settings)
    cls_id, sep_id = tokenizer.cls_id, tokenizer.sep_id

    order = rng.permutation(len(texts))
    rows = pack_sequences([texts[i] for i in order], settings.max_seq_len, cls_id, sep_id)
    held_rows = pack_sequences(list(heldout), settings.max_seq_len, cls_id, sep_id)
    held_rng = np.random.default_rng(settings.seed + 12345)
    held_batches = [masking.batch(held_rows[i : i + 64], held_rng) for i in range(0, len(held_rows), 64)]
    tokens = sum(len(r) for r in rows)
    log(f"pretrain: {len(texts)} texts packed into {len(rows)} rows of <= {settings.max_seq_len} "
        f"({tokens} tokens); {settings.steps} steps of {settings.batch_size} = "
        f"{settings.steps * settings.batch_size / len(rows):.1f} passes; held-out {len(held_rows)} rows")

    encoder = TfAlbertClassifier(init_weights, dropout=settings.dropout)
    model = _MaskedLM(encoder, mlm_head if mlm_head is not None else init_mlm_head(config, settings.seed))
    train_step, eval_step = _compile_steps(model, _AdamW(model.variables_list, model.names, settings.weight_decay),
                                           settings.clip_norm)

    result = PretrainResult(weights=None, head={})
    eval_every = max(1, settings.steps // max(1, settings.evals))
    started = time.perf_counter()
    window = [0.0, 0.0, 0.0]  # loss * targets, hits, targets
    from albert_edge import progress as progress_report

    bar = progress_report.bar(settings.steps, desc="pretrain", unit="step", show=progress)
    step, cursor = 0, len(rows)
    try:
        while step < settings.steps:
            if cursor + settings.batch_size > len(rows):
                rows = [rows[i] for i in rng.permutation(len(rows))]
                cursor = 0
            batch = rows[cursor : cursor + settings.batch_size]
            cursor += settings.batch_size
            arrays = masking.batch(batch, rng)
            lr = learning_rate_at(step, settings.steps, settings)
            loss, hits, total = train_step(*arrays, np.array([settings.seed, step], np.int32), np.float32(lr))
            step += 1
            window[0] += float(loss) * float(total)
            window[1] += float(hits)
            window[2] += float(total)
            bar.update(1)
            bar.set_postfix(loss=f"{window[0] / window[2]:.3f}", acc=f"{window[1] / window[2]:.3f}", refresh=False)
            if step % eval_every == 0 or step == settings.steps:
                record = _eval_record(step, window, [eval_step(*b) for b in held_batches], started)
                result.history.append(record)
                window = [0.0, 0.0, 0.0]
                log(f"step {step}/{settings.steps}: train MLM loss {record['train_mlm_loss']:.3f} "
                    f"acc {record['train_mlm_accuracy']:.3f}; held-out loss {record['heldout_mlm_loss']:.3f} "
                    f"acc {record['heldout_mlm_accuracy']:.3f}; {record['seconds']:.0f}s")
                result.steps = step
                _snapshot(encoder, model, result)
                if on_eval is not None:
                    on_eval(result)
    except KeyboardInterrupt:
        result.interrupted = True
        log(f"interrupted at step {step}: keeping the weights of this step")
    bar.close()
    result.steps = step
    result.seconds = time.perf_counter() - started
    _snapshot(encoder, model, result)
    return result


def write_pretrained(result: PretrainResult, out_dir: str | Path, vocab_path: str | Path, settings: PretrainSettings,
                     extra_log: dict | None = None) -> Path:
    """Write ``model.ckpt-<step>`` (brightmart names for the encoder, Google's for the MLM head) and a log.

    The checkpoint is what an albert_zh pre-training run leaves: no classifier, an MLM head
    under ``cls/predictions/`` (which the loaders know to ignore), the config and vocab beside it.
    """
    from albert_edge.model import write_tf1_checkpoint
    from albert_edge.outputs.claim import CHECKPOINT_FILES
    from albert_edge.outputs.output_set import OutputSet

    out = ensure_writable_dir(out_dir)
    prefix = out / f"model.ckpt-{result.steps}"
    log = {"settings": asdict(settings), "steps": result.steps, "seconds": round(result.seconds, 1),
           "interrupted": result.interrupted, "history": result.history, **(extra_log or {})}
    # One set, swapped in whole (the older step's files go in the same swap); refused beside a
    # checkpoint albert-edge did not write (output_claim).
    with OutputSet(out, "pretrain", claims=CHECKPOINT_FILES) as staged:
        write_tf1_checkpoint(result.weights, staged.stage_dir() / prefix.name, scheme="brightmart",
                             extra_tensors={MLM_HEAD_TF1_NAMES[n]: v for n, v in result.head.items()})
        copy_vocab(vocab_path, staged.stage_dir())
        written = {path.name for path in staged.adopt_staged()}
        staged.write_text("pretrain_log.json", json.dumps(log, indent=2, ensure_ascii=False) + "\n")
        for old in out.glob("model.ckpt-*"):
            if old.name not in written:
                staged.remove_stale(old.name)
    return prefix
