"""Third-party generated code carried verbatim (no hand edits).

``tflite_metadata_schema_py_generated.py`` is ``mediapipe/tasks/metadata/metadata_schema_py_generated.py``
from the ``mediapipe==1.2.2`` wheel (Apache-2.0, (c) The MediaPipe Authors): the Python code ``flatc``
generates from ``metadata_schema.fbs`` (TFLite Model Metadata, schema 1.5.0, file identifier ``M001``),
object API included. It is copied rather than depended on because the mediapipe wheel pulls OpenCV,
matplotlib and sounddevice into the environment only for this file, and ``tflite-support`` (the other
publisher) pins packages that conflict with TensorFlow 2.21. ``tests/test_mediapipe_compat.py`` checks
that the copy is byte-identical to the file in the pinned wheel. It needs only ``flatbuffers``.
"""
