"""``albert-edge inspect MODEL.tflite|MODEL.onnx``: the standard TFLite metadata and the pack a model file carries.

Prints what MediaPipe / the Task Library will read (tokenizer process unit, input binding, heads and
their label files) and what albert-edge reads (albert_edge.json), and flags every way they disagree
with each other or with the graph. Exit status 1 when something disagrees, so a script can gate on it.
Reading needs no interpreter and no TensorFlow.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from albert_edge.errors import AlbertEdgeError, ModelFileError
from albert_edge.runtime.flatbuffer import inspect_tflite
from albert_edge.runtime.pack import (
    SETTINGS_MEMBER,
    _no_pack_error,
    _open_tail_zip,
    _read_members,
    model_kind,
    pack_from_members,
    read_model_bytes,
    read_pack_bytes,
    strip_tflite_pack,
)
from albert_edge.runtime.tflite_metadata import (
    check_against_pack,
    metadata_problems,
    read_standard_metadata,
)


def is_model_file(path: str) -> bool:
    """True for a path that names a .tflite or .onnx file (by suffix, or a .tflite by its TFL3 identifier)."""
    if path.endswith((".tflite", ".onnx")):
        return True
    try:
        with open(path, "rb") as fh:
            return model_kind(fh.read(8)) == "tflite"
    except OSError:
        return False


def describe_onnx(path: str, data: bytes) -> dict[str, Any]:
    """The facts ``inspect`` prints for an .onnx: its graph's inputs and outputs and the pack in its
    ``metadata_props``, checked against the graph as every reader checks it (``checked_pack``)."""
    from albert_edge.runtime.consistency import checked_pack
    from albert_edge.runtime.onnx_proto import read_onnx_graph, read_onnx_metadata

    graph = read_onnx_graph(data, path)
    out: dict[str, Any] = {"file": path, "bytes": len(data), "operators": len({n.op_type for n in graph.nodes}),
                           "inputs": {v.name: [v.dtype, list(v.shape)] for v in graph.inputs.values()},
                           "outputs": {v.name: [v.dtype, list(v.shape)] for v in graph.outputs.values()},
                           "metadata_props": sorted(read_onnx_metadata(data, path)),
                           "albert_edge_pack": None, "problems": []}
    try:
        pack = read_pack_bytes(data, path)
        out["albert_edge_pack"] = {k: v for k, v in pack.settings().items() if k != "source"}
        checked_pack(data, path, pack)
    except ModelFileError as exc:
        out["problems"].append(str(exc).split(": ", 1)[-1])
    return out


def describe(path: str) -> dict[str, Any]:
    """The facts ``inspect`` prints for a .tflite or .onnx, as plain data (``problems`` empty when consistent)."""
    data = read_model_bytes(path)
    if path.endswith(".onnx") and model_kind(data) == "onnx":
        return describe_onnx(path, data)
    if model_kind(data) != "tflite":
        raise ModelFileError(f"{path}: not a TFLite model (file identifier 'TFL3' missing at bytes 4..8)")
    flat = strip_tflite_pack(data)
    info = inspect_tflite(flat, path)
    zf = _open_tail_zip(data, path)
    members: dict[str, bytes] = {}
    if zf is not None:
        with zf:
            members = _read_members(zf, path)
    meta = read_standard_metadata(flat, path)
    out: dict[str, Any] = {"file": path, "bytes": len(data), "flatbuffer_bytes": len(flat),
                           "operators": len(info.operator_codes), "associated_files": sorted(members),
                           "standard_metadata": None, "albert_edge_pack": None, "problems": []}
    if meta is not None:
        out["standard_metadata"] = {"lines": meta.summary_lines(), "name": meta.name, "version": meta.version,
                                    "min_parser_version": meta.min_parser_version, "tokenizer": meta.tokenizer,
                                    "inputs": dict(zip(meta.input_names, meta.graph_inputs)),
                                    "outputs": list(meta.output_names)}
        if zf is None:
            # A tool rewrote the flatbuffer and dropped the ZIP: one line saying so and how to fix it,
            # instead of one "not among the appended files" per file.
            out["problems"].append(str(_no_pack_error(data, path)).split(": ", 1)[-1])
        else:
            out["problems"] += metadata_problems(meta, members)
    if SETTINGS_MEMBER in members:
        try:
            pack = pack_from_members(members, path)
        except ModelFileError as exc:
            out["problems"].append(str(exc).split(": ", 1)[-1])
        else:
            out["albert_edge_pack"] = {k: v for k, v in pack.settings().items() if k != "source"}
            _graph_problem(data, pack, path, out["problems"])
            if meta is not None:
                try:
                    check_against_pack(meta, pack, members, path)
                except ModelFileError as exc:
                    line = str(exc).split(": ", 1)[-1]
                    if line not in out["problems"]:
                        out["problems"].append(line)
    return out


def _graph_problem(data: bytes, pack: Any, path: str, problems: list[str]) -> None:
    """The runtime's own load-time check of the pack against the graph (positions, vocab rows,
    outputs): inspect calls a file consistent only if every runtime class would open it."""
    from albert_edge.runtime.consistency import checked_pack

    try:
        checked_pack(data, path, pack)
    except AlbertEdgeError as exc:
        problems.append(str(exc).split(": ", 1)[-1])


def run_model(args: argparse.Namespace) -> int:
    """Print ``describe`` as text (or JSON); 1 when the metadata, the pack or the graph disagree."""
    info = describe(args.checkpoint)
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return 1 if info["problems"] else 0
    meta = info.get("standard_metadata")
    if "flatbuffer_bytes" in info:
        print(f"model:       {info['file']} ({info['bytes']:,} bytes, flatbuffer {info['flatbuffer_bytes']:,}, "
              f"{info['operators']} operator codes)")
        print(f"files:       {', '.join(info['associated_files']) or 'none appended'}")
        print("standard TFLite metadata (MediaPipe / Task Library):" if meta else "standard TFLite metadata: none")
        for line in meta["lines"] if meta else []:
            print(f"  {line}")
    else:
        print(f"model:       {info['file']} ({info['bytes']:,} bytes, ONNX, {info['operators']} operator types)")
        for role in ("inputs", "outputs"):
            print(f"{role + ':':<13}" + ", ".join(f"{name} {dtype} {shape}" for name, (dtype, shape) in info[role].items()))
        print(f"metadata:    {', '.join(info['metadata_props']) or 'no metadata_props'}")
    pack = info["albert_edge_pack"]
    print("albert-edge settings (albert_edge.json):" if pack else "albert-edge settings: none")
    if pack:
        tok = pack["tokenizer"]
        print(f"  task {pack['task']}, {tok['type']} ({tok['file']}), lower-case {tok['do_lower_case']}, "
              f"max_seq_len {tok['max_seq_len']}, labels {pack['labels']}, variant {pack['variant']}, "
              f"written by albert-edge {pack['albert_edge_version']}")
    if info["problems"]:
        for problem in info["problems"]:
            print(f"DISAGREES: {problem}")
        return 1
    print("consistent: metadata, settings and graph agree" if meta or pack else "no metadata to check")
    return 0
