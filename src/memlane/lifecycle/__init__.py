"""What happens to episodes after they are written, one job a module.

* :mod:`~memlane.lifecycle.supersession` — superseding, history and contradiction candidates.
* :mod:`~memlane.lifecycle.contradiction` — how likely two statements contradict (a confidence).
* :mod:`~memlane.lifecycle.retention` — ``retention_days`` and pruning.
* :mod:`~memlane.lifecycle.forgetting` — importance-banded forgetting curves and ``forget``.
* :mod:`~memlane.lifecycle.compaction` — merging near-duplicates and archiving stale episodes.
* :mod:`~memlane.lifecycle.reembed` — moving a store to another embedding model.

:class:`memlane.EpisodicMemory` validates and scopes each call, then runs these jobs.
"""
