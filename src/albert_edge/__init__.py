"""albert-edge: ALBERT from checkpoint to phone.

Floors (see shared/DESIGN.md): model and tokenizer (1), runtime and evaluate (2),
convert and quantize (3), bench_latency (4), cli (5). Each imports only floors below it.
"""

__version__ = "0.1.0"
