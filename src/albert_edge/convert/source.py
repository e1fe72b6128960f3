"""``ModelSource``: a checkpoint read once -- its weights, and the folder its tokenizer and labels come from.

``convert_checkpoint`` and ``quantize_checkpoint`` take one (or a path, which they load themselves at
the point they always did), so a caller that runs both stages -- the demo -- reads and checks the
checkpoint once, and the weights travel typed (``AlbertWeights``) from the entry to every step.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from albert_edge.convert.assets import TokenizerAsset
    from albert_edge.model.config import AlbertConfig
    from albert_edge.model.weights import AlbertWeights
    from albert_edge.tasks import Task


@dataclass(frozen=True)
class ModelSource:
    """The weights of ``checkpoint`` and where they came from.

    ``checkpoint`` is the path as given: reports name it, and the tokenizer asset, config.json's
    ``id2label``, a labels.txt and a sentence-transformers modules.json are found beside it.
    """

    checkpoint: str | os.PathLike[str]
    weights: AlbertWeights

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

        task = get_task(requested, self.weights, self.checkpoint)
        task.check_weights(self.weights)
        return task

    def max_seq_len(self, requested: int | None) -> int:
        """The pack's ``max_seq_len``: ``requested``, else a sentence-transformers folder's
        ``max_seq_length`` (what it truncates to), else 128; never past the position table
        (``fit_max_seq_len``, the one rule every writer uses)."""
        from albert_edge.model.config import fit_max_seq_len
        from albert_edge.model.sentence_transformers import read_sentence_bert_config

        if requested is None:
            length = read_sentence_bert_config(self.checkpoint).max_seq_length
            requested = None if length is None else min(length, self.config.max_position_embeddings)
        return fit_max_seq_len(requested, self.config, self.weights.source)

    def tokenizer_asset(self, vocab: str | os.PathLike[str] | None = None,
                        do_lower_case: bool | None = None) -> TokenizerAsset:
        """The vocab.txt / spiece.model to pack: ``vocab`` when given, else the one beside the checkpoint;
        checked to fit the embedding table."""
        from albert_edge.convert.assets import find_tokenizer_asset
        from albert_edge.model.sentence_transformers import read_sentence_bert_config

        if do_lower_case is None and read_sentence_bert_config(self.checkpoint).do_lower_case:
            do_lower_case = True  # sentence-transformers lowercases before its tokenizer: the pack must too
        return find_tokenizer_asset(self.checkpoint, vocab, do_lower_case, self.config.vocab_size,
                                    str(self.weights.source))
