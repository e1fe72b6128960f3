"""The static BuiltinOperator name table agrees with the schema LiteRT installs."""

from __future__ import annotations

import subprocess
import sys

import pytest

from albert_edge.runtime.flatbuffer import builtin_op_name
from albert_edge.runtime.tflite_op_names import BUILTIN_OP_NAMES


def test_table_matches_the_installed_litert_schema():
    schema = pytest.importorskip("ai_edge_litert.schema_py_generated")
    names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_") and isinstance(v, int)}
    assert {code: names[code] for code in BUILTIN_OP_NAMES if code in names} == BUILTIN_OP_NAMES
    assert builtin_op_name(9) == "FULLY_CONNECTED" and builtin_op_name(32) == "CUSTOM"


def test_naming_the_ops_of_a_model_does_not_import_the_generated_schema():
    code = ("import sys; from albert_edge.runtime.flatbuffer import builtin_op_name; "
            "assert builtin_op_name(9) == 'FULLY_CONNECTED'; "
            "print('ai_edge_litert.schema_py_generated' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
