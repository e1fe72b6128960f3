"""XLM-R's ``sentencepiece.bpe.model`` rewritten so that SentencePiece's own ids are the model's ids.

fairseq (and Hugging Face's ``XLMRobertaTokenizer``) do not use the SentencePiece ids directly: the
model's ids are ``<s>`` 0, ``<pad>`` 1, ``</s>`` 2, ``<unk>`` 3, then SentencePiece piece ``i`` (i >= 3)
as ``i + 1`` (the *fairseq offset*), and ``<mask>`` last, at ``pieces + 1``. SentencePiece's own
layout is ``<unk>`` 0, ``<s>`` 1, ``</s>`` 2, pieces from 3.

Rather than teach every tokenizer (Python, the Android core, MediaPipe) that offset, the model proto is
rebuilt once at convert time in the model's id order::

    new[0] = <s> (CONTROL)   new[1] = <pad> (CONTROL)   new[2] = </s> (CONTROL)   new[3] = <unk> (UNKNOWN)
    new[4 + k] = old[3 + k]  (k = 0 .. n - 4, type and score kept)
    new[n + 1] = <mask> (USER_DEFINED, score 0)

with ``trainer_spec`` ``bos_id`` 0, ``pad_id`` 1, ``eos_id`` 2, ``unk_id`` 3. The normaliser spec (and so
the precompiled character map) is copied unchanged, and the segmentation of a text depends only on the
pieces' strings and scores, so the rebuilt model splits every text into the same pieces and names each
with the model's id. The pack then carries an ordinary SentencePiece model (``tokenizer.type``
``sentencepiece``): a reader that knows SentencePiece needs nothing else. A model already in this
layout (``<s>`` at 0) is returned unchanged, so re-converting a pack's own file is a no-op.
"""

from __future__ import annotations

from albert_edge.errors import TokenizerError

FAIRSEQ_MODEL_NAME = "sentencepiece.bpe.model"
FAIRSEQ_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")
MASK = "<mask>"


def rebase_fairseq_model(data: bytes, source: str) -> bytes:
    """``data`` (a serialized SentencePiece ModelProto in SentencePiece's layout) in the fairseq id layout."""
    try:
        from sentencepiece import sentencepiece_model_pb2 as model_pb2
    except ImportError:
        raise TokenizerError(f"{source}: the 'sentencepiece' package is needed for {FAIRSEQ_MODEL_NAME} "
                             "(pip install sentencepiece)") from None
    proto = model_pb2.ModelProto()
    try:
        proto.ParseFromString(bytes(data))
    except Exception as exc:  # protobuf's DecodeError and friends
        raise TokenizerError(f"{source}: not a valid SentencePiece model ({type(exc).__name__})") from None
    pieces = [p.piece for p in proto.pieces]
    if pieces[:4] == list(FAIRSEQ_SPECIALS):
        return bytes(data)
    if pieces[:3] != ["<unk>", "<s>", "</s>"]:
        raise TokenizerError(f"{source}: expected SentencePiece's <unk>, <s>, </s> as pieces 0-2 of an XLM-R "
                             f"{FAIRSEQ_MODEL_NAME}, found {pieces[:3]}")
    kind = model_pb2.ModelProto.SentencePiece
    old = list(proto.pieces)
    del proto.pieces[:]
    for name, piece_type in zip(FAIRSEQ_SPECIALS, (kind.CONTROL, kind.CONTROL, kind.CONTROL, kind.UNKNOWN)):
        proto.pieces.add(piece=name, score=0.0, type=piece_type)
    for piece in old[3:]:
        proto.pieces.add().CopyFrom(piece)
    proto.pieces.add(piece=MASK, score=0.0, type=kind.USER_DEFINED)
    spec = proto.trainer_spec
    spec.bos_id, spec.pad_id, spec.eos_id, spec.unk_id = 0, 1, 2, 3
    spec.bos_piece, spec.pad_piece, spec.eos_piece, spec.unk_piece = FAIRSEQ_SPECIALS
    return proto.SerializeToString()


def model_from_unigram_tokenizer_json(data: object, source: str) -> bytes | None:
    """A SentencePiece model (already in the fairseq id layout) from a parsed XLM-R ``tokenizer.json``
    whose model is Unigram; None when it holds another model, or a Unigram not in XLM-R's layout
    (ALBERT's: the WordPiece reader then asks for its spiece.model).

    The pieces and scores are ``model.vocab`` in id order; the normaliser is its ``Precompiled``
    character map (SentencePiece's own ``nmt_nfkc`` tables) with SentencePiece's whitespace rules
    (dummy prefix, extra whitespace removed, spaces as ``▁``), which is what the Hugging Face
    converter turned them into. A tokenizer.json that adds other normalisers or byte fallback is refused
    by name rather than approximated.
    """
    model = data.get("model") if isinstance(data, dict) else None
    if not isinstance(model, dict) or model.get("type") != "Unigram":
        return None
    from base64 import b64decode

    from sentencepiece import sentencepiece_model_pb2 as model_pb2

    vocab = model.get("vocab")
    if (not isinstance(vocab, list) or not all(isinstance(row, list) and len(row) == 2 and isinstance(row[0], str)
                                               and isinstance(row[1], (int, float)) for row in vocab)
            or [row[0] for row in vocab[:4]] != list(FAIRSEQ_SPECIALS)):
        return None
    charsmap = _precompiled_charsmap(data.get("normalizer"), source)
    if model.get("byte_fallback"):
        raise TokenizerError(f"{source}: a Unigram tokenizer with byte_fallback is not supported")
    kind = model_pb2.ModelProto.SentencePiece
    special = {"<s>": kind.CONTROL, "<pad>": kind.CONTROL, "</s>": kind.CONTROL, "<unk>": kind.UNKNOWN,
               MASK: kind.USER_DEFINED}
    proto = model_pb2.ModelProto()
    for piece, score in vocab:
        proto.pieces.add(piece=piece, score=float(score), type=special.get(piece, kind.NORMAL))
    spec = proto.trainer_spec
    spec.model_type = model_pb2.TrainerSpec.UNIGRAM
    spec.vocab_size = len(vocab)
    spec.bos_id, spec.pad_id, spec.eos_id, spec.unk_id = 0, 1, 2, 3
    spec.bos_piece, spec.pad_piece, spec.eos_piece, spec.unk_piece = FAIRSEQ_SPECIALS
    norm = proto.normalizer_spec
    norm.name = "nmt_nfkc"
    norm.precompiled_charsmap = b64decode(charsmap) if charsmap else b""
    norm.add_dummy_prefix, norm.remove_extra_whitespaces, norm.escape_whitespaces = True, True, True
    return proto.SerializeToString()


def _precompiled_charsmap(normalizer: object, source: str) -> str | None:
    """The base64 ``precompiled_charsmap`` of a Precompiled normaliser (alone, or in a Sequence with
    the converter's collapse of repeated spaces, which SentencePiece does itself); anything else is refused."""
    if normalizer is None:
        return None
    parts = normalizer.get("normalizers", []) if isinstance(normalizer, dict) and normalizer.get("type") == "Sequence" \
        else [normalizer]
    charsmap = None
    for part in parts:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "Precompiled":
            charsmap = part.get("precompiled_charsmap")
        elif kind == "Replace" and part.get("content") == " ":
            continue
        else:
            raise TokenizerError(f"{source}: Unigram tokenizer with a {kind} normaliser is not supported "
                                 f"(XLM-R's is Precompiled)")
    return charsmap
