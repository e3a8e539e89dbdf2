"""Metadata conditions as probes of the value index (:data:`~memlane.stores.base.VALUE_INDEX_ROOTS`).

Schema migration 15 keeps ``episode_metadata_values (path, kind, value, seq)``: one row per string,
number and boolean leaf under a root, ``path`` as SQLite's ``json_tree`` spells it (its ``fullkey``),
``kind`` as :attr:`MetadataCondition.kind` names it. A condition that reads it
(:func:`~memlane.stores.base.value_indexed`: a leaf under a root, ``eq`` with a non-null operand or an
order comparison) selects the rows of one index range
(:func:`probe`), the same rows as its JSON test (:func:`memlane.stores.sqlite.filters.metadata_sql`),
so :func:`memlane.stores.sqlite.filters.source` can read a filter's rows from the rarest one. The
probe's path is spelled by ``json_tree`` itself, from a one-leaf document built from the condition's
keys (bound, never SQL text), so it is always the index's spelling.
"""

from __future__ import annotations

import json
from typing import Any

from memlane.stores.base import MetadataCondition
from memlane.stores.common import SQL_OPERATORS

__all__ = ["probe"]

_PROBE = (
    "SELECT seq FROM episode_metadata_values WHERE path = "
    "(SELECT fullkey FROM json_tree(?) WHERE type = 'null') AND kind = ? AND value {op} ?"
)


def probe(condition: MetadataCondition) -> tuple[str, list[Any]]:
    """``SELECT seq`` of the rows passing a ``value_indexed`` ``condition`` (fixed SQL text, bound values)."""
    document: Any = None
    for key in reversed(condition.path):
        document = {key: document}
    value = condition.value
    operand = int(value) if isinstance(value, bool) else value
    return _PROBE.format(op=SQL_OPERATORS[condition.op]), [json.dumps(document), condition.kind, operand]
