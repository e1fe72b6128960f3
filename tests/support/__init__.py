"""Helpers shared by more than one test file (and by benchmarks/): test models, data and fixtures.

Test modules never import each other; whatever two of them share lives here.
"""
