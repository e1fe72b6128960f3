"""The verdict block: what to ship, on one screen, the same for ``quantize``, ``bench`` and ``demo``.

Each deciding command measured more than a person needs at the end of it (variant tables, per-op
errors, unstable ratios, thread scaling). Those go to the command's report; the console ends with
this block, at most ``MAX_LINES`` lines: the file to ship, its size, its time against fp32 with the
interval, its accuracy cost in the task's own metric with the agreement, the threads, whether this
machine could decide, and where the details are. The commands fill a ``Verdict`` from their own
reports; the wording lives here once, so the three cannot drift apart. Data in, lines out: nothing
here measures or reads a file.

Console text is plain: a sentence made for report.md may carry Markdown escapes (``\\[``) or HTML
entities (``&#91;``); ``plain`` turns them back into the characters they stand for.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

#: The block's length limit (issue #36): a verdict that scrolls is not one screen.
MAX_LINES = 15
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|<>~])")


def plain(text: str) -> str:
    """``text`` as a terminal shows it: HTML entities and Markdown backslash escapes undone."""
    return _MD_ESCAPE.sub(r"\1", html.unescape(text))


@dataclass(frozen=True)
class Speed:
    """Time of the shipped file over fp32's (below 1: faster), with its interval when measured."""

    ratio: float
    low: float | None = None
    high: float | None = None
    where: str = ""  # e.g. "at seq 128" or "at the eval set's real lengths"

    def text(self) -> str:
        """``0.37x [0.36-0.38]``, or ``0.37x (no interval)``; a file slower than fp32 (the whole interval
        above 1) says so: the choice can still be right under a size budget, but a reader must not take
        "int8" for "faster" on a CPU whose int8 kernels lose."""
        interval = (f" [{self.low:.2f}-{self.high:.2f}]" if self.low is not None and self.high is not None
                    else " (no interval)")
        slower = (self.low if self.low is not None else self.ratio) > 1.0
        return (f"{self.ratio:.2f}x{interval} of fp32's time" + (f" {self.where}" if self.where else "")
                + ("; slower than fp32 here: it saves size, not time" if slower else ""))


@dataclass(frozen=True)
class Verdict:
    """What a deciding command concluded. ``ship`` None: nothing to ship, ``nothing_because`` says why.

    ``decided`` False: this machine's measurements could not decide (contention, overlapping
    intervals); ``undecided`` says what, ``rerun`` the command that would. ``warnings`` counts
    the details left in the report (``{"UNSTABLE ratios": 32}``); ``details`` is the report's path.
    """

    command: str
    ship: str | None
    variant: str | None = None
    size_bytes: int | None = None
    fp32_size_bytes: int | None = None
    speed: Speed | None = None
    accuracy: str | None = None
    threads: int | None = None
    decided: bool = True
    undecided: str | None = None
    rerun: str | None = None
    nothing_because: str | None = None
    warnings: Mapping[str, int] = field(default_factory=dict)
    details: str | None = None


def _mb(size: int | None) -> str:
    return "-" if size is None else f"{size / 1e6:.2f} MB"


def verdict_lines(v: Verdict) -> list[str]:
    """The block, at most ``MAX_LINES`` lines of plain text (no Markdown, no HTML entities)."""
    lines = [f"verdict ({v.command}):"]
    if v.ship is None:
        lines.append(f"  ship      nothing: {v.nothing_because or 'no variant meets the budget'}")
    else:
        lines.append(f"  ship      {v.ship}" + (f" ({v.variant})" if v.variant else ""))
        size = _mb(v.size_bytes) + (f" (fp32 {_mb(v.fp32_size_bytes)})" if v.fp32_size_bytes else "")
        lines.append(f"  size      {size}")
        lines.append(f"  speed     {v.speed.text() if v.speed else 'not timed'}")
        lines.append(f"  accuracy  {v.accuracy or 'not judged (no labelled rows)'}")
    if v.threads is not None:
        lines.append(f"  threads   {v.threads}")
    if v.decided:
        lines.append("  machine   could decide: no comparison behind this verdict was measured under contention")
    else:
        lines.append(f"  machine   could not decide: {v.undecided or 'the measurements overlap'}")
        if v.rerun:
            lines.append(f"            rerun on an idle machine: {v.rerun}")
    counted = [f"{n} {what}" for what, n in v.warnings.items() if n]
    if counted:
        lines.append(f"  warnings  {', '.join(counted)} (listed in the report)")
    if v.details:
        lines.append(f"  details   {v.details}")
    lines = [plain(line) for line in lines]
    assert len(lines) <= MAX_LINES, lines  # every field is one line; a new field must keep the block short
    return lines
