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
