"""TextClassifier: one model file in, labelled predictions out.

Everything comes from the file's pack (tokenizer, labels, lower-casing, max length, input
names), so an app needs nothing else. Texts run at their real token length: a single text
is fed as [1, its length]; a batch is sorted by length and cut into groups padded only to
their own longest member, and the results come back in input order.

Thread safety: one interpreter must not be entered by two threads. The classifier keeps a
small pool of backends (``pool_size``, default 1) and each call borrows one for the
duration of its invoke, so any number of threads may call it; with ``pool_size > 1`` up to
that many invokes run concurrently (each with ``num_threads`` kernel threads).
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from albert_edge.errors import BackendError, ModelFileError, TokenizerError
from albert_edge.runtime.backends import Backend, open_backend
from albert_edge.runtime.consistency import check_model_consistency
from albert_edge.runtime.length_buckets import BucketedBackend, checked_buckets
from albert_edge.runtime.pack import ModelPack, map_model_file, read_pack_bytes
from albert_edge.tasks import SequenceClassification
from albert_edge.tokenizer import Encoding, Preprocessor, load_tokenizer


@dataclass(frozen=True)
class Prediction:
    """The classifier's answer for one text (or pair).

    ``scores`` maps every label to its softmax probability; ``score`` is the top one.
    ``truncated`` is True when the text was longer than the model's ``max_seq_len`` and
    its tail was dropped; ``num_tokens`` counts the positions actually run.
    """

    label: str
    score: float
    scores: dict[str, float]
    logits: tuple[float, ...]
    truncated: bool
    num_tokens: int
    label_index: int = field(default=0)


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64. [N, C] -> [N, C]."""
    z = np.asarray(logits, np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def length_buckets(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Indices grouped into batches of similar length (sorted by length, then cut).

    Sorting before cutting minimises the padding of each batch for a given batch size; a
    stable sort keeps equal-length texts in input order.
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def padding_waste(lengths: Sequence[int], batches: Sequence[Sequence[int]]) -> float:
    """Fraction of fed positions that are padding when ``batches`` are each padded to their longest."""
    fed = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    return 1.0 - sum(lengths) / fed if fed else 0.0


class _BackendPool:
    """Up to ``size`` backends built lazily; a thread borrows one per invoke."""

    def __init__(self, factory: Callable[[], Backend], size: int) -> None:
        if size < 1:
            raise BackendError(f"pool_size is {size}, expected >= 1")
        self._factory = factory
        self._idle: queue.LifoQueue[Backend] = queue.LifoQueue()
        self._created = 0
        self._size = size
        self._lock = threading.Lock()
        self.first = factory()
        self._created = 1
        self._idle.put(self.first)

    def borrow(self) -> Backend:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            grow = self._created < self._size
            if grow:
                self._created += 1
        if grow:
            try:
                return self._factory()
            except BaseException:
                with self._lock:
                    self._created -= 1
                raise
        return self._idle.get()

    def give_back(self, backend: Backend) -> None:
        self._idle.put(backend)

    def run(self, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """One invoke on a borrowed backend, returned to the pool even when the invoke fails."""
        backend = self.borrow()
        try:
            return backend.run(inputs)
        finally:
            self.give_back(backend)



def open_checked(data: bytes, source: str, pack: ModelPack, backend: str, num_threads: int | None,
                 xnnpack: bool, pool_size: int,
                 length_buckets: Sequence[int] | bool | None = None) -> tuple[Any, _BackendPool]:
    """The pack's tokenizer and a pool of interpreters, after the load-time pack-vs-graph check.

    Every runtime class (classifier, embedder, token classifier) opens its file this way, so a
    pack that disagrees with its graph fails before any interpreter exists, never mid-request.
    ``length_buckets`` (a .tflite only; True for the defaults) gives each pooled backend one
    interpreter per padded width (``runtime.length_buckets``).
    """
    tokenizer = load_tokenizer(pack.tokenizer_type, pack.tokenizer_asset, pack.do_lower_case, source)
    facts = check_model_consistency(data, pack, source, tokenizer.vocab_size)
    buckets = checked_buckets(length_buckets, pack.max_seq_len)

    def single() -> Backend:
        return open_backend(data, source, backend, num_threads, xnnpack, facts.tflite_info)

    def factory() -> Backend:
        if buckets and facts.tflite_info is not None:
            return BucketedBackend(single, buckets, tokenizer.pad_id)
        return single()

    return tokenizer, _BackendPool(factory, pool_size)

class TextClassifier:
    """Sequence classification with a packed .tflite or .onnx model."""

    def __init__(
        self,
        data: bytes,
        source: str = "<bytes>",
        num_threads: int | None = None,
        backend: str = "auto",
        pool_size: int = 1,
        xnnpack: bool = True,
        length_buckets: Sequence[int] | bool | None = None,
    ) -> None:
        self.source = source
        self.pack: ModelPack = read_pack_bytes(data, source)
        if not isinstance(self.pack.task_object(source), SequenceClassification) or not self.pack.labels:
            raise ModelFileError(f"{source}: pack task is {self.pack.task!r}; TextClassifier needs a "
                                 f"{SequenceClassification.name} model with labels")
        self.labels: tuple[str, ...] = self.pack.labels
        self.max_seq_len = self.pack.max_seq_len
        self.tokenizer, self._pool = open_checked(data, source, self.pack, backend, num_threads, xnnpack, pool_size,
                                                  length_buckets)
        self.preprocessor = Preprocessor(self.tokenizer, self.max_seq_len)
        first = self._pool.first
        self.backend_name = first.name
        self.num_threads = first.num_threads
        self._output = self.pack.outputs[0]

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        num_threads: int | None = None,
        backend: str = "auto",
        pool_size: int = 1,
        xnnpack: bool = True,
        length_buckets: Sequence[int] | bool | None = None,
    ) -> TextClassifier:
        """Load a packed ``.tflite`` or ``.onnx`` (kind detected from the bytes, not the suffix).

        ``length_buckets`` (opt-in, .tflite): pad each single text up to the next bucket width and
        keep one interpreter per width, so no call reshapes a graph (faster at real lengths, one
        arena and packed-weight copy per bucket used; see ``runtime.length_buckets``).
        """
        return cls(map_model_file(path), str(path), num_threads, backend, pool_size, xnnpack, length_buckets)

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        source: str = "<bytes>",
        num_threads: int | None = None,
        backend: str = "auto",
        pool_size: int = 1,
        xnnpack: bool = True,
        length_buckets: Sequence[int] | bool | None = None,
    ) -> TextClassifier:
        """Load a packed model already in memory (e.g. read from an app bundle)."""
        return cls(bytes(data), source, num_threads, backend, pool_size, xnnpack, length_buckets)

    # ------------------------------------------------------------------ inference

    def ops_info(self) -> dict[str, Any]:
        """The backend's op census / delegated-node report (see Backend.ops_info)."""
        return self._pool.first.ops_info()

    def run_inputs(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Logits for already-encoded int32 [B, S] inputs. [B, S] -> [B, num_labels] float32."""
        outputs = self._pool.run(inputs)
        logits = np.asarray(outputs[self._output], np.float32)
        if logits.ndim != 2 or logits.shape[1] != len(self.labels):
            raise ModelFileError(f"{self.source}: output {self._output!r} has shape {logits.shape}, expected [batch, {len(self.labels)}]")
        if not np.isfinite(logits).all():
            # A label "chosen" from NaN scores would be arbitrary: a corrupt weight must not pass as a prediction.
            raise ModelFileError(f"{self.source}: the model produced non-finite logits (NaN or infinity); its weights are corrupt")
        return logits

    def encode(self, text: str, text_b: str | None = None, what: str = "text") -> Encoding:
        """Encode one text or pair at its own length (no padding), truncating to max_seq_len."""
        for value, name in ((text, what), (text_b, f"{what}_b")):
            if value is None and name != what:
                continue
            if not isinstance(value, str):
                raise TokenizerError(f"{name}: expected a string, got {type(value).__name__}")
            if not value.strip():
                raise TokenizerError(f"{name}: text is empty")
        return self.preprocessor.encode(text, text_b)

    def _batch_inputs(self, encs: Sequence[Encoding], width: int) -> dict[str, np.ndarray]:
        pad = self.tokenizer.pad_id
        n = len(encs)
        ids = np.full((n, width), pad, np.int32)
        types = np.zeros((n, width), np.int32)
        mask = np.zeros((n, width), np.int32)
        for row, e in enumerate(encs):
            ids[row, : e.length] = e.input_ids[: e.length]
            types[row, : e.length] = e.token_type_ids[: e.length]
            mask[row, : e.length] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}

    def _prediction(self, logits: np.ndarray, enc: Encoding) -> Prediction:
        probs = softmax(logits[None])[0]
        top = int(np.argmax(probs))
        return Prediction(
            label=self.labels[top],
            score=float(probs[top]),
            scores={lab: float(p) for lab, p in zip(self.labels, probs)},
            logits=tuple(float(x) for x in logits),
            truncated=enc.truncated,
            num_tokens=enc.length,
            label_index=top,
        )

    def predict(self, text: str, text_b: str | None = None) -> Prediction:
        """Classify one text (or pair) at its real token length."""
        enc = self.encode(text, text_b)
        return self._prediction(self.run_inputs(self._batch_inputs([enc], enc.length))[0], enc)

    def predict_pair(self, text_a: str, text_b: str) -> Prediction:
        """Classify a sentence pair (``[CLS] a [SEP] b [SEP]``, longest-first truncation)."""
        if text_b is None:
            raise TokenizerError("text_b: expected a string for a pair, got None")
        return self.predict(text_a, text_b)

    def encode_all(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list[Encoding]:
        """Encode a list (with optional second segments), naming the bad item on error."""
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise TokenizerError(f"texts: expected a list of strings, got {type(texts).__name__}")
        if pairs is not None and (isinstance(pairs, str) or len(pairs) != len(texts)):
            raise TokenizerError(f"pairs: expected a list of {len(texts)} strings to match texts")
        return [self.encode(t, None if pairs is None else pairs[i], what=f"texts[{i}]") for i, t in enumerate(texts)]

    def iter_batches(self, encs: Sequence[Encoding], batch_size: int = 32, bucket: bool = True) -> Iterator[tuple[list[int], dict[str, np.ndarray]]]:
        """(indices, inputs) per batch; bucketed by length unless ``bucket`` is False."""
        if not isinstance(batch_size, int) or batch_size < 1:
            raise BackendError(f"batch_size is {batch_size!r}, expected an int >= 1")
        lengths = [e.length for e in encs]
        if bucket:
            groups = length_buckets(lengths, batch_size)
        else:
            groups = [list(range(i, min(i + batch_size, len(encs)))) for i in range(0, len(encs), batch_size)]
        for group in groups:
            yield group, self._batch_inputs([encs[i] for i in group], max(lengths[i] for i in group))

    def logits_batch(
        self, texts: Sequence[str], pairs: Sequence[str] | None = None, batch_size: int = 32, bucket: bool = True
    ) -> tuple[np.ndarray, list[Encoding]]:
        """Raw logits [N, num_labels] in input order, and the encodings they came from."""
        encs = self.encode_all(texts, pairs)
        return self.logits_encoded(encs, batch_size, bucket), encs

    def logits_encoded(self, encs: Sequence[Encoding], batch_size: int = 32, bucket: bool = True) -> np.ndarray:
        """Raw logits [N, num_labels] for encodings made by ``encode`` (singles and pairs may mix)."""
        out = np.zeros((len(encs), len(self.labels)), np.float32)
        for group, inputs in self.iter_batches(encs, batch_size, bucket):
            out[group] = self.run_inputs(inputs)
        return out

    def predict_encoded(self, encs: Sequence[Encoding], batch_size: int = 32, bucket: bool = True) -> list[Prediction]:
        """Predictions for encodings made by ``encode``, in their order (callers that name their own inputs)."""
        logits = self.logits_encoded(encs, batch_size, bucket)
        return [self._prediction(logits[i], enc) for i, enc in enumerate(encs)]

    def predict_batch(
        self, texts: Sequence[str], pairs: Sequence[str] | None = None, batch_size: int = 32, bucket: bool = True
    ) -> list[Prediction]:
        """Classify many texts (or pairs); batches grouped by length, results in input order."""
        if len(texts) == 0:
            return []
        return self.predict_encoded(self.encode_all(texts, pairs), batch_size, bucket)

    def __repr__(self) -> str:
        return (
            f"TextClassifier({self.source!r}, backend={self.backend_name!r}, threads={self.num_threads}, "
            f"labels={list(self.labels)}, max_seq_len={self.max_seq_len}, variant={self.pack.variant!r})"
        )


__all__ = ["Prediction", "TextClassifier", "length_buckets", "padding_waste", "softmax"]
