"""Peer: ExecuTorch XNNPACK .pte, fp32 and 8da8w (runs in its own venv).

Run by ``benchmarks/suites/peers.py`` with ``~/.cache/albert-edge/peers/executorch/bin/python``.
``optimum-cli`` has no ExecuTorch text-classification task (optimum-executorch covers causal LMs and a
few others), so the export is the one ExecuTorch documents for any ``nn.Module``:

1. ``transformers.AlbertForSequenceClassification.from_pretrained(HF, attn_implementation="eager")``.
2. For 8da8w only: torchao ``quantize_`` with ``Int8DynamicActivationIntxWeightConfig(weight_dtype=int8,
   weight_granularity=PerAxis(0))``: int8 weights with one scale per output channel, activations
   quantized per token at run time. The config's default granularity, ``PerGroup(32)``, leaves every
   linear layer whose input width is not a multiple of 32 in float, and ALBERT-Tiny's hidden width is
   312 (= 8 x 3 x 13): all Q/K/V/attention-output/FFN-in layers would stay fp32 and only FFN-out
   (1248 wide) would be quantized. Per-channel quantizes all of them; the builder counts the
   quantized linears and fails if any is left float.
3. ``torch.export.export`` with a dynamic sequence dimension (2..128) so the file runs every text at its
   real length (falls back to a static [1, 128] export if the model does not trace dynamically; the
   sidecar JSON says which), then ``to_edge_transform_and_lower(partitioner=[XnnpackPartitioner()])``
   and ``to_executorch()``.

Writes ``OUT/<name>.pte`` plus ``OUT/<name>.json`` (dynamic_seq, delegated node counts); prints one
JSON line.
"""

from __future__ import annotations

import json
import sys
from importlib import metadata
from pathlib import Path

from build_args import parse_build_args

MAX_SEQ = 128


def load_model(hf: str):
    from transformers import AlbertForSequenceClassification

    model = AlbertForSequenceClassification.from_pretrained(hf, attn_implementation="eager")
    model.config.return_dict = False
    return model.eval()


class Logits:
    def __new__(cls, model):
        import torch

        class _Wrap(torch.nn.Module):
            def __init__(self, inner):
                super().__init__()
                self.inner = inner

            def forward(self, input_ids, attention_mask, token_type_ids):
                return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                                  token_type_ids=token_type_ids)[0]

        return _Wrap(model).eval()


def quantize_8da8w(model) -> int:
    """torchao 8da8w, per output channel; returns how many linear layers were quantized."""
    import torch
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig, quantize_
    from torchao.quantization.granularity import PerAxis

    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    quantize_(model, Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int8, weight_granularity=PerAxis(0)))
    still_float = [m for m in model.modules() if isinstance(m, torch.nn.Linear)
                   and type(m.weight).__name__ in ("Parameter", "Tensor")]
    if still_float:
        raise SystemExit(f"8da8w left {len(still_float)} of {len(linears)} linear layers float")
    return len(linears)


def export_pte(module, path: Path) -> dict:
    """torch.export (dynamic sequence if it traces) + XNNPACK partitioner -> .pte; returns the sidecar dict."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import (
        XnnpackPartitioner,
    )
    from executorch.exir import to_edge_transform_and_lower

    example = (torch.ones(1, MAX_SEQ, dtype=torch.long), torch.ones(1, MAX_SEQ, dtype=torch.long),
               torch.zeros(1, MAX_SEQ, dtype=torch.long))
    seq = torch.export.Dim("seq", min=2, max=MAX_SEQ)
    dynamic_error = None
    with torch.no_grad():
        try:
            program = torch.export.export(module, example, dynamic_shapes=({1: seq}, {1: seq}, {1: seq}))
            dynamic = True
        except Exception as exc:  # noqa: BLE001 - any trace failure means: export static instead
            dynamic_error = " ".join(str(exc).split())[:300]
            program = torch.export.export(module, example)
            dynamic = False
        lowered = to_edge_transform_and_lower(program, partitioner=[XnnpackPartitioner()])
    graph = lowered.exported_program().graph_module.graph
    calls = [n for n in graph.nodes if n.op == "call_function"]
    delegated = sum(1 for n in calls if "executorch_call_delegate" in str(n.target))
    others = sorted({str(n.target).split(":")[0].replace("<EdgeOpOverload: ", "").rstrip(">") for n in calls
                     if "executorch_call_delegate" not in str(n.target) and "getitem" not in str(n.target)})
    path.write_bytes(lowered.to_executorch().buffer)
    return {"dynamic_seq": dynamic, "max_seq": MAX_SEQ, "dynamic_export_error": dynamic_error,
            "delegate_calls": delegated, "ops_outside_xnnpack": others}


def main() -> int:
    hf, out = parse_build_args()
    out.mkdir(parents=True)
    files, notes = {}, {}
    for name in ("fp32", "8da8w"):
        model = load_model(hf)
        quantized = quantize_8da8w(model) if name == "8da8w" else 0
        path = out / f"model_{name}.pte"
        sidecar = export_pte(Logits(model), path)
        sidecar["quantized_linears"] = quantized
        path.with_suffix(".json").write_text(json.dumps(sidecar, indent=1) + "\n", encoding="utf-8")
        files[name], notes[name] = str(path), sidecar
    versions = {d: metadata.version(d) for d in ("executorch", "torch", "torchao", "transformers")}
    print(json.dumps({"files": files, "notes": notes, "versions": versions}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
