"""Run-by-hand measurements that print JSON, never timed in a test.

Run each from the repository root as a module, ``python -m benchmarks.suites.NAME`` or
``python -m benchmarks.records.NAME``, so ``tests.support`` (the tests' models and data) imports
without any ``sys.path`` edit. See benchmarks/README.md (index) and benchmarks/decisions/.
"""
