"""Peer: Google's 2026 path, litert-torch 0.10 (PyTorch -> .tflite) + litert-quantizer 0.11 (runs in its own venv).

Run by ``benchmarks/suites/peers.py`` with ``~/.cache/albert-edge/peers/litert/bin/python``. Steps, as the two
projects document them:

1. ``transformers.AlbertForSequenceClassification.from_pretrained(HF, attn_implementation="eager")``,
   wrapped to return the logits tensor (``litert_torch.convert`` takes positional tensors only).
2. ``litert_torch.convert(module, sample_args)`` -> fp32 ``.tflite``. One attempt with a dynamic
   sequence dimension (``dynamic_shapes``, 2..128) first; if it fails, the static [1, 128] export, and the
   error goes into the notes. The fp32 file is checked against PyTorch's logits on the sample.
3. litert-torch's documented PT2E recipe (``PT2EQuantizer`` with
   ``get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True)``, ``prepare_pt2e`` /
   ``convert_pt2e``, ``QuantConfig(pt2e_quantizer=...)``) -> ``pt2e_int8``. Built as documented; whether
   LiteRT runs it is for peers.py's evaluation to find (a failure there is listed, not hidden).
4. litert-quantizer on that fp32 file: ``recipe.dynamic_wi8_afp32()`` (int8 weights per channel, int8
   dynamic activations) and ``recipe.dynamic_wi4_afp32()`` (int4 weights per channel, activations
   quantized at run time; its policy covers FULLY_CONNECTED and EMBEDDING_LOOKUP, so the word table is
   int4 too when litert-torch lowers the embedding to EMBEDDING_LOOKUP).
5. The same two recipes on **albert-edge's own fp32 file** (``--albert-edge-fp32``), to see what the
   quantizer makes of a file it did not write: the notes say whether the appended pack (ZIP) and the
   TFLite metadata survive and what type the word table ends up in.

Each file is built on its own: one that fails is reported under ``errors`` (peers.py lists it as failed)
and the others are still written. Prints one JSON line: files, errors, notes per file, package versions.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
import zipfile
from importlib import metadata
from pathlib import Path

from build_args import build_parser, fresh_out

MAX_SEQ = 128
VOCAB_ROWS = 21128  # the sample's word table has one row per vocabulary entry


def load_logits_module(hf: str):
    """The checkpoint as an ``nn.Module`` of three positional int64 tensors returning the logits."""
    import torch
    from transformers import AlbertForSequenceClassification

    model = AlbertForSequenceClassification.from_pretrained(hf, attn_implementation="eager")
    model.config.return_dict = False

    class Logits(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)[0]

    return Logits(model.eval()).eval()


def sample_args():
    import torch

    ids = torch.randint(100, 8000, (1, MAX_SEQ), dtype=torch.long)
    mask = torch.ones(1, MAX_SEQ, dtype=torch.long)
    mask[0, 60:] = 0
    return ids, mask, torch.zeros(1, MAX_SEQ, dtype=torch.long)


def short_error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"


def export_fp32(module, path: Path) -> dict:
    """litert_torch.convert, dynamic sequence first (once), else static [1, 128]; checked against PyTorch."""
    import litert_torch
    import numpy as np
    import torch

    args = sample_args()
    seq = torch.export.Dim("seq", min=2, max=MAX_SEQ)
    notes: dict = {"dynamic_seq": False, "dynamic_export_error": None}
    try:
        edge = litert_torch.convert(module, args, dynamic_shapes=({1: seq}, {1: seq}, {1: seq}))
        notes["dynamic_seq"] = True
    except Exception as exc:  # noqa: BLE001 - any failure of the dynamic attempt means: export static, say why
        notes["dynamic_export_error"] = short_error(exc)
        edge = litert_torch.convert(module, args)
    edge.export(str(path))
    with torch.no_grad():
        expected = module(*args).numpy()
    # litert-torch's default enable_x64=False turns the int64 inputs into int32 ones: fed as such.
    got = np.asarray(edge(*(a.to(torch.int32) for a in args)))
    notes["max_abs_logit_diff_vs_torch"] = float(np.abs(got - expected).max())
    return notes


def export_pt2e_int8(module, path: Path) -> dict:
    """litert-torch's documented PT2E dynamic int8 recipe (per-channel, symmetric)."""
    import litert_torch
    import torch
    from litert_torch.quantize.pt2e_quantizer import (
        PT2EQuantizer,
        get_symmetric_quantization_config,
    )
    from litert_torch.quantize.quant_config import QuantConfig
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    args = sample_args()
    quantizer = PT2EQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True))
    with torch.no_grad():
        prepared = prepare_pt2e(torch.export.export(module, args).module(), quantizer)
        prepared(*args)
        converted = convert_pt2e(prepared, fold_quantize=False)
    litert_torch.convert(converted, args, quant_config=QuantConfig(pt2e_quantizer=quantizer)).export(str(path))
    return {"recipe": "PT2EQuantizer(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True))"}


def quantizer_module():
    """litert-quantizer's package (imported as ``litert_quantizer``; ``ai_edge_quantizer`` before the rename)."""
    try:
        from litert_quantizer import quantizer, recipe
    except ImportError:
        from ai_edge_quantizer import quantizer, recipe
    return quantizer, recipe


def quantize(source: Path, target: Path, recipe_name: str) -> dict:
    """One litert-quantizer recipe on one fp32 .tflite, as its README's Python API does it."""
    quantizer, recipe = quantizer_module()
    qt = quantizer.Quantizer(str(source))
    qt.load_quantization_recipe(getattr(recipe, recipe_name)())
    qt.quantize().export_model(str(target))
    return {"recipe": f"recipe.{recipe_name}()", "source": source.name}


def describe(path: Path) -> dict:
    """What is in a written .tflite: ops, the word table's type, the appended ZIP, the metadata entries."""
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model(str(path))
    op_names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
    type_names = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
    ops: collections.Counter = collections.Counter()
    for graph in model.subgraphs:
        for op in graph.operators:
            code = model.operatorCodes[op.opcodeIndex]
            ops[op_names.get(max(code.builtinCode, code.deprecatedBuiltinCode), str(code.builtinCode))] += 1
    word_table = sorted({type_names.get(t.type, str(t.type)) for g in model.subgraphs for t in g.tensors
                         if t.shape is not None and len(t.shape) == 2 and t.shape[0] == VOCAB_ROWS})
    members = zipfile.ZipFile(path).namelist() if zipfile.is_zipfile(path) else []
    inputs = [[int(d) for d in model.subgraphs[0].tensors[i].shape] for i in model.subgraphs[0].inputs]
    return {"size_bytes": path.stat().st_size, "ops": dict(sorted(ops.items())), "word_table_types": word_table,
            "appended_zip_members": members,
            "metadata": sorted(m.name.decode() if isinstance(m.name, bytes) else str(m.name)
                               for m in (model.metadata or [])),
            "input_shapes": inputs}


def build_one(files: dict, errors: dict, notes: dict, key: str, path: Path, make) -> None:
    """Run one build step; its file, or its error, and its notes land in the dicts."""
    try:
        notes[key] = make(path) or {}
        notes[key].update(describe(path))
        files[key] = str(path)
    except Exception as exc:  # noqa: BLE001 - a peer step that fails is reported, the others still run
        errors[key] = short_error(exc)
        print(f"build_litert: {key} failed: {errors[key]}", file=sys.stderr)


def parse_args() -> argparse.Namespace:
    parser = build_parser()
    parser.add_argument("--albert-edge-fp32", default="", help="albert-edge's fp32 .tflite to quantize as well")
    return parser.parse_args()


def main() -> int:
    args = parse_args()
    out = fresh_out(args.out)
    out.mkdir(parents=True)
    files: dict[str, str] = {}
    errors: dict[str, str] = {}
    notes: dict[str, dict] = {}
    stdout, sys.stdout = sys.stdout, sys.stderr  # the converters print; our stdout is one JSON line
    try:
        module = load_logits_module(args.hf)
        fp32 = out / "litert_torch_fp32.tflite"
        build_one(files, errors, notes, "fp32", fp32, lambda p: export_fp32(module, p))
        build_one(files, errors, notes, "pt2e_int8", out / "litert_torch_pt2e_int8.tflite",
                  lambda p: export_pt2e_int8(load_logits_module(args.hf), p))
        sources = [("", fp32)] if "fp32" in files else []
        if args.albert_edge_fp32:
            sources.append(("albert_edge_", Path(args.albert_edge_fp32)))
        for prefix, source in sources:
            for bits in ("8", "4"):
                key = f"{prefix}dynamic_wi{bits}"
                build_one(files, errors, notes, key, out / f"{prefix}quantizer_dynamic_wi{bits}.tflite",
                          lambda p, s=source, b=bits: quantize(s, p, f"dynamic_wi{b}_afp32"))
        if args.albert_edge_fp32:
            notes["albert_edge_fp32_source"] = describe(Path(args.albert_edge_fp32))
    finally:
        sys.stdout = stdout
    versions = {}
    for dist in ("litert-torch", "litert-quantizer", "litert-converter", "ai-edge-litert", "torch", "torchao",
                 "transformers"):
        try:
            versions[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    print(json.dumps({"files": files, "errors": errors, "notes": notes, "versions": versions}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
