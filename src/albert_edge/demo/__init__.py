"""`albert-edge demo`: the whole job on the shipped sample (`pipeline`), its held-out examples
(`examples`) and what it prints (`console`).
"""
