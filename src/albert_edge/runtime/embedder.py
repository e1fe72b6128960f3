"""TextEmbedder: one model file in, one sentence embedding per text out.

For a feature-extraction pack (albert_edge.tasks.FeatureExtraction): the pack says how to pool
(CLS / mean / max) and whether to L2-normalise, and whether the graph already did it (its output
is then ``sentence_embedding``) or returns ``last_hidden_state`` for numpy to pool here. A pack
without pooling settings (written before they existed, or converted with ``--pooling none``) is
mean-pooled, sentence-transformers' default. Texts run at their real length, batches grouped by
length, results in input order; the backend pool makes it safe to call from several threads.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

from albert_edge.errors import ModelFileError, TokenizerError
from albert_edge.runtime.classifier import length_buckets, open_checked
from albert_edge.runtime.pack import ModelPack, map_model_file, read_pack_bytes
from albert_edge.tasks import FeatureExtraction
from albert_edge.tasks.feature_extraction import cosine_rows, l2_normalize
from albert_edge.tokenizer import Encoding, Preprocessor


class TextEmbedder:
    """Sentence embeddings with a packed .tflite or .onnx feature-extraction model."""

    def __init__(self, data: bytes, source: str = "<bytes>", num_threads: int | None = None, backend: str = "auto",
                 pool_size: int = 1, xnnpack: bool = True) -> None:
        self.source = source
        self.pack: ModelPack = read_pack_bytes(data, source)
        task = self.pack.task_object(source)
        if not isinstance(task, FeatureExtraction):
            raise ModelFileError(f"{source}: pack task is {self.pack.task!r}; TextEmbedder needs a "
                                 f"{FeatureExtraction.name} model")
        self.task: FeatureExtraction = task
        self.max_seq_len = self.pack.max_seq_len
        self.tokenizer, self._pool = open_checked(data, source, self.pack, backend, num_threads, xnnpack, pool_size)
        self.preprocessor = Preprocessor(self.tokenizer, self.max_seq_len)
        first = self._pool.first
        self.backend_name = first.name
        self.num_threads = first.num_threads
        wanted = "sentence_embedding" if "sentence_embedding" in self.pack.outputs else "last_hidden_state"
        if wanted not in first.output_names:
            raise ModelFileError(f"{source}: the graph has no output {wanted!r} (it has {list(first.output_names)})")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str], num_threads: int | None = None, backend: str = "auto",
                  pool_size: int = 1, xnnpack: bool = True) -> TextEmbedder:
        """Load a packed ``.tflite`` or ``.onnx`` (kind detected from the bytes, not the suffix)."""
        return cls(map_model_file(path), str(path), num_threads, backend, pool_size, xnnpack)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>", num_threads: int | None = None, backend: str = "auto",
                   pool_size: int = 1, xnnpack: bool = True) -> TextEmbedder:
        """Load a packed model already in memory (e.g. read from an app bundle)."""
        return cls(bytes(data), source, num_threads, backend, pool_size, xnnpack)

    @property
    def dimension(self) -> int:
        """Embedding width (the encoder's hidden size), read from a one-token run."""
        return int(self.embed("a").shape[0])

    @property
    def normalized(self) -> bool:
        """Whether embeddings are unit vectors (then cosine similarity is a dot product)."""
        return self.task.normalize

    def run_inputs(self, inputs: dict[str, np.ndarray]) -> np.ndarray:
        """Embeddings for already-encoded int32 [B, S] inputs. [B, S] -> [B, H] float32."""
        outputs = self._pool.run(inputs)
        try:
            vectors = self.task.embeddings(outputs, inputs["attention_mask"])
        except KeyError as exc:
            raise ModelFileError(f"{self.source}: the graph returned no {exc.args[0]!r} output") from None
        if vectors.ndim != 2 or vectors.shape[0] != inputs["input_ids"].shape[0] or not np.all(np.isfinite(vectors)):
            raise ModelFileError(f"{self.source}: embedding output has shape {list(vectors.shape)} or non-finite "
                                 f"values, expected finite [batch, hidden]")
        return vectors.astype(np.float32)

    def encode(self, text: str, what: str = "text") -> Encoding:
        """Encode one text at its own length (no padding), truncating to max_seq_len."""
        if not isinstance(text, str):
            raise TokenizerError(f"{what}: expected a string, got {type(text).__name__}")
        if not text.strip():
            raise TokenizerError(f"{what}: text is empty")
        return self.preprocessor.encode(text)

    def _batch_inputs(self, encs: Sequence[Encoding]) -> dict[str, np.ndarray]:
        width = max(e.length for e in encs)
        ids = np.full((len(encs), width), self.tokenizer.pad_id, np.int32)
        types = np.zeros((len(encs), width), np.int32)
        mask = np.zeros((len(encs), width), np.int32)
        for row, e in enumerate(encs):
            ids[row, : e.length] = e.input_ids[: e.length]
            types[row, : e.length] = e.token_type_ids[: e.length]
            mask[row, : e.length] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}

    def embed(self, text: str) -> np.ndarray:
        """One text -> [H] float32, run at its real token length."""
        return self.run_inputs(self._batch_inputs([self.encode(text)]))[0]

    def embed_batch(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """Many texts -> [N, H] float32 in input order; batches are grouped by length to limit padding."""
        if isinstance(texts, str) or not isinstance(texts, Sequence):
            raise TokenizerError(f"texts: expected a list of strings, got {type(texts).__name__}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise TokenizerError(f"batch_size is {batch_size!r}, expected an int >= 1")
        encs = [self.encode(t, what=f"texts[{i}]") for i, t in enumerate(texts)]
        out = np.zeros((len(encs), 0), np.float32)
        for group in length_buckets([e.length for e in encs], batch_size):
            vectors = self.run_inputs(self._batch_inputs([encs[i] for i in group]))
            if out.shape[1] == 0:
                out = np.zeros((len(encs), vectors.shape[1]), np.float32)
            out[group] = vectors
        return out

    def similarity(self, a: str | np.ndarray, b: str | np.ndarray) -> float:
        """Cosine similarity of two texts (or embeddings), in [-1, 1]."""
        va = self.embed(a) if isinstance(a, str) else np.asarray(a)
        vb = self.embed(b) if isinstance(b, str) else np.asarray(b)
        return float(cosine_rows(va[None], vb[None])[0])

    def __repr__(self) -> str:
        return (f"TextEmbedder({self.source!r}, backend={self.backend_name!r}, threads={self.num_threads}, "
                f"pooling={self.task.pooling!r}, normalize={self.task.normalize}, max_seq_len={self.max_seq_len}, "
                f"variant={self.pack.variant!r})")


__all__ = ["TextEmbedder", "l2_normalize"]
