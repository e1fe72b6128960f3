"""Outputs as transactions: a run's files are staged, claimed, swapped in together and journaled.

`output_set.OutputSet` is what every writer uses; `claim` records in a per-folder manifest what
albert-edge wrote; `swap` renames a staged set into place with a journal and rollback; `held_signals`
holds SIGINT/SIGTERM/SIGHUP during the swap; `atomic` is write-then-rename of one file.
"""
