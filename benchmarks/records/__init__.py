"""One-off studies whose result is a recorded decision (figures in benchmarks/README.md, README.md or
docs/architecture.md): kept runnable so a decision can be re-checked, not re-run as a routine."""
