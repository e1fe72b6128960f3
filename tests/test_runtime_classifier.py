"""TextClassifier: packed settings, real lengths, bucketing, truncation, errors, threads."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from tests.support.runtime_models import LABELS, numpy_logits, weights, write_models

from albert_edge.errors import ModelFileError, TokenizerError
from albert_edge.runtime import Prediction, TextClassifier
from albert_edge.runtime.classifier import length_buckets, padding_waste
from albert_edge.runtime.pack import attach_tflite_pack

SENTENCES = ["这家酒店服务很好", "房间很差", "环境不错", "太糟糕了，很失望", "非常满意推荐", "脏", "hello world", "我们是一个非常好的酒店"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return write_models(tmp_path_factory.mktemp("bag"), max_seq_len=16)


@pytest.fixture(scope="module", params=["tflite", "onnx"])
def clf(request, models):
    return TextClassifier.from_file(models[request.param], num_threads=1)


def _expected(clf: TextClassifier, text: str, text_b: str | None = None) -> np.ndarray:
    enc = clf.preprocessor.encode(text, text_b)
    return numpy_logits(weights(), [enc.input_ids], [enc.attention_mask], [enc.token_type_ids])[0]


def test_from_bytes_equals_from_file(models):
    data = models["onnx"].read_bytes()
    a = TextClassifier.from_bytes(data, "bundle/bag.onnx", num_threads=1).predict("很好")
    b = TextClassifier.from_file(models["onnx"], num_threads=1).predict("很好")
    assert a == b


def test_settings_come_from_the_pack(clf):
    assert clf.labels == LABELS
    assert clf.max_seq_len == 16
    assert clf.tokenizer.kind == "wordpiece"


def test_predict_returns_label_score_and_all_scores(clf):
    pred = clf.predict("这家酒店服务很好")
    assert isinstance(pred, Prediction)
    assert pred.label == "pos" and pred.label_index == 1
    assert set(pred.scores) == set(LABELS)
    assert pred.score == pytest.approx(max(pred.scores.values()))
    assert sum(pred.scores.values()) == pytest.approx(1.0)
    np.testing.assert_allclose(pred.logits, _expected(clf, "这家酒店服务很好"), atol=1e-5)
    assert clf.predict("房间很差").label == "neg"


def test_single_text_runs_at_its_own_token_length(clf):
    seen = []
    backend = clf._pool.first
    original = backend.run
    backend.run = lambda inputs: (seen.append(inputs["input_ids"].shape), original(inputs))[1]
    try:
        pred = clf.predict("好")
    finally:
        del backend.run
    assert seen == [(1, 3)] and pred.num_tokens == 3


def test_batch_is_bucketed_by_length_and_returned_in_input_order(clf):
    texts = SENTENCES * 3
    seen = []
    backend = clf._pool.first
    original = backend.run
    backend.run = lambda inputs: (seen.append(inputs["attention_mask"].copy()), original(inputs))[1]
    try:
        preds = clf.predict_batch(texts, batch_size=4)
    finally:
        del backend.run
    for text, pred in zip(texts, preds):
        np.testing.assert_allclose(pred.logits, _expected(clf, text), atol=1e-5)
    assert len(seen) == 6
    # Each batch is padded only to its own longest row, and bucketing keeps rows similar.
    assert all(mask[:, -1].any() for mask in seen)
    widths = [mask.shape[1] for mask in seen]
    assert widths == sorted(widths)


def test_bucketing_wastes_less_padding_than_input_order():
    lengths = [3, 40, 5, 38, 4, 41, 6, 39]
    sorted_batches = length_buckets(lengths, 2)
    plain = [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert padding_waste(lengths, sorted_batches) < 0.05 < padding_waste(lengths, plain)
    assert sorted(i for b in sorted_batches for i in b) == list(range(8))


def test_long_text_is_truncated_with_a_flag_not_an_error(clf):
    pred = clf.predict("很好" * 500)
    assert pred.truncated is True and pred.num_tokens == clf.max_seq_len
    assert clf.predict("很好").truncated is False


def test_pair_prediction_uses_both_segments(clf):
    pair = clf.predict_pair("房间干净", "服务很差")
    np.testing.assert_allclose(pair.logits, _expected(clf, "房间干净", "服务很差"), atol=1e-5)
    assert pair.num_tokens == 2 + 4 + 1 + 4 + 0  # [CLS] 4 [SEP] 4 [SEP]
    batch = clf.predict_batch(["房间干净", "好"], pairs=["服务很差", "差"])
    np.testing.assert_allclose(batch[0].logits, pair.logits, atol=1e-6)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_empty_text_is_a_clear_error(clf, text):
    with pytest.raises(TokenizerError, match="empty"):
        clf.predict(text)


def test_empty_item_in_a_batch_is_named(clf):
    with pytest.raises(TokenizerError, match=r"texts\[1\]"):
        clf.predict_batch(["好", ""])


def test_non_string_input_is_a_clear_error(clf):
    with pytest.raises(TokenizerError, match="expected a string"):
        clf.predict(None)  # type: ignore[arg-type]


def test_concurrent_calls_from_many_threads_give_the_single_threaded_answers(models):
    clf = TextClassifier.from_file(models["tflite"], num_threads=1, pool_size=2)
    texts = [SENTENCES[i % len(SENTENCES)] + "好" * (i % 5) for i in range(40)]
    want = [clf.predict(t).logits for t in texts]
    errors: list[BaseException] = []
    got: dict[tuple[int, int], tuple[float, ...]] = {}
    barrier = threading.Barrier(8)

    def hammer(worker: int) -> None:
        try:
            barrier.wait()
            for rep in range(3):
                # Each worker walks the texts in its own rotation so that lengths interleave.
                shift = (worker * 5 + rep) % len(texts)
                order = list(range(shift, len(texts))) + list(range(shift))
                for i in order:
                    got[(worker, i)] = clf.predict(texts[i]).logits
                batch = clf.predict_batch(texts, batch_size=5)
                for i, p in enumerate(batch):
                    assert p.logits == want[i]
        except BaseException as exc:  # noqa: BLE001 - reported to the main thread
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert all(got[(w, i)] == want[i] for (w, i) in got)
    assert clf._pool._created <= 2


def test_feature_extraction_model_is_refused_by_the_classifier(models, tmp_path):
    from tests.support.runtime_models import make_pack, tflite_bytes

    pack = make_pack()
    feature = type(pack)(**{**pack.__dict__, "labels": None, "task": "feature_extraction"})
    path = tmp_path / "f.tflite"
    path.write_bytes(attach_tflite_pack(tflite_bytes(weights()), feature))
    with pytest.raises(ModelFileError, match="sequence_classification"):
        TextClassifier.from_file(path)


@pytest.mark.parametrize("content", [b"", b"not a model at all", b"\x00" * 100])
def test_non_model_files_raise_one_model_file_error(tmp_path, content):
    path = tmp_path / "x.tflite"
    path.write_bytes(content)
    with pytest.raises(ModelFileError, match="x.tflite"):
        TextClassifier.from_file(path)


def test_truncated_model_file_raises_model_file_error(models, tmp_path):
    data = models["tflite"].read_bytes()
    for keep in (0.95, 0.5):
        path = tmp_path / f"cut{keep}.tflite"
        path.write_bytes(data[: int(len(data) * keep)])
        with pytest.raises(ModelFileError, match=path.name):
            TextClassifier.from_file(path)


def test_unpacked_model_raises_model_file_error(tmp_path):
    from tests.support.runtime_models import tflite_bytes

    path = tmp_path / "bare.tflite"
    path.write_bytes(tflite_bytes(weights()))
    with pytest.raises(ModelFileError, match="no albert-edge pack"):
        TextClassifier.from_file(path)


def test_truncated_onnx_file_raises_model_file_error(models, tmp_path):
    data = models["onnx"].read_bytes()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFileError, match="cut.onnx"):
        TextClassifier.from_file(path)


def test_sentencepiece_pack_drives_the_tokenizer(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    import io

    from tests.support.runtime_models import make_pack, onnx_bytes

    corpus = ["the room was good", "the service was bad", "good food and a good view", "bad bed, bad night"] * 20
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(corpus), model_writer=buf, vocab_size=30, model_type="char",
        control_symbols=["[CLS]", "[SEP]", "[MASK]"], pad_id=0, unk_id=1, bos_id=-1, eos_id=-1,
        minloglevel=2, num_threads=1,
    )
    pack = make_pack().with_variant("fp32", tokenizer_type="sentencepiece", tokenizer_asset=buf.getvalue(), do_lower_case=True)
    path = tmp_path / "sp.onnx"
    # The embedding table has one row per piece: the load-time check refuses any other size.
    wts = weights()
    wts["emb"] = wts["emb"][: spm.SentencePieceProcessor(model_proto=buf.getvalue()).get_piece_size()]
    path.write_bytes(onnx_bytes(wts, pack))
    clf = TextClassifier.from_file(path, num_threads=1)
    assert clf.tokenizer.kind == "sentencepiece"
    enc = clf.preprocessor.encode("The room was GOOD")
    assert enc.input_ids[0] == clf.tokenizer.cls_id and max(enc.input_ids) < 30
    pred = clf.predict("The room was GOOD")
    want = numpy_logits(wts, [enc.input_ids], [enc.attention_mask], [enc.token_type_ids])[0]
    np.testing.assert_allclose(pred.logits, want, atol=1e-5)


def test_non_finite_logits_from_corrupt_weights_are_refused_not_labelled():
    from tests.support.runtime_models import make_pack, onnx_bytes

    wts = weights()
    wts["c"] = np.array([np.nan, 0.0], np.float32)
    clf = TextClassifier.from_bytes(onnx_bytes(wts, make_pack()), "nan.onnx", num_threads=1)
    with pytest.raises(ModelFileError, match="nan.onnx: the model produced non-finite logits"):
        clf.predict("很好")


def test_a_vocab_longer_than_the_embedding_table_fails_the_load(tmp_path):
    from tests.support.runtime_models import make_pack, tflite_bytes

    pack = make_pack()
    longer = type(pack)(**{**pack.__dict__, "tokenizer_asset": pack.tokenizer_asset + b"".join(
        f"extra{i}\n".encode() for i in range(4096))})
    path = tmp_path / "long_vocab.tflite"
    path.write_bytes(attach_tflite_pack(tflite_bytes(weights()), longer))
    with pytest.raises(ModelFileError, match="long_vocab.tflite.*embedding table"):
        TextClassifier.from_file(path)


def _tensor_field_at(flat: bytes, tensor: int, index: int) -> int:
    """Byte position of what field ``index`` of subgraph 0's tensor ``tensor`` points to (a vector's or a
    string's length), read by hand: 3 name, 0 shape."""
    import struct

    def u32(p: int) -> int:
        return struct.unpack_from("<I", flat, p)[0]

    def field(table: int, i: int) -> int:   # an offset field, followed
        vtable = table - struct.unpack_from("<i", flat, table)[0]
        at = table + struct.unpack_from("<H", flat, vtable + 4 + 2 * i)[0]
        return at + u32(at)

    def element(vector: int, i: int) -> int:   # a vector of tables' element
        return vector + 4 + 4 * i + u32(vector + 4 + 4 * i)

    subgraph = element(field(u32(0), 2), 0)
    return field(element(field(subgraph, 0), tensor), index)


def test_litert_verifies_the_flatbuffer_it_opens_by_path_as_it_does_bytes(models, tmp_path):
    # A damaged offset deep in the graph is refused by LiteRT's own flatbuffers verifier for a path as for bytes
    # (record 0285; docs/architecture.md says so): what the load-time check adds is what no verifier sees.
    # If a LiteRT release drops the verifier on the path, this fails and the docs must change.
    import struct

    from ai_edge_litert.interpreter import Interpreter

    data = bytearray(models["tflite"].read_bytes())
    struct.pack_into("<I", data, _tensor_field_at(bytes(data), 0, 3), 0x7FFFFFF0)
    path = tmp_path / "long_name.tflite"
    path.write_bytes(bytes(data))
    for way in ({"model_path": str(path)}, {"model_content": bytes(data)}):
        with pytest.raises(ValueError, match="not a valid Flatbuffer"):
            Interpreter(**way)
    with pytest.raises(ModelFileError, match="long_name.tflite"):
        TextClassifier.from_file(path)


def test_a_graph_the_checks_refuse_fails_with_their_message_although_litert_builds_it(models, tmp_path):
    # A constant whose shape claims fewer rows than its buffer holds: LiteRT checks only that a buffer is not
    # too small, so it would build and run this; the load-time check refuses it.
    import struct

    from ai_edge_litert.interpreter import Interpreter

    from albert_edge.runtime.flatbuffer import read_tflite_graph
    from albert_edge.runtime.pack import tflite_flatbuffer_view

    data = bytearray(models["tflite"].read_bytes())
    graph = read_tflite_graph(tflite_flatbuffer_view(bytes(data)))
    # The embedding table (the most rows): GATHER reads rows by id, so fewer rows still build.
    table = max((t for t in graph.tensors if t.constant and len(t.shape) == 2), key=lambda t: t.shape[0])
    shape = _tensor_field_at(bytes(data), table.index, 0)
    assert struct.unpack_from("<i", data, shape + 4)[0] == table.shape[0]
    struct.pack_into("<i", data, shape + 4, table.shape[0] - 1)
    path = tmp_path / "short_shape.tflite"
    path.write_bytes(bytes(data))
    Interpreter(model_path=str(path)).allocate_tensors()   # LiteRT alone builds it
    with pytest.raises(ModelFileError, match=r"short_shape.tflite: tensor .* has shape"):
        TextClassifier.from_file(path)


@pytest.mark.parametrize("kind", ["tflite", "onnx"])
def test_no_interpreter_is_built_before_the_checks_have_passed(models, monkeypatch, kind):
    import albert_edge.runtime.classifier as classifier

    events: list[str] = []
    lock = threading.Lock()
    real_check, real_backend = classifier.check_model_consistency, classifier.open_backend

    def check(*args, **kwargs):
        facts = real_check(*args, **kwargs)
        with lock:
            events.append("checked")
        return facts

    def backend(*args, **kwargs):
        with lock:
            events.append("build")
        return real_backend(*args, **kwargs)

    monkeypatch.setattr(classifier, "check_model_consistency", check)
    monkeypatch.setattr(classifier, "open_backend", backend)
    TextClassifier.from_file(models[kind], num_threads=1)
    assert events == ["checked", "build"]
