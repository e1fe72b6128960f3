"""The test suite, a package so that its helpers import as ``tests.support.<module>`` from the repository root."""
