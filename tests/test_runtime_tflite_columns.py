"""The load-time check over numpy columns finds exactly the weight problems the per-tensor pass finds."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest
from tests.support.runtime_models import tflite_bytes, weights

from albert_edge.runtime.consistency import _weight_problem, tensor_problem, tflite_facts
from albert_edge.runtime.flatbuffer import TfliteGraph, _column_objects, read_tflite_graph
from albert_edge.runtime.tflite_columns import Ragged


@pytest.fixture(scope="module")
def graph() -> TfliteGraph:
    found = read_tflite_graph(tflite_bytes(weights()), "m")
    assert found.columns is not None and found.walked is None   # the common layout is read as columns
    return found


def _per_tensor_pass(graph: TfliteGraph) -> str | None:
    """What tensor_problem said before the columns: every tensor described in turn."""
    tensors, _ = _column_objects(graph.columns, graph.info.operator_codes, graph.info.buffer_sizes)
    return next((p for p in map(_weight_problem, tensors) if p is not None), None)


def _ragged(rows: list[list], dtype) -> Ragged:
    return Ragged(np.array([x for row in rows for x in row], dtype), np.array([len(row) for row in rows], np.int64))


def _damaged(graph: TfliteGraph, rng: random.Random) -> TfliteGraph:
    """The graph with random quantization, types and shapes: sane and insane values, counts that disagree."""
    t, ops = graph.columns
    n = len(t)
    rate = rng.choice((0.0, 0.002, 0.01, 0.05))   # how often a value is insane: some graphs stay sane
    shapes = [list(s) for s in t.shapes.lists()]
    for shape in shapes:
        if shape and rng.random() < rate * 4:
            shape[rng.randrange(len(shape))] = rng.choice((-1, 0, 1, 3, 2**31 - 1))
        if rng.random() < rate:
            shape.extend([rng.choice((1, 2, 2**31 - 1))] * rng.choice((1, 40)))   # 40 dims of 2**31: past float64
    scales, zero_points = [], []
    for _ in range(n):
        quantized = rng.random() < 0.3
        count = rng.choice((1, 1, 2, 3)) if quantized else 0
        scales.append([rng.choice((1.0, 0.25, 1e-30, 0.0, -1.0, float("nan"), float("inf"))) if rng.random() < rate * 4
                       else 0.5 for _ in range(count)])
        z_count = count if rng.random() >= rate * 2 else rng.choice((0, 1, 4))
        zero_points.append([rng.choice((0, 5, -128, 127, 255, -129, 256, 2**40, -(2**62))) if rng.random() < rate * 6
                            else 0 for _ in range(z_count)])
    codes = [rng.choice((0, 1, 2, 3, 4, 7, 9, 17, 5, -1, 50)) if rng.random() < rate * 4 else c for c in t.type_codes.tolist()]
    columns = replace(t, shapes=_ragged(shapes, np.int32), scales=_ragged(scales, np.float32),
                      zero_points=_ragged(zero_points, np.int64), type_codes=np.array(codes, np.int8))
    return replace(graph, columns=(columns, ops))


def test_the_vectorised_check_names_the_same_first_problem_as_the_per_tensor_pass(graph, recwarn):
    assert tensor_problem(graph) is None and _per_tensor_pass(graph) is None
    rng = random.Random(39)
    seen = {"none": 0, "problem": 0}
    for _ in range(300):
        damaged = _damaged(graph, rng)
        expected = _per_tensor_pass(damaged)
        assert tensor_problem(damaged) == expected
        assert not recwarn.list, recwarn.list[0]   # a hostile shape must not print a numpy warning
        seen["none" if expected is None else "problem"] += 1
    assert seen["none"] > 10 and seen["problem"] > 100, seen


def test_the_facts_from_columns_are_the_facts_from_the_tensor_objects(graph):
    walked = replace(graph, columns=None, walked=(graph.tensors, graph.ops))
    assert tflite_facts(graph) == tflite_facts(walked)
    assert tflite_facts(graph).embedding_rows is not None
