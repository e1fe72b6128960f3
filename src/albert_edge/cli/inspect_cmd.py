"""``albert-edge inspect CHECKPOINT``: what a checkpoint is, before converting it."""

from __future__ import annotations

import argparse
import json

from albert_edge.cli.hub_args import accept_hub_ids
from albert_edge.model import load_checkpoint
from albert_edge.model.config import AlbertConfig
from albert_edge.model.weights import AlbertWeights


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "inspect", help="show a checkpoint's config, naming scheme and parameter count",
        description="Read a TF1 (Google / brightmart albert_zh / BERT) or Hugging Face checkpoint and report "
                    "its config, the naming scheme detected, the parameter count and the ignored variables.")
    parser.add_argument("checkpoint", help="TF1 prefix or directory, or Hugging Face directory; or a .tflite or .onnx model "
                                           "file (prints its standard metadata or graph I/O, and albert-edge settings)")
    parser.add_argument("--config", help="config JSON to use instead of the one beside the checkpoint")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.add_argument("--list-ignored", action="store_true", help="also list the ignored variable names")
    accept_hub_ids(parser, "checkpoint")
    parser.set_defaults(run=run)


def summary(weights: AlbertWeights) -> dict:
    """The facts ``inspect`` prints, as plain data."""
    cfg = weights.config
    return {
        "source": weights.source,
        "scheme": weights.scheme,
        "config": cfg.to_dict(),
        "parameters": weights.num_parameters(),
        "shared_blocks": len(cfg.used_groups()) * cfg.inner_group_num,
        "num_labels": weights.num_labels,
        "ignored_count": len(weights.ignored),
        "ignored": list(weights.ignored),
    }


def _normalisation(cfg: AlbertConfig) -> str:
    """The layer's norm as a reader would name it: MobileBERT has no LayerNorm to place (NoNorm everywhere)."""
    if cfg.mobilebert is None:
        return cfg.ln_type
    layout = cfg.mobilebert
    return (f"NoNorm, bottleneck {layout.intra_bottleneck_size}, "
            f"{layout.num_feedforward_networks} FFN(s) per layer")


def run(args: argparse.Namespace) -> int:
    from albert_edge.cli.inspect_model import is_model_file, run_model

    if is_model_file(args.checkpoint):
        return run_model(args)
    from albert_edge.tasks import detect_task

    weights = load_checkpoint(args.checkpoint, args.config, verify_checksums=False)  # no TensorFlow import
    info = summary(weights)
    task = detect_task(weights, args.checkpoint)  # what convert would export by default
    info["task"] = {"name": task.name, "config": task.settings()}
    if not args.list_ignored:
        info.pop("ignored")
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    cfg = weights.config
    print(f"checkpoint:  {info['source']}")
    print(f"scheme:      {info['scheme']}")
    print(f"parameters:  {info['parameters']:,} ({info['parameters'] / 1e6:.2f} M)")
    print(f"structure:   {cfg.model_type}, {cfg.num_hidden_layers} layers over {info['shared_blocks']} "
          "stored block(s), "
          f"{cfg.embedding_order}, {_normalisation(cfg)}, {cfg.hidden_act}")
    print(f"head:        {'classifier, ' + str(weights.num_labels) + ' labels' if weights.num_labels else 'none'}")
    settings = ", ".join(f"{k} {v}" for k, v in task.settings().items())
    print(f"task:        {task.name}{' (' + settings + ')' if settings else ''}")
    print(f"ignored:     {info['ignored_count']} variable(s)")
    for name in info.get("ignored", []):
        print(f"  {name}")
    print("config:")
    for key, value in cfg.to_dict().items():
        print(f"  {key}: {value}")
    return 0
