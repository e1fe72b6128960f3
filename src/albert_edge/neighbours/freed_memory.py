"""Memory this process has freed, handed back to the OS: what it holds of the machine is what it uses.

Why: glibc keeps freed C-heap memory resident and serves the next allocations from it. Where a process's
footprint is measured or bounded, that matters twice: the bench worker's baseline held the model file's
pages it had read and freed, so the model's own read of them cost nothing (the sample's int8 file showed
0.02 MB for its 4.2 MB); and a census's LiteRT interpreter, freed, left about 3x its file resident (the
sample's 16 MB fp32 file: +51 MB, +15 MB after a trim), which on BERT-base's 409 MB sat beside quantize's
converter child (record 0280).
"""

from __future__ import annotations


def release_freed_memory() -> bool:
    """Hand memory freed to the C heap back to the OS (glibc ``malloc_trim``); False where there is none."""
    try:
        import ctypes

        return bool(ctypes.CDLL("libc.so.6").malloc_trim(0) >= 0)
    except (OSError, AttributeError):
        return False
