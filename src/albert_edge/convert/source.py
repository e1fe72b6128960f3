"""``ModelSource``: a checkpoint read once -- its weights, and the folder its tokenizer and labels come from.

``convert_checkpoint`` and ``quantize_checkpoint`` take one (or a path, which they load themselves at
the point they always did), so a caller that runs both stages -- the demo -- reads and checks the
checkpoint once, and the weights travel typed (``AlbertWeights``) from the entry to every step.
What else the folder says -- the task, the class names (config.json ``id2label``, labels.txt), the
tokenizer asset, sentence-transformers' length and casing -- is resolved by the source once and
remembered, so neither stage re-opens the path for it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from albert_edge.errors import ConfigError

if TYPE_CHECKING:
    from albert_edge.convert.assets import TokenizerAsset
    from albert_edge.model.config import AlbertConfig
    from albert_edge.model.weights import AlbertWeights
    from albert_edge.model.sentence_transformers import SentenceBertConfig
    from albert_edge.tasks import Task

_T = TypeVar("_T")


@dataclass(frozen=True)
class ModelSource:
    """The weights of ``checkpoint`` and where they came from.

    ``checkpoint`` is the path as given: reports name it, and the tokenizer asset, config.json's
    ``id2label``, a labels.txt and a sentence-transformers modules.json are found beside it.
    """

    checkpoint: str | os.PathLike[str]
    weights: AlbertWeights
    # What has been resolved from the folder, by question: each file beside the checkpoint is read once.
    _resolved: dict[tuple, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def _once(self, key: tuple, resolve: Callable[[], _T]) -> _T:
        if key not in self._resolved:
            self._resolved[key] = resolve()
        return self._resolved[key]

    @classmethod
    def load(cls, checkpoint: str | os.PathLike[str],
             config: AlbertConfig | str | os.PathLike[str] | None = None) -> ModelSource:
        """Read ``checkpoint`` (``config``, an AlbertConfig or config path, overrides the one beside it)."""
        from albert_edge.model import load_checkpoint

        return cls(checkpoint, load_checkpoint(checkpoint, config))

    @classmethod
    def of(cls, checkpoint: ModelSource | str | os.PathLike[str]) -> ModelSource:
        """``checkpoint`` itself when it is already a ModelSource, else the checkpoint at that path, read now."""
        return checkpoint if isinstance(checkpoint, ModelSource) else cls.load(checkpoint)

    @property
    def config(self) -> AlbertConfig:
        return self.weights.config

    def task(self, requested: Task | str | None) -> Task:
        """The task asked for (None: detected from the weights and a sentence-transformers folder),
        checked against the weights (a head the task needs must be there)."""
        from albert_edge.tasks import get_task

        def resolve() -> Task:
            task = get_task(requested, self.weights, self.checkpoint)
            task.check_weights(self.weights)
            return task

        return resolve() if requested is not None and not isinstance(requested, str) else \
            self._once(("task", requested), resolve)

    def checkpoint_labels(self, width: int) -> tuple[list[str], str] | None:
        """Class names the folder gives for a ``width``-class head, and where from: config.json's
        ``id2label`` (unless LABEL_i defaults), else a labels.txt beside it; None when neither fits."""
        def resolve() -> tuple[list[str], str] | None:
            named = hf_labels(self.checkpoint)
            if named and len(named) == width:
                return named, "config.json id2label"
            return labels_txt_beside(self.checkpoint, width)

        return self._once(("labels", width), resolve)

    def sentence_bert_config(self) -> SentenceBertConfig:
        """The folder's ``sentence_bert_config.json`` (empty when it is not a sentence-transformers folder)."""
        from albert_edge.model.sentence_transformers import read_sentence_bert_config

        return self._once(("sentence_bert_config",), lambda: read_sentence_bert_config(self.checkpoint))

    def max_seq_len(self, requested: int | None) -> int:
        """The pack's ``max_seq_len``: ``requested``, else a sentence-transformers folder's
        ``max_seq_length`` (what it truncates to), else 128; never past the position table
        (``fit_max_seq_len``, the one rule every writer uses)."""
        from albert_edge.model.config import fit_max_seq_len

        if requested is None:
            length = self.sentence_bert_config().max_seq_length
            requested = None if length is None else min(length, self.config.max_position_embeddings)
        return fit_max_seq_len(requested, self.config, self.weights.source)

    def tokenizer_asset(self, vocab: str | os.PathLike[str] | None = None,
                        do_lower_case: bool | None = None) -> TokenizerAsset:
        """The vocab.txt / spiece.model to pack: ``vocab`` when given, else the one beside the checkpoint;
        checked to fit the embedding table."""
        from albert_edge.convert.assets import find_tokenizer_asset

        if do_lower_case is None and self.sentence_bert_config().do_lower_case:
            do_lower_case = True  # sentence-transformers lowercases before its tokenizer: the pack must too
        return self._once(("tokenizer", None if vocab is None else str(vocab), do_lower_case),
                          lambda: find_tokenizer_asset(self.checkpoint, vocab, do_lower_case, self.config.vocab_size,
                                                       str(self.weights.source)))


def hf_labels(checkpoint: str | os.PathLike[str]) -> list[str] | None:
    """Class names from a Hugging Face config.json's ``id2label``, unless they are the LABEL_i defaults."""
    from albert_edge.convert.assets import checkpoint_dir

    from albert_edge.inputs.jsonfile import load_json_file

    path = checkpoint_dir(checkpoint) / "config.json"
    if not path.is_file():
        return None
    data = load_json_file(path, ConfigError)  # bounded: a hostile nesting is one line, not a RecursionError
    id2label = data.get("id2label") if isinstance(data, dict) else None
    if not isinstance(id2label, dict) or not id2label:
        return None
    # Ids must be 0..n-1 and names distinct one-line strings, or the pack would pair ids with wrong names.
    ids = sorted((int(key), value) for key, value in id2label.items() if str(key).isdigit())
    names = [value if isinstance(value, str) else str(value) if type(value) is int else "" for _, value in ids]
    if [i for i, _ in ids] != list(range(len(id2label))) or len(set(names)) != len(names) or \
            not all(name and name == name.strip() and name.isprintable() for name in names):
        shown = ", ".join(repr(v)[:20] for v in list(id2label.values())[:4])
        raise ConfigError(f"{path}: id2label ({shown}{', ...' if len(id2label) > 4 else ''}) is not distinct "
                          f"one-line class names for ids 0..{len(id2label) - 1}; fix it or pass --labels")
    return None if all(name == f"LABEL_{i}" for i, name in enumerate(names)) else names


def labels_txt_beside(checkpoint: str | os.PathLike[str], width: int) -> tuple[list[str], str] | None:
    """The names of a ``labels.txt`` beside the checkpoint (one per line, class-id order) and its path,
    when it holds exactly ``width`` names; convert and quantize both read it, so the same checkpoint gets
    the same names from either command."""
    from albert_edge.convert.assets import checkpoint_dir
    from albert_edge.inputs.data import read_text_lines  # one line naming the file if it is not UTF-8

    path = checkpoint_dir(checkpoint) / "labels.txt"
    if not path.is_file():
        return None
    names = [str(line) for line in read_text_lines(path)]
    return (names, str(path)) if len(names) == width else None

