"""The verdict block quantize, bench and demo end with (``block.py``): data in, plain lines out."""

from albert_edge.verdict.block import MAX_LINES, Speed, Verdict, plain, verdict_lines

__all__ = ["MAX_LINES", "Speed", "Verdict", "plain", "verdict_lines"]
