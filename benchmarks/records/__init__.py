"""One-off studies whose result is a recorded decision (figures and decision in
benchmarks/decisions/): kept runnable so a decision can be re-checked, not re-run as a routine."""
