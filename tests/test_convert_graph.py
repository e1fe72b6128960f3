"""The graph builders on small configs: every architecture switch, graph option and task."""

from __future__ import annotations

import pytest

from albert_edge.convert import (
    GraphOptions,
    build_onnx_model,
    census_onnx,
    census_tflite,
    check_parity,
    convert_to_tflite_bytes,
    onnx_model_bytes,
)
from albert_edge.errors import ConversionError
from albert_edge.model import AlbertConfig, random_weights
from albert_edge.model.config import ACTIVATIONS
from albert_edge.tasks import task_classes

SMALL = {"vocab_size": 120, "embedding_size": 16, "hidden_size": 32, "num_hidden_layers": 3,
         "num_attention_heads": 4, "intermediate_size": 48, "max_position_embeddings": 64}


def small(num_labels: int | None = 3, seed: int = 5, **changes):
    return random_weights(AlbertConfig(**{**SMALL, **changes}), num_labels=num_labels, seed=seed)


def assert_parity(model: bytes, weights, **kwargs) -> None:
    result = check_parity(model, weights, **kwargs)
    assert result.passed, result.failure_line()


@pytest.fixture(scope="module")
def base():
    return small()


def test_preln_graph_matches_reference_in_both_formats():
    weights = small(ln_type="preln", embedding_order="project_then_add")
    assert_parity(convert_to_tflite_bytes(weights), weights)
    assert_parity(onnx_model_bytes(weights), weights)


def test_exact_gelu_config_uses_the_builtin_gelu_op_and_matches_reference():
    weights = small(hidden_act="gelu_exact")
    tflite = convert_to_tflite_bytes(weights)
    ops = census_tflite(tflite)
    assert ops["GELU"] == 3 and not any(op.startswith("Flex") for op in ops)
    assert_parity(tflite, weights)
    assert census_onnx(build_onnx_model(weights))["Erf"] == 3


def test_layers_follow_the_group_plan_with_two_groups_of_two_inner_layers():
    weights = small(num_hidden_layers=4, num_hidden_groups=2, inner_group_num=2)
    assert_parity(convert_to_tflite_bytes(weights), weights)
    assert_parity(onnx_model_bytes(weights), weights)


def test_bert_without_embedding_projection_matches_reference():
    weights = small(model_type="bert", embedding_order="no_projection", embedding_size=32, num_hidden_groups=3,
                    hidden_act="relu")
    assert_parity(convert_to_tflite_bytes(weights), weights)
    assert_parity(onnx_model_bytes(weights), weights)


@pytest.mark.parametrize("act", ACTIVATIONS)
def test_every_config_activation_matches_reference_in_both_formats(act):
    weights = small(hidden_act=act, num_hidden_layers=1)
    assert_parity(convert_to_tflite_bytes(weights), weights)
    assert_parity(onnx_model_bytes(weights), weights)


CHOICES = {"default": GraphOptions(), "dynamic_batch": GraphOptions(batch_one=False), "fused_qkv": GraphOptions(fused_qkv=True),
           "adj_y": GraphOptions(attention_layout="adj_y"), "tanh_ops": GraphOptions(gelu="tanh_ops"),
           "head_groups": GraphOptions(attention_head_groups=3)}


@pytest.fixture(scope="module")
def choices(base):
    return {name: convert_to_tflite_bytes(base, options=options) for name, options in CHOICES.items()}


@pytest.mark.parametrize("name", sorted(CHOICES))
def test_every_graph_choice_matches_reference(base, choices, name):
    assert_parity(choices[name], base)


def test_fused_qkv_replaces_three_projections_by_one_per_layer(base, choices):
    fused = census_tflite(choices["fused_qkv"])
    separate = census_tflite(choices["default"])
    assert separate["FULLY_CONNECTED"] - fused["FULLY_CONNECTED"] == 2 * base.config.num_hidden_layers
    assert fused["SPLIT"] == base.config.num_hidden_layers and "SPLIT" not in separate


def test_forcing_exact_gelu_on_a_tanh_checkpoint_drifts_measurably(base):
    result = check_parity(convert_to_tflite_bytes(base, options=GraphOptions(gelu="exact")), base)
    assert result.max_abs_hidden > 1e-4 and not result.passed


def test_feature_extraction_exports_hidden_states_and_pooled_output():
    from ai_edge_litert.interpreter import Interpreter

    weights = small(num_labels=None)
    tflite = convert_to_tflite_bytes(weights)
    outputs = Interpreter(model_content=tflite).get_signature_list()["serving_default"]["outputs"]
    assert sorted(outputs) == ["last_hidden_state", "pooled_output"]
    onnx_model = build_onnx_model(weights)
    assert [o.name for o in onnx_model.graph.output] == ["last_hidden_state", "pooled_output"]
    for model in (tflite, onnx_model.SerializeToString()):
        result = check_parity(model, weights)
        assert result.passed and result.max_abs_logit is None and result.max_abs_pooled <= 1e-4


def test_classification_task_needs_a_classifier_head():
    with pytest.raises(ConversionError, match="classifier head"):
        build_onnx_model(small(num_labels=None), task="sequence_classification")


def test_converter_hook_configures_the_converter_before_conversion(base):
    import tensorflow as tf

    seen = []

    def hook(converter):
        seen.append(type(converter).__name__)
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]

    ops = census_tflite(convert_to_tflite_bytes(base, converter_hook=hook))
    assert seen and seen[0].startswith("TFLite") and "Converter" in seen[0]  # the SavedModel route's converter
    assert ops.get("DEQUANTIZE", 0) > 0


def test_converter_failure_becomes_a_one_line_conversion_error(base):
    import tensorflow as tf

    def needs_calibration(converter):
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]

    with pytest.raises(ConversionError, match="TFLite conversion failed") as info:
        convert_to_tflite_bytes(base, converter_hook=needs_calibration)
    assert "\n" not in str(info.value)


def test_parity_check_reports_drift_beyond_tolerance_as_failed(base):
    result = check_parity(onnx_model_bytes(base), base, tolerance={"logits": 1e-12, "hidden": 1e-12})
    assert not result.passed
    assert 0 < result.max_abs_logit < 1e-4
    assert "parity check failed" in result.failure_line()


def test_onnx_fp16_stores_each_weight_once_as_float16(base):
    from onnx import TensorProto

    model = build_onnx_model(base, fp16=True)
    stored = {init.name: init.data_type for init in model.graph.initializer if init.name.endswith(".fp16")}
    assert len(stored) == len(base.tensors) and set(stored.values()) == {TensorProto.FLOAT16}
    assert_parity(model.SerializeToString(), base, variant="fp16")


def test_graph_options_reject_unknown_choices():
    with pytest.raises(ConversionError, match="gelu"):
        GraphOptions(gelu="erf_ops")
    for groups in (0, 5, 2.5, True):
        with pytest.raises(ConversionError, match="attention_head_groups"):
            GraphOptions(attention_head_groups=groups)


def _fc_feeding(graph, tensor: int) -> int:
    """The index of the FULLY_CONNECTED that ``tensor`` comes from through reshapes, transposes and splits."""
    producers = {out: index for index, op in enumerate(graph.ops) for out in op.outputs}
    index = producers[tensor]
    while graph.ops[index].name != "FULLY_CONNECTED":
        op = graph.ops[index]
        index = producers[op.inputs[1] if op.name == "SPLIT" else op.inputs[0]]
    return index


def test_attention_in_head_groups_runs_them_in_turn_with_v_projected_first_and_the_same_logits(base, choices):
    """Record 0300: one group's scores, mask, softmax and probs @ V before the next group's, and V's projection
    before Q's and K's (written after them, XNNPACK ran every group's softmax before the first probs @ V and
    kept all groups' [seq, seq] tensors live). Asked for 3 groups, SMALL's 4 heads run in 2."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    from albert_edge.convert.tf_graph import head_groups
    from albert_edge.runtime.flatbuffer import read_tflite_graph

    assert GraphOptions().attention_head_groups == 1
    assert [head_groups(h, GraphOptions(attention_head_groups=3)) for h in (12, 4, 2, 1)] == [3, 2, 2, 1]
    layers = base.config.num_hidden_layers
    grouped = read_tflite_graph(choices["head_groups"])
    group = "BATCH_MATMUL ADD SOFTMAX BATCH_MATMUL"
    assert " ".join(op.name for op in grouped.ops).count(f"{group} {group} CONCATENATION") == layers
    assert census_tflite(choices["head_groups"])["SOFTMAX"] == 2 * census_tflite(choices["default"])["SOFTMAX"]
    bmms = [i for i, op in enumerate(grouped.ops) if op.name == "BATCH_MATMUL"]
    for scores, context in zip(bmms[0::2], bmms[1::2]):
        v_fc = _fc_feeding(grouped, grouped.ops[context].inputs[1])
        assert all(v_fc < _fc_feeding(grouped, t) for t in grouped.ops[scores].inputs[:2])
    runners = {name: Interpreter(model_content=choices[name], num_threads=1).get_signature_runner("serving_default")
               for name in ("default", "head_groups")}
    rng = np.random.default_rng(3)
    for length in (3, 17, 64):
        ids = rng.integers(1, 120, size=(1, length)).astype(np.int32)
        mask = (np.arange(length) < max(1, length - 4)).astype(np.int32)[None]   # padded tail
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": (1 - mask).astype(np.int32)}
        np.testing.assert_allclose(runners["default"](**feed)["logits"], runners["head_groups"](**feed)["logits"],
                                   atol=1e-6)


@pytest.mark.parametrize("task", [cls.name for cls in task_classes()])
def test_attention_in_head_groups_matches_the_reference_for_every_task(task):
    """The groups change the encoder every task's head reads (``quantize --attention-head-groups`` writes them for
    whatever task the checkpoint has): each registered task's grouped graph passes its own parity check."""
    heads = {"question_answering": {"num_labels": None, "span_head": True}, "feature_extraction": {"num_labels": None},
             "sequence_regression": {"num_labels": 1}}
    weights = random_weights(AlbertConfig(**SMALL), seed=5, **{"num_labels": 3, **heads.get(task, {})})
    grouped = convert_to_tflite_bytes(weights, options=GraphOptions(attention_head_groups=2), task=task)
    assert census_tflite(grouped)["SOFTMAX"] >= 2 * SMALL["num_hidden_layers"]
    assert_parity(grouped, weights, task=task)


def test_ort_transformer_optimizer_fuses_attention_and_dedup_keeps_one_weight_copy(tmp_path):
    optimizer = pytest.importorskip("onnxruntime.transformers.optimizer")
    import onnx

    from albert_edge.convert import deduplicate_initializers

    weights = small(num_hidden_layers=3, embedding_order="add_then_project")
    path = tmp_path / "model.onnx"
    path.write_bytes(onnx_model_bytes(weights))
    optimized = optimizer.optimize_model(str(path), model_type="bert", num_heads=4, hidden_size=32, opt_level=0)
    optimized.save_model_to_file(str(tmp_path / "fused.onnx"))
    fused = onnx.load(str(tmp_path / "fused.onnx"))
    ops = census_onnx(fused)
    assert ops["com.microsoft:Attention"] == 3 and ops["com.microsoft:SkipLayerNormalization"] >= 6
    qkv_bytes = 32 * 96 * 4
    before = fused.ByteSize()
    assert deduplicate_initializers(fused) >= 2
    assert before - fused.ByteSize() >= 2 * qkv_bytes
    onnx.checker.check_model(fused)
    assert_parity(fused.SerializeToString(), weights)


def test_default_graph_is_batch_one_with_constant_reshapes_fewer_partitions_and_the_same_logits(base, choices):
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    from albert_edge.quantize.census import census_tflite_variant

    one, dynamic = choices["default"], choices["dynamic_batch"]
    assert GraphOptions().batch_one and one == convert_to_tflite_bytes(base, options=GraphOptions(batch_one=True))
    ops, default_ops = census_tflite(one), census_tflite(dynamic)
    # Nothing reads the runtime shape (position ids are a CUMSUM of the input): no dynamic tensors.
    assert default_ops["PACK"] > 1 and not any(ops.get(op) for op in ("SHAPE", "PACK", "STRIDED_SLICE"))
    assert census_tflite_variant(one).partitions < census_tflite_variant(dynamic).partitions
    runners = {}
    for name, model in (("one", one), ("default", dynamic)):
        interpreter = Interpreter(model_content=model, num_threads=1)
        runners[name] = interpreter.get_signature_runner("serving_default")
    rng = np.random.default_rng(0)
    for length in (3, 17, 64):
        ids = rng.integers(1, 120, size=(1, length)).astype(np.int32)
        mask = (np.arange(length) < max(1, length - 5)).astype(np.int32)[None]   # padded tail
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": (1 - mask).astype(np.int32)}
        np.testing.assert_allclose(runners["one"](**feed)["logits"], runners["default"](**feed)["logits"], atol=1e-5)
    # A raw interpreter fed [2, seq] would read it as one text of 2*seq tokens (constant reshapes);
    # the runtime runs such batches row by row (next test).


def test_batch_one_file_keeps_the_load_time_position_check_and_runs_batches_row_by_row(base, choices):
    import numpy as np

    from albert_edge.runtime.backends import open_backend
    from albert_edge.runtime.consistency import graph_facts

    one, dynamic = choices["default"], choices["dynamic_batch"]
    facts, _ = graph_facts(one, "one.tflite")
    assert facts.position_rows == graph_facts(dynamic, "dynamic.tflite")[0].position_rows > 0
    single, default = open_backend(one, "one.tflite", "litert", 1), open_backend(dynamic, "d.tflite", "litert", 1)
    assert single.batch_one and not default.batch_one
    rng = np.random.default_rng(1)
    ids = rng.integers(1, 120, size=(3, 9)).astype(np.int32)
    mask = (np.arange(9)[None] < np.array([[9], [6], [2]])).astype(np.int32)
    feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    np.testing.assert_allclose(single.run(feed)["logits"], default.run(feed)["logits"], atol=1e-5)


def test_shared_layer_loop_writes_albert_s_layer_once_in_a_while_body_with_the_same_logits(base, choices):
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    from albert_edge.bench_latency.memory import weight_sharing
    from albert_edge.runtime.flatbuffer import read_tflite_subgraphs

    looped = convert_to_tflite_bytes(base, options=GraphOptions(shared_layer_loop=True))
    assert census_tflite(looped)["WHILE"] == 1
    layers = base.config.num_hidden_layers
    unrolled_graphs, looped_graphs = read_tflite_subgraphs(choices["default"]), read_tflite_subgraphs(looped)
    fcs = [sum(op.name == "FULLY_CONNECTED" for op in g.ops) for g in looped_graphs]
    # main: embedding projection, pooler, classifier; the body: Q, K, V, attention output, FFN in and out.
    assert len(looped_graphs) == 3 and fcs[0] == 3 and 6 in fcs
    unrolled, once = weight_sharing(unrolled_graphs), weight_sharing(looped_graphs)
    assert unrolled["packed_weight_uses"] == 3 + 6 * layers and once["packed_weight_uses"] == 3 + 6
    assert once["packed_weight_buffers"] == unrolled["packed_weight_buffers"] == 9
    assert once["weights_packed_per_use_mb"] == pytest.approx(once["weights_packed_once_mb"])
    assert_parity(looped, base)
    runners = {name: Interpreter(model_content=model, num_threads=1).get_signature_runner("serving_default")
               for name, model in (("loop", looped), ("unrolled", choices["default"]))}
    rng = np.random.default_rng(2)
    for length in (3, 17, 64, 5):   # real lengths, resized on every call
        ids = rng.integers(1, 120, size=(2, length)).astype(np.int32)
        mask = (np.arange(length) < max(1, length - 2)).astype(np.int32)[None].repeat(2, axis=0)
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": (1 - mask).astype(np.int32)}
        np.testing.assert_allclose(runners["loop"](**feed)["logits"], runners["unrolled"](**feed)["logits"],
                                   atol=1e-5)


def test_shared_layer_loop_leaves_layers_that_share_nothing_unrolled():
    weights = small(model_type="bert", embedding_order="no_projection", embedding_size=32, num_hidden_groups=3)
    looped = convert_to_tflite_bytes(weights, options=GraphOptions(shared_layer_loop=True))
    assert "WHILE" not in census_tflite(looped)
    assert census_tflite(looped) == census_tflite(convert_to_tflite_bytes(weights))


def test_shared_layer_loop_runs_every_inner_layer_of_the_one_group_per_iteration():
    weights = small(num_hidden_layers=3, inner_group_num=2)
    looped = convert_to_tflite_bytes(weights, options=GraphOptions(shared_layer_loop=True))
    assert census_tflite(looped)["WHILE"] == 1
    assert_parity(looped, weights)


def test_census_counts_the_ops_of_a_while_body_too(base, choices):
    """The census (convert's report, its non-builtin op check) reads every subgraph: a Flex op in the loop's
    body must not hide there."""
    looped = convert_to_tflite_bytes(base, options=GraphOptions(shared_layer_loop=True))
    ops = census_tflite(looped)
    assert ops["FULLY_CONNECTED"] == 3 + 6 and ops["LESS"] == 1 and ops["WHILE"] == 1
    assert census_tflite(choices["default"])["FULLY_CONNECTED"] == 3 + 6 * base.config.num_hidden_layers


@pytest.mark.slow
def test_head_groups_hold_one_group_s_scores_at_the_first_call_not_all_heads(tmp_path):
    """Record 0300's claim, measured as the bench measures it: 12 heads at 512 tokens are 12 MiB of fp32 scores
    when all heads run at once and 4 MiB for one group of 4; with V projected after Q and K the three groups'
    scores were all live (13.2 against 13.7 MiB), with V first 5.4."""
    import json
    import subprocess
    import sys

    weights = small(num_attention_heads=12, hidden_size=48, num_hidden_layers=2, max_position_embeddings=512)
    own = {}
    for groups in (1, 3):
        path = tmp_path / f"groups{groups}.tflite"
        path.write_bytes(convert_to_tflite_bytes(weights, options=GraphOptions(attention_head_groups=groups)))
        proc = subprocess.run([sys.executable, "-m", "albert_edge.bench_latency.worker", "--model", str(path),
                               "--backend", "litert", "--threads", "2", "--seq-len", "512", "--runs", "2",
                               "--warmup", "1"], capture_output=True, text=True, timeout=300, check=True)
        own[groups] = json.loads(proc.stdout)["memory"]["model_own_after_first_mb"]
    assert own[1] - own[3] > 6.0, own
