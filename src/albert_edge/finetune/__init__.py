"""Fine-tune ALBERT for sequence classification on the CPU with TensorFlow (floor 3).

``tf_model`` is the forward pass in plain TF ops over ``tf.Variable``s keyed by the canonical
weight names, so a trained model is an ``AlbertWeights`` again and goes through the same
checkpoint writers and converters as any downloaded one. ``trainer`` holds the loop.
Importing this package imports TensorFlow; the runtime never does.
"""

from __future__ import annotations

from albert_edge.finetune.tf_model import TfAlbertClassifier
from albert_edge.finetune.trainer import FinetuneResult, FinetuneSettings, finetune

__all__ = ["FinetuneResult", "FinetuneSettings", "TfAlbertClassifier", "finetune"]
