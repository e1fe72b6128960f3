"""The model pack: tokenizer, labels and settings carried inside the model file.

An app ships one file. A ``.tflite`` is the flatbuffer bytes unchanged, followed by a ZIP
archive (ZIP_STORED, offsets absolute from the start of the file) -- the TFLite metadata
"associated files" convention, so the interpreter ignores the tail and a plain zip reader
finds it from the end. An ``.onnx`` carries the same members as ``metadata_props`` strings.
See docs/pack_format.md for the byte-level description.

A model file is untrusted input: members are read into memory (never extracted to paths),
their sizes are capped before and while reading, and every defect becomes one ModelFileError
naming the file. Pure Python (zipfile + json): no interpreter, no TensorFlow, no onnx.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import mmap
import os
import shlex
import sys
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from albert_edge import __version__
from albert_edge.errors import MissingPackError, ModelFileError, StrippedPackError
from albert_edge.inputs.jsonfile import load_json_text
from albert_edge.inputs.path_kind import convert_first, is_checkpoint, not_found
from albert_edge.runtime.onnx_proto import read_onnx_metadata
from albert_edge.runtime.tflite_metadata import (
    METADATA_NAME,
    StandardMetadata,
    check_against_pack,
    fixed_seq_len,
    metadata_problems,
    read_standard_metadata,
)

PACK_FORMAT = 1
SETTINGS_MEMBER = "albert_edge.json"
LABELS_MEMBER = "labels.txt"
TOKENIZER_FILES: dict[str, str] = {"wordpiece": "vocab.txt", "sentencepiece": "spiece.model", "bytelevel_bpe": "bpe.json"}
KNOWN_INPUTS = ("input_ids", "attention_mask", "token_type_ids")

# Caps on what a model file may make us read into memory. A 21128-line vocab is ~110 KB and a
# 30k-piece spiece.model ~760 KB, so these leave two orders of magnitude of headroom.
MAX_MEMBER_BYTES: dict[str, int] = {
    SETTINGS_MEMBER: 1 << 20,
    LABELS_MEMBER: 1 << 20,
    "vocab.txt": 32 << 20,
    "spiece.model": 32 << 20,
    "bpe.json": 32 << 20,  # RoBERTa's 50k vocab + merges as JSON: ~1.5 MB
}
MAX_OTHER_MEMBER_BYTES = 1 << 20
MAX_MEMBERS = 32
MAX_SEQ_LEN_LIMIT = 8192
# A pack member cannot hide in a file this big; larger files are refused before reading.
MAX_MODEL_FILE_BYTES = 2 << 30


@dataclass(frozen=True)
class ModelPack:
    """Everything besides the graph that a runtime needs to turn text into a prediction.

    ``tokenizer_asset`` is the raw vocab.txt (UTF-8) or spiece.model bytes. ``labels`` is
    None for feature-extraction models. ``task`` names a registered task (albert_edge.tasks) and
    ``task_config`` holds its settings (e.g. an embedding's pooling); packs written before
    task_config existed read as ``{}``, the task's defaults. ``extra`` keeps unknown settings keys
    so that a newer writer's fields survive a read/rewrite by this version.
    """

    tokenizer_type: str
    tokenizer_asset: bytes
    do_lower_case: bool = True
    max_seq_len: int = 128
    labels: tuple[str, ...] | None = None
    task: str = "sequence_classification"
    inputs: tuple[str, ...] = KNOWN_INPUTS
    outputs: tuple[str, ...] = ("logits",)
    variant: str = "fp32"
    source: Mapping[str, Any] = field(default_factory=dict)
    albert_edge_version: str = __version__
    extra: Mapping[str, Any] = field(default_factory=dict)
    task_config: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Normalise sequences so that packs compare equal however they were built.
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        if self.labels is not None:
            object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(self, "source", dict(self.source))
        object.__setattr__(self, "extra", dict(self.extra))
        object.__setattr__(self, "task_config", dict(self.task_config) if isinstance(self.task_config, Mapping)
                           else self.task_config)
        _validate(self, "<ModelPack>")

    def task_object(self, source: str = "<ModelPack>") -> Any:
        """The albert_edge.tasks Task this pack's ``task`` and ``task_config`` describe."""
        from albert_edge.tasks import task_of_pack

        return task_of_pack(self.task, self.task_config, source)

    @property
    def tokenizer_file(self) -> str:
        """Member name of the tokenizer asset: ``vocab.txt`` or ``spiece.model``."""
        return TOKENIZER_FILES[self.tokenizer_type]

    @property
    def num_labels(self) -> int | None:
        return None if self.labels is None else len(self.labels)

    def with_variant(self, variant: str, **changes: Any) -> ModelPack:
        """The same pack retagged for a derived model (e.g. ``"dynamic_int8"`` after quantization)."""
        return replace(self, variant=variant, **changes)

    def settings(self) -> dict[str, Any]:
        """The ``albert_edge.json`` object (v1)."""
        settings: dict[str, Any] = dict(self.extra)
        settings.update(
            {
                "pack_format": PACK_FORMAT,
                "albert_edge_version": self.albert_edge_version,
                "task": self.task,
                **({"task_config": dict(self.task_config)} if self.task_config else {}),
                "tokenizer": {
                    "type": self.tokenizer_type,
                    "file": self.tokenizer_file,
                    "do_lower_case": self.do_lower_case,
                    "max_seq_len": self.max_seq_len,
                },
                "inputs": list(self.inputs),
                "outputs": list(self.outputs),
                "labels": None if self.labels is None else list(self.labels),
                "variant": self.variant,
                "source": dict(self.source),
            }
        )
        return settings

    def members(self) -> dict[str, bytes]:
        """Member name -> bytes, in the order they are written."""
        out = {SETTINGS_MEMBER: json.dumps(self.settings(), ensure_ascii=False, indent=1).encode("utf-8")}
        if self.labels is not None:
            out[LABELS_MEMBER] = ("\n".join(self.labels) + "\n").encode("utf-8")
        out[self.tokenizer_file] = self.tokenizer_asset
        return out


def _fail(source: str, message: str) -> ModelFileError:
    return ModelFileError(f"{source}: {message}")


def _validate(pack: ModelPack, source: str) -> None:
    """Raise ModelFileError if the pack's settings are not something a runtime can honour."""
    if pack.tokenizer_type not in TOKENIZER_FILES:
        raise _fail(source, f"pack tokenizer.type is {pack.tokenizer_type!r}, expected one of {sorted(TOKENIZER_FILES)}")
    if not isinstance(pack.tokenizer_asset, (bytes, bytearray)) or not pack.tokenizer_asset:
        raise _fail(source, f"pack {pack.tokenizer_file} is empty or not bytes")
    if not isinstance(pack.do_lower_case, bool):
        raise _fail(source, f"pack tokenizer.do_lower_case is {pack.do_lower_case!r}, expected true or false")
    if not isinstance(pack.max_seq_len, int) or isinstance(pack.max_seq_len, bool) or not (
        3 <= pack.max_seq_len <= MAX_SEQ_LEN_LIMIT
    ):
        raise _fail(source, f"pack tokenizer.max_seq_len is {pack.max_seq_len!r}, expected an int in 3..{MAX_SEQ_LEN_LIMIT}")
    if not isinstance(pack.task_config, dict):
        raise _fail(source, f"pack task_config is {pack.task_config!r}, expected a JSON object")
    task = pack.task_object(source)
    if not pack.inputs or any(name not in KNOWN_INPUTS for name in pack.inputs) or len(set(pack.inputs)) != len(pack.inputs):
        raise _fail(source, f"pack inputs are {list(pack.inputs)!r}, expected distinct names from {list(KNOWN_INPUTS)}")
    if "input_ids" not in pack.inputs:
        raise _fail(source, "pack inputs lack 'input_ids'")
    if not pack.outputs or not all(isinstance(name, str) and name for name in pack.outputs):
        raise _fail(source, f"pack outputs are {list(pack.outputs)!r}, expected non-empty names")
    if pack.labels is not None:
        if not pack.labels or not all(isinstance(lab, str) and lab and lab == lab.strip() and "\n" not in lab for lab in pack.labels):
            raise _fail(source, f"pack labels {list(pack.labels)!r} must be non-empty strings without surrounding spaces")
        if len(set(pack.labels)) != len(pack.labels):
            raise _fail(source, f"pack labels {list(pack.labels)!r} contain duplicates")
    if pack.labels is None and getattr(task, "needs_labels", False):
        raise _fail(source, f"pack task is {pack.task} but it carries no labels")
    if not isinstance(pack.variant, str) or not pack.variant:
        raise _fail(source, f"pack variant is {pack.variant!r}, expected a non-empty string")


def _decode_text(data: bytes, member: str, source: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(source, f"pack member {member} is not UTF-8 text") from None


def _labels_from_text(text: str) -> tuple[str, ...]:
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def pack_from_members(members: Mapping[str, bytes], source: str) -> ModelPack:
    """Build a ModelPack from raw member bytes (zip members or decoded metadata_props)."""
    if SETTINGS_MEMBER not in members:
        raise MissingPackError(f"{source}: model file carries no albert-edge pack ({SETTINGS_MEMBER} missing)")
    # Bounded depth and size: a hostile pack must not end in a RecursionError traceback.
    settings = load_json_text(_decode_text(members[SETTINGS_MEMBER], SETTINGS_MEMBER, source),
                              f"{source}: pack {SETTINGS_MEMBER}", ModelFileError)
    if not isinstance(settings, dict):
        raise _fail(source, f"pack {SETTINGS_MEMBER} must hold a JSON object")
    fmt = settings.get("pack_format")
    if fmt != PACK_FORMAT:
        raise _fail(source, f"pack_format is {fmt!r}, this albert-edge {__version__} reads pack_format {PACK_FORMAT}")
    tok = settings.get("tokenizer")
    if not isinstance(tok, dict):
        raise _fail(source, f"pack {SETTINGS_MEMBER} lacks the 'tokenizer' object")
    kind = tok.get("type")
    if kind not in TOKENIZER_FILES:
        raise _fail(source, f"pack tokenizer.type is {kind!r}, expected one of {sorted(TOKENIZER_FILES)}")
    file_name = tok.get("file", TOKENIZER_FILES[kind])
    if file_name != TOKENIZER_FILES[kind]:
        raise _fail(source, f"pack tokenizer.file is {file_name!r}, expected {TOKENIZER_FILES[kind]!r} for {kind}")
    if file_name not in members:
        raise _fail(source, f"pack member {file_name} is missing")

    labels_json = settings.get("labels")
    labels: tuple[str, ...] | None = None
    if LABELS_MEMBER in members:
        labels = _labels_from_text(_decode_text(members[LABELS_MEMBER], LABELS_MEMBER, source))
        if labels_json is not None and list(labels) != labels_json:
            raise _fail(source, f"pack {LABELS_MEMBER} {list(labels)} disagrees with {SETTINGS_MEMBER} labels {labels_json}")
    elif labels_json is not None:
        if not isinstance(labels_json, list):
            raise _fail(source, f"pack labels must be a JSON list, got {type(labels_json).__name__}")
        labels = tuple(labels_json)

    def _list(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = settings.get(key, list(default))
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise _fail(source, f"pack {key} must be a JSON list of strings, got {value!r}")
        return tuple(value)

    known = {"pack_format", "albert_edge_version", "task", "task_config", "tokenizer", "inputs", "outputs", "labels",
             "variant", "source"}
    src = settings.get("source", {})
    try:
        return ModelPack(
            tokenizer_type=kind,
            tokenizer_asset=bytes(members[file_name]),
            do_lower_case=tok.get("do_lower_case", True),
            max_seq_len=tok.get("max_seq_len", 128),
            labels=labels,
            task=settings.get("task", "sequence_classification"),
            inputs=_list("inputs", KNOWN_INPUTS),
            outputs=_list("outputs", ("logits",)),
            variant=settings.get("variant", "fp32"),
            source=src if isinstance(src, dict) else {"description": str(src)},
            albert_edge_version=str(settings.get("albert_edge_version", "unknown")),
            extra={k: v for k, v in settings.items() if k not in known},
            # Only a missing/null task_config means "the defaults": `or {}` turned [] or "" into {}, and the
            # wrong type surfaced later as a missing graph output instead of here.
            task_config={} if settings.get("task_config") is None else settings["task_config"],
        )
    except ModelFileError as exc:
        raise _fail(source, str(exc).split(": ", 1)[1]) from None


# --------------------------------------------------------------------------- TFLite


def attach_tflite_pack(model_bytes: bytes, pack: ModelPack) -> bytes:
    """Return ``model_bytes`` with ``pack`` appended as a ZIP_STORED archive.

    Any pack already attached is replaced, so re-packing a quantized copy of a packed model
    never stacks two archives.
    """
    return attach_tflite_members(model_bytes, pack.members())


def attach_tflite_members(flatbuffer: bytes | memoryview, members: Mapping[str, bytes]) -> bytes:
    """``flatbuffer`` (any pack it has dropped) with ``members`` appended as a ZIP_STORED archive: the pack
    layout (``attach_tflite_pack``; without albert_edge.json, a Model-Maker-style file).

    The result is the only copy made of ``flatbuffer`` (a 390 MiB fp32 model took five, record 0280): the
    archive is written alone, its offsets counted from where it will start (``_ShiftedBuffer``). Mode "w"
    and not "a": "a" would mistake an EOCD signature that happens to occur in the weights for an existing
    archive and write over the flatbuffer.
    """
    head = memoryview(flatbuffer)[: tflite_pack_offset(flatbuffer)]
    tail = _ShiftedBuffer(len(head))
    with zipfile.ZipFile(tail, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            info.external_attr = 0o644 << 16
            zf.writestr(info, data)
    return b"".join((head, tail.getbuffer()))


class _ShiftedBuffer(io.BytesIO):
    """A BytesIO whose positions read ``shift`` bytes further on: the archive written into it has the offsets
    it would have after ``shift`` bytes of model, without those bytes being copied into it."""

    def __init__(self, shift: int) -> None:
        super().__init__()
        self.shift = shift

    def tell(self) -> int:
        return super().tell() + self.shift

    def seek(self, pos: int, whence: int = io.SEEK_SET) -> int:
        return super().seek(pos - self.shift if whence == io.SEEK_SET else pos, whence) + self.shift


def _zip_reader(file: Any) -> zipfile.ZipFile:
    """``zipfile.ZipFile(file)`` reading member names without the archive's UTF-8 flag (the pack writer's: ASCII
    names) as Latin-1, one of the codecs Python decodes without a lookup, instead of zipfile's cp437, whose codec
    module is imported on the first load of every process (0.3 ms of the first answer). The two agree on every
    ASCII name; a foreign archive's other bytes map to other non-ASCII characters either way. zipfile takes the
    option from Python 3.11."""
    if sys.version_info >= (3, 11):
        return zipfile.ZipFile(file, metadata_encoding="latin-1")
    return zipfile.ZipFile(file)


def _open_tail_zip(data: bytes | memoryview, source: str) -> zipfile.ZipFile | None:
    """The archive appended to ``data``, or None if there is none.

    The tail is searched as bytes: a memoryview's ``in`` compares single items, so a view never held a pack.
    """
    tail = len(data) - (65536 + 22)
    # Searched in place where the buffer can (a mapping, bytes): a copy of the tail was 64 KiB of new memory.
    if (data.rfind(b"PK\x05\x06", max(tail, 0)) < 0 if isinstance(data, (bytes, mmap.mmap))
            else b"PK\x05\x06" not in bytes(data[tail if tail > 0 else 0:])):
        return None
    try:
        # A mapped file is its own file object: BytesIO would copy all of it.
        return _zip_reader(_MappedFile(data) if isinstance(data, MappedModel) else io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise _fail(source, f"the pack archive appended to the model is corrupt ({exc})") from None


def tflite_pack_offset(data: bytes | memoryview, source: str = "<bytes>") -> int:
    """Byte offset where the appended pack starts (== len(data) when there is none).

    Weight bytes can contain the EOCD signature by chance; an unparseable tail is then
    treated as "no pack" so that packing a fresh flatbuffer never fails on it.
    """
    try:
        zf = _open_tail_zip(data, source)
    except ModelFileError:
        return len(data)
    if zf is None:
        return len(data)
    with zf:
        infos = zf.infolist()
        if not infos:
            return len(data)
        return min(info.header_offset for info in infos)


def strip_tflite_pack(data: bytes) -> bytes:
    """The flatbuffer alone: ``data`` without any appended pack (a copy; for writers)."""
    return bytes(data[: tflite_pack_offset(data)])


def tflite_flatbuffer_view(data: bytes) -> memoryview:
    """The flatbuffer part of ``data`` without copying it, for readers.

    Loading a model used to copy the flatbuffer three times (pack read, load-time check,
    interpreter), 2.5 ms per copy for the sample's 4.4 MB int8 file and four times that for fp32.
    """
    end = data.flatbuffer_end if isinstance(data, MappedModel) and data.flatbuffer_end is not None else None
    return memoryview(data)[: tflite_pack_offset(data) if end is None else end]


def _read_members(zf: zipfile.ZipFile, source: str) -> dict[str, bytes]:
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise _fail(source, f"pack has {len(infos)} members, at most {MAX_MEMBERS} are allowed")
    members: dict[str, bytes] = {}
    for info in infos:
        name = info.filename
        # Names are only dictionary keys (nothing is extracted), but a name with a path in it
        # is a sign of a hostile or foreign archive: refuse it rather than guess.
        if not name or "/" in name or "\\" in name or name.startswith(".") or "\x00" in name:
            raise _fail(source, f"pack member name {name!r} is not a plain file name")
        if name in members:
            raise _fail(source, f"pack member {name} appears twice")
        if info.compress_type != zipfile.ZIP_STORED:
            raise _fail(source, f"pack member {name} is compressed; pack members must be ZIP_STORED")
        cap = MAX_MEMBER_BYTES.get(name, MAX_OTHER_MEMBER_BYTES)
        if info.file_size > cap:
            raise _fail(source, f"pack member {name} is {info.file_size} bytes, the limit is {cap}")
        try:
            with zf.open(info) as fh:
                blob = fh.read(cap + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError) as exc:
            raise _fail(source, f"pack member {name} is unreadable ({exc})") from None
        if len(blob) > cap or len(blob) != info.file_size:
            raise _fail(source, f"pack member {name} has {len(blob)} bytes, its header says {info.file_size}")
        members[name] = blob
    return members


def repack_command(source: str) -> str:
    """The ``albert-edge repack`` command line that re-attaches a pack to ``source``.

    ORIGINAL stays a placeholder: only the user knows which packed model or checkpoint the file was
    made from, and a guessed tokenizer would be silently wrong.
    """
    path = Path(source)
    out = path.with_name(f"{path.stem}.packed{path.suffix or '.tflite'}")
    return (f"albert-edge repack {shlex.quote(source)} --from ORIGINAL --out {shlex.quote(str(out))} "
            "(ORIGINAL: the albert-edge model file or the checkpoint it was made from)")


def _no_pack_error(data: bytes, source: str) -> ModelFileError:
    """Why a .tflite without an appended ZIP has no pack: stripped by a tool, or never packed."""
    meta = read_standard_metadata(data, source) if data.find(METADATA_NAME.encode()) >= 0 else None
    named = [] if meta is None else list(dict.fromkeys(
        f for f in (meta.tokenizer_file, *meta.labels_files, *meta.associated_files) if f))
    if meta is not None and named:
        writer = f" (written by {meta.version})" if meta.version else ""
        return StrippedPackError(
            f"{source}: its standard TFLite metadata{writer} names {', '.join(named)}, but the ZIP archive that "
            "held them is gone (a tool that rewrote the flatbuffer, such as litert-quantizer, dropped it); "
            f"re-attach them with: {repack_command(source)}")
    return MissingPackError(f"{source}: model file carries no albert-edge pack (no ZIP archive after the "
                            f"flatbuffer); attach one with: {repack_command(source)}")


def read_tflite_pack(data: bytes, source: str = "<bytes>") -> ModelPack:
    """Read the pack appended to a .tflite file's bytes.

    A file without the archive raises StrippedPackError when its standard metadata still names the
    pack's files (a tool rewrote the flatbuffer and dropped the ZIP), else MissingPackError; both
    messages end in the ``albert-edge repack`` command that fixes the file.
    """
    zf = _open_tail_zip(data, source)
    if zf is None:
        raise _no_pack_error(data, source)
    with zf:
        members = _read_members(zf, source)
        # Where the flatbuffer ends, from the archive already open (tflite_pack_offset would parse it again).
        end = min((info.header_offset for info in zf.infolist()), default=len(data))
    if isinstance(data, MappedModel):
        data.flatbuffer_end = end   # the load-time check's view of the flatbuffer, without opening the zip again
    # Standard TFLite metadata (what MediaPipe reads) is checked against the pack, or stands in
    # for it in a Model-Maker-style file; see albert_edge.runtime.tflite_metadata.
    return pack_with_standard_metadata(data, members, source, end)


def pack_from_standard_metadata(meta: StandardMetadata, members: Mapping[str, bytes], source: str) -> ModelPack:
    """A ModelPack for a file that carries only standard metadata (Model Maker style)."""
    problems = metadata_problems(meta, members)
    if problems:
        raise ModelFileError(f"{source}: standard metadata is unusable: {problems[0]}")
    if "logits" not in meta.graph_outputs:
        raise ModelFileError(f"{source}: standard metadata found, but the graph has no 'logits' output "
                             f"(outputs {list(meta.graph_outputs)}); albert-edge's classifier reads logits")
    labels_file = meta.labels_files[meta.graph_outputs.index("logits")] or next((f for f in meta.labels_files if f), None)
    if labels_file is None:
        raise ModelFileError(f"{source}: standard metadata names no label file (TENSOR_AXIS_LABELS) for the output")
    text = members[labels_file].decode("utf-8", "replace")
    labels = tuple(line.strip() for line in text.splitlines() if line.strip())
    try:
        return ModelPack(
            tokenizer_type=meta.tokenizer or "", tokenizer_asset=bytes(members[meta.tokenizer_file or ""]),
            # MediaPipe lower-cases ASCII before its BERT tokenizer (bert_preprocessor_calculator.cc).
            do_lower_case=True, max_seq_len=fixed_seq_len(meta) or 128, labels=labels,
            inputs=tuple(g for g in meta.graph_inputs), outputs=("logits",), variant="unknown",
            source={"from": "standard TFLite metadata", "name": meta.name, "version": meta.version},
        )
    except ModelFileError as exc:
        raise ModelFileError(f"{source}: {str(exc).split(': ', 1)[1]}") from None


def pack_with_standard_metadata(data: bytes, members: Mapping[str, bytes], source: str,
                                flatbuffer_end: int | None = None) -> ModelPack:
    """The file's ModelPack: albert_edge.json checked against the standard metadata, or built from it.

    Files without a ``TFLITE_METADATA`` entry (the pack format before standard metadata) read as before.
    ``flatbuffer_end`` is ``tflite_pack_offset(data)`` when the caller has it already.
    """
    # The entry's name string must occur in the flatbuffer; skipping files without it keeps old
    # packs (and placeholder flatbuffers in fixtures) away from the generated reader. Searched in
    # place: a stripped copy of the flatbuffer cost 2.5 ms (int8) to 10 ms (fp32) of every load.
    end = tflite_pack_offset(data, source) if flatbuffer_end is None else flatbuffer_end
    has_meta = data.find(METADATA_NAME.encode(), 0, end) >= 0
    meta = read_standard_metadata(data, source) if has_meta else None
    if SETTINGS_MEMBER not in members and meta is not None:
        return pack_from_standard_metadata(meta, members, source)
    pack = pack_from_members(members, source)
    if meta is not None:
        check_against_pack(meta, pack, members, source)
    return pack


# --------------------------------------------------------------------------- ONNX

_BASE64_MEMBERS = ("spiece.model",)


def pack_to_metadata_props(pack: ModelPack) -> dict[str, str]:
    """ONNX ``metadata_props`` entries: text members as UTF-8 strings, spiece.model as base64."""
    props: dict[str, str] = {}
    for name, data in pack.members().items():
        props[name] = base64.b64encode(data).decode("ascii") if name in _BASE64_MEMBERS else data.decode("utf-8")
    return props


def pack_from_metadata_props(props: Mapping[str, str], source: str = "<metadata_props>") -> ModelPack:
    """Read a pack from ONNX metadata (e.g. onnxruntime's ``custom_metadata_map``)."""
    members: dict[str, bytes] = {}
    for name in (SETTINGS_MEMBER, LABELS_MEMBER, *TOKENIZER_FILES.values()):
        if name not in props:
            continue
        value = props[name]
        if not isinstance(value, str):
            raise _fail(source, f"metadata_props[{name!r}] is not a string")
        cap = MAX_MEMBER_BYTES[name]
        if len(value) > cap * 4 // 3 + 4:
            raise _fail(source, f"metadata_props[{name!r}] is {len(value)} characters, the limit is about {cap} bytes")
        if name in _BASE64_MEMBERS:
            try:
                members[name] = base64.b64decode(value.encode("ascii"), validate=True)
            except (binascii.Error, UnicodeEncodeError):
                raise _fail(source, f"metadata_props[{name!r}] is not valid base64") from None
        else:
            members[name] = value.encode("utf-8")
        if len(members[name]) > cap:
            raise _fail(source, f"metadata_props[{name!r}] is {len(members[name])} bytes, the limit is {cap}")
    return pack_from_members(members, source)


# --------------------------------------------------------------------------- files


def model_kind(data: bytes) -> str:
    """``"tflite"`` or ``"onnx"`` from the file's bytes, ``"unknown"`` otherwise.

    A TFLite flatbuffer carries the identifier ``TFL3`` at bytes 4..8. An ONNX ModelProto is
    a protobuf that in practice starts with field 1 (ir_version, varint: byte 0x08); the full
    check is left to the interpreter.
    """
    if len(data) >= 8 and data[4:8] == b"TFL3":
        return "tflite"
    if len(data) >= 2 and data[0] == 0x08:
        return "onnx"
    return "unknown"


def read_model_bytes(path: str | os.PathLike[str]) -> bytes:
    """The model file's bytes, with missing/unreadable/oversized files as ModelFileError."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if not p.is_file():
            raise ModelFileError(convert_first(p) if is_checkpoint(p) else f"{p}: not a regular file")
        if size > MAX_MODEL_FILE_BYTES:
            raise ModelFileError(f"{p}: model file is {size} bytes, larger than the {MAX_MODEL_FILE_BYTES} limit")
        return p.read_bytes()
    except FileNotFoundError:
        raise ModelFileError(convert_first(p) if is_checkpoint(p) else not_found(p, "model file not found")) from None
    except OSError as exc:
        raise ModelFileError(f"{p}: cannot read model file ({exc.strerror or exc})") from None


class _MappedFile:
    """The mapping as a read-only file for zipfile, seeking and reading exactly as ``io.BytesIO`` does (a
    seek past the end is allowed and reads nothing), so a damaged pack fails with the same message either way;
    BytesIO itself would copy the whole mapping."""

    def __init__(self, data: mmap.mmap) -> None:
        self._data, self._pos = data, 0

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        if whence == 0 and offset < 0:
            raise ValueError(f"negative seek value {offset}")
        self._pos = max(0, offset + (0, self._pos, len(self._data))[whence])
        return self._pos

    def read(self, n: int | None = -1) -> bytes:
        end = len(self._data) if n is None or n < 0 else min(len(self._data), self._pos + n)
        chunk = self._data[self._pos : end] if end > self._pos else b""
        self._pos = max(self._pos, end)
        return chunk


class MappedModel(mmap.mmap):
    """A model file mapped read-only: the readers see its bytes without a 4-17 MB copy, and the
    interpreter maps the same file by ``path`` itself (``TfliteBackend``), as a bare LiteRT
    ``Interpreter(model_path=...)`` does. ``identity`` is the file's (device, inode, size, mtime) when it
    was mapped: the interpreter opens the path again, so it does only while the path is still that file.
    """

    path: str
    identity: tuple[int, int, int, int]
    # Where the appended pack starts, as the pack read found it (the zip is not parsed a second time).
    flatbuffer_end: int | None = None

    def release_pages(self) -> None:
        """Unmap this mapping's pages (they stay in the page cache; a later read maps them again).

        Called once the interpreter has its own mapping of the file: the readers touched a few places,
        but the kernel maps whole page-cache folios (2 MB on this machine's 6.x kernel), so without this
        RSS would count the file a second time (+4.1 MiB for the sample's 4.2 MiB int8 file).
        """
        if hasattr(mmap, "MADV_DONTNEED"):
            self.madvise(mmap.MADV_DONTNEED)

    def unchanged(self) -> bool:
        """True while ``path`` is still the file that was mapped (and checked).

        The project's writers replace files by rename, so a changed path leaves this mapping on the old,
        checked file: a backend built later (a pool growing) then loads the mapping's bytes instead.
        """
        try:
            st = os.stat(self.path)
        except OSError:
            return False
        return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns) == self.identity


def map_model_file(path: str | os.PathLike[str]) -> bytes:
    """The model file for a runtime's ``from_file``: mapped (a ``MappedModel``), not read.

    The same errors as ``read_model_bytes``. Typed ``bytes`` for the readers, which use only what a
    mapping shares with bytes (slices, ``len``, ``find``, memoryviews); an empty file is read (an empty
    mapping is an error), so it fails the way it always did.
    """
    p = Path(path)
    try:
        size = p.stat().st_size
    except OSError:
        size = 0
    if size == 0 or size > MAX_MODEL_FILE_BYTES or not p.is_file():
        return read_model_bytes(path)   # its own error (or an empty file's bytes)
    try:
        with open(path, "rb") as handle:
            st = os.fstat(handle.fileno())
            mapped = MappedModel(handle.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot read model file ({exc.strerror or exc})") from None
    mapped.path = os.fspath(path)
    mapped.identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    return mapped  # type: ignore[return-value]  # bytes-like for every reader (see the docstring)


def read_pack_bytes(data: bytes, source: str = "<bytes>") -> ModelPack:
    """Read the pack from the bytes of a .tflite or .onnx model."""
    kind = model_kind(data)
    if kind == "tflite":
        return read_tflite_pack(data, source)
    if kind == "onnx":
        # Straight from the protobuf bytes: inspecting an .onnx needs neither onnx nor onnxruntime.
        props = read_onnx_metadata(data, source)
        if SETTINGS_MEMBER not in props:
            raise MissingPackError(
                f"{source}: model file carries no albert-edge pack ({SETTINGS_MEMBER} is not in its metadata_props; "
                f"a tool that rewrote the graph may have dropped it); attach one with: {repack_command(source)}")
        return pack_from_metadata_props(props, source)
    if is_checkpoint(source):
        raise ModelFileError(convert_first(source))
    raise _fail(source, "not a model file (neither a TFLite flatbuffer with identifier 'TFL3' nor an ONNX protobuf)")


def read_pack(path: str | os.PathLike[str]) -> ModelPack:
    """Read the pack of a .tflite or .onnx file."""
    return read_pack_bytes(read_model_bytes(path), str(path))
