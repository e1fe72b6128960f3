"""The Hugging Face shard index (``model.safetensors.index.json`` / ``pytorch_model.bin.index.json``),
validated before any shard is opened.

The index is a file from the user's disk that names other files to read. Unchecked, a weight map
naming the index itself recursed until a RecursionError, an integer shard name was a TypeError,
and a name like ``../../x`` could point outside the checkpoint. Here the index must be a JSON object
whose ``weight_map`` maps tensor names (str) to plain file names of existing shards in the index's
own folder, of the index's own kind (``.safetensors`` or ``.bin``); anything else is one
CheckpointError line naming the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from albert_edge.errors import CheckpointError
from albert_edge.inputs.jsonfile import load_json_file

#: The largest published checkpoints have a few hundred shards; an ALBERT/BERT has 1-2.
MAX_SHARDS = 1024
#: Tensor names in one weight map: BERT-large has ~400, the largest LLM indexes ~10 k.
MAX_ENTRIES = 100_000


@dataclass(frozen=True)
class ShardIndex:
    """The shard files of a checkpoint and which tensors each must hold."""

    path: Path
    shards: tuple[Path, ...]
    weight_map: dict[str, str]

    def expected_names(self, shard: Path) -> set[str]:
        """Tensor names the index places in ``shard``."""
        return {name for name, file in self.weight_map.items() if file == shard.name}


def shard_suffix(index: Path) -> str:
    """``.safetensors`` or ``.bin``: the kind of shard an index of this name may list."""
    stem = index.name[: -len(".index.json")]
    return Path(stem).suffix


def read_shard_index(path: str | Path) -> ShardIndex:
    """Parse and validate a shard index; every problem is a CheckpointError naming ``path``."""
    path = Path(path)
    data = load_json_file(path, CheckpointError)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise CheckpointError(f"{path}: shard index has no weight_map object (tensor name -> shard file)")
    if len(weight_map) > MAX_ENTRIES:
        raise CheckpointError(f"{path}: weight_map has {len(weight_map)} entries, more than {MAX_ENTRIES}")
    suffix = shard_suffix(path)
    for name, file in weight_map.items():
        if not isinstance(file, str):
            raise CheckpointError(f"{path}: weight_map entry {name!r} names shard {file!r}, expected a file name")
        _check_shard_name(path, file, suffix)
    names = sorted(set(weight_map.values()))
    if len(names) > MAX_SHARDS:
        raise CheckpointError(f"{path}: {len(names)} shard files, more than {MAX_SHARDS}")
    shards = []
    for name in names:
        shard = path.parent / name
        if not shard.is_file():
            raise CheckpointError(f"{path}: shard {name} is missing")
        shards.append(shard)
    return ShardIndex(path=path, shards=tuple(shards), weight_map=dict(weight_map))


def _check_shard_name(index: Path, name: str, suffix: str) -> None:
    """A shard is a plain file name beside the index, of the index's kind, and not an index itself."""
    plain = name not in ("", ".", "..") and "/" not in name and "\\" not in name and "\0" not in name
    if not plain:
        raise CheckpointError(f"{index}: shard name {name!r} is not a plain file name in the checkpoint folder")
    if name == index.name or name.endswith(".index.json"):
        raise CheckpointError(f"{index}: weight_map names an index file ({name}) as a shard")
    if not name.endswith(suffix):
        raise CheckpointError(f"{index}: shard {name} is not a {suffix} file like the index")
