"""Floor 1: ALBERT config, canonical weights, checkpoint readers/writers and the numpy reference.

Every checkpoint dialect (Google TF1, brightmart albert_zh TF1, Hugging Face ALBERT/BERT) is read
into one canonical ``AlbertWeights``; ``reference_forward`` is the float64 judge of every export.
TensorFlow and torch are imported only inside the readers/writers that need them.
"""

from albert_edge.model.config import (
    AlbertConfig,
    albert_tiny_zh_config,
    albert_tiny_zh_google_config,
    load_config,
    parse_config_dict,
)
from albert_edge.model.checkpoint import checkpoint_format, load_checkpoint
from albert_edge.model.hf import read_hf_checkpoint, write_hf_checkpoint
from albert_edge.model.reference import ReferenceOutput, reference_forward
from albert_edge.model.tf1 import read_tf1_checkpoint, write_tf1_checkpoint
from albert_edge.model.weights import AlbertWeights, expected_shapes, random_weights

__all__ = [
    "AlbertConfig",
    "AlbertWeights",
    "ReferenceOutput",
    "albert_tiny_zh_config",
    "albert_tiny_zh_google_config",
    "checkpoint_format",
    "expected_shapes",
    "load_checkpoint",
    "load_config",
    "parse_config_dict",
    "random_weights",
    "read_hf_checkpoint",
    "read_tf1_checkpoint",
    "reference_forward",
    "write_hf_checkpoint",
    "write_tf1_checkpoint",
]
