"""Where MediaPipe's text preprocessing and ours agree: both MediaPipe tests compare outputs exactly
only on texts that the two tokenizers see alike."""

from __future__ import annotations

import unicodedata


def same_preprocessing(text: str) -> bool:
    """True when MediaPipe's ASCII-only lower-casing (and no accent stripping) sees what our BERT
    basic tokenizer sees: no non-ASCII cased letters, no accents."""
    ascii_lower = "".join(c.lower() if c.isascii() else c for c in text)
    return text.lower() == ascii_lower and not any(unicodedata.combining(c) for c in unicodedata.normalize("NFD", text))
