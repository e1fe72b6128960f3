"""Length buckets: single texts padded to a bucket width run on that width's own interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from tests.support.runtime_models import numpy_logits, weights, write_models

from albert_edge.errors import BackendError
from albert_edge.runtime import TextClassifier
from albert_edge.runtime.length_buckets import BucketedBackend, checked_buckets

SENTENCES = ["这家酒店服务很好", "房间很差", "环境不错", "太糟糕了，很失望", "非常满意推荐", "脏", "我们是一个非常好的酒店"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("buckets"), max_seq_len=16)


@pytest.fixture(scope="module")
def bucketed(models):
    return TextClassifier.from_file(models["tflite"], num_threads=1, length_buckets=(4, 8, 16))


def test_bucketed_logits_equal_the_numpy_reference_at_the_real_length(bucketed):
    for text in SENTENCES:
        enc = bucketed.preprocessor.encode(text)
        expected = numpy_logits(weights(), [enc.input_ids], [enc.attention_mask], [enc.token_type_ids])[0]
        np.testing.assert_allclose(bucketed.predict(text).logits, expected, atol=1e-4)


def test_each_bucket_keeps_its_own_interpreter_at_one_shape(bucketed):
    backend = bucketed._pool.first
    assert isinstance(backend, BucketedBackend)
    lengths = {bucketed.preprocessor.encode(t).length for t in SENTENCES}
    for text in SENTENCES:
        bucketed.predict(text)
    used = {backend.width_for(n) for n in lengths}
    assert set(backend._by_width) == used and backend.interpreters() == 1 + len(used)
    for width, inner in backend._by_width.items():
        shapes = {tuple(d["shape"]) for d in inner._interpreter.get_input_details()}
        assert shapes == {(1, width)}


def test_batches_run_on_the_general_interpreter_with_the_same_logits(bucketed, models):
    plain = TextClassifier.from_file(models["tflite"], num_threads=1)
    np.testing.assert_allclose(bucketed.logits_batch(SENTENCES, batch_size=4)[0],
                               plain.logits_batch(SENTENCES, batch_size=4)[0], atol=1e-5)


def test_bucket_widths_are_checked_against_max_seq_len():
    assert checked_buckets(True, 100) == (16, 32, 48, 64, 96, 100)
    assert checked_buckets(None, 128) == ()
    with pytest.raises(BackendError, match=r"expected widths in 1\.\.16"):
        checked_buckets((8, 32), 16)
    with pytest.raises(BackendError, match="expected a list of positive ints"):
        checked_buckets(("a",), 16)
