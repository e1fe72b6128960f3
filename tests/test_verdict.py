"""The verdict block that quantize, bench and demo end with: fixed inputs in, at most 15 plain lines out."""

from __future__ import annotations

import re

import pytest

from albert_edge.verdict import MAX_LINES, Speed, Verdict, plain, verdict_lines

DECIDED = Verdict("bench", "models/model.tflite", variant="dynamic_int8_col", size_bytes=4_380_000,
                  fp32_size_bytes=16_850_000, speed=Speed(0.37, 0.36, 0.38, "at seq 128"),
                  accuracy="-0.06 points (83.97 % vs 84.03 %), agreement 99.8 %", threads=2,
                  warnings={"UNSTABLE ratios": 32, "int8 speed-ups above ~4x": 17, "impossible": 0},
                  details="report/report.md")


def test_a_decided_verdict_names_the_file_its_size_speed_accuracy_and_threads():
    text = "\n".join(verdict_lines(DECIDED))
    assert "ship      models/model.tflite (dynamic_int8_col)" in text
    assert "4.38 MB (fp32 16.85 MB)" in text
    assert "0.37x [0.36-0.38] of fp32's time at seq 128" in text
    assert "-0.06 points (83.97 % vs 84.03 %), agreement 99.8 %" in text
    assert "threads   2" in text and "could decide" in text and "could not decide" not in text
    assert "details   report/report.md" in text


def test_warnings_are_one_counted_line_and_zero_counts_are_left_out():
    lines = [line for line in verdict_lines(DECIDED) if "warnings" in line]
    assert lines == ["  warnings  32 UNSTABLE ratios, 17 int8 speed-ups above ~4x (listed in the report)"]


def test_a_contended_comparison_decides_nothing_and_names_the_run_that_would():
    contended = Verdict("bench", "models/model.tflite", variant="dynamic_int8", speed=Speed(0.42, 0.30, 0.55),
                        accuracy="-0.10 points", threads=1, decided=False,
                        undecided="threads: 1 over 2 threads is 0.75x [0.60-0.95], measured under contention",
                        rerun="albert-edge bench models/model.tflite --threads 1,2 --runs 200")
    text = "\n".join(verdict_lines(contended))
    assert "could not decide: threads: 1 over 2 threads" in text
    assert "rerun on an idle machine: albert-edge bench models/model.tflite --threads 1,2 --runs 200" in text
    assert "could decide:" not in text


def test_an_undecided_verdict_without_a_file_says_why_nothing_is_shipped():
    nothing = Verdict("quantize", None, nothing_because="every variant not judged: 256 rows cannot show 99% "
                      "agreement (need 268); pass --eval FILE", decided=False, undecided="no variant was judged")
    lines = verdict_lines(nothing)
    assert lines[1] == ("  ship      nothing: every variant not judged: 256 rows cannot show 99% agreement "
                        "(need 268); pass --eval FILE")
    assert not any(line.lstrip().startswith(("size", "speed")) for line in lines)


@pytest.mark.parametrize("verdict", [
    DECIDED,
    Verdict("demo", "a.tflite", speed=Speed(0.5), decided=False, undecided="x", rerun="y",
            warnings={f"kind {i}": i + 1 for i in range(40)}, details="d"),
    Verdict("quantize", None),
])
def test_the_block_is_at_most_15_lines(verdict):
    assert len(verdict_lines(verdict)) <= MAX_LINES == 15


def test_no_html_entity_or_markdown_escape_reaches_the_terminal():
    escaped = Verdict("bench", "m.tflite", accuracy=r"0.42x &#91;0.41&#93; \[near ties\] \| ok", threads=2)
    text = "\n".join(verdict_lines(escaped))
    assert "0.42x [0.41] [near ties] | ok" in text
    assert not re.search(r"&#?\w+;|\\[\[\]|]", text)
    assert plain("a &amp; b \\_c\\_") == "a & b _c_"


def test_speed_without_an_interval_says_so():
    assert Speed(0.4).text() == "0.40x (no interval) of fp32's time"


def test_a_file_slower_than_fp32_says_it_saves_size_not_time():
    assert Speed(1.12, 1.05, 1.20).text().endswith("; slower than fp32 here: it saves size, not time")
    assert "slower" not in Speed(0.98, 0.93, 1.04).text()  # the interval reaches below 1: not shown slower
