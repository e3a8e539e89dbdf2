"""Every lazily re-exported name list matches what its home module declares (the lists are an index).

``memlane``, ``memlane.graph``, ``memlane.evaluation`` and ``memlane.operations.requests`` name, per
home module, the names they import from it on first use (:func:`memlane.lazy.lazy_exports`), so that
reading one name imports one home only. Those names are the home's own ``__all__`` (the requests'
rooms) or a part of it: each must exist there, and a room of the requests must list exactly its
``__all__``, so a request added to a room cannot be missing from the index.
"""

from __future__ import annotations

import importlib

import pytest

PACKAGES = ("memlane", "memlane.graph", "memlane.evaluation", "memlane.operations.requests")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_indexed_name_is_exported_by_its_home(package: str) -> None:
    homes: dict[str, tuple[str, ...]] = importlib.import_module(package)._HOMES
    for home, names in homes.items():
        exported = set(getattr(importlib.import_module(home), "__all__", ()))
        missing = [n for n in names if n not in exported and not hasattr(importlib.import_module(home), n)]
        assert not missing, (package, home, missing)


def test_each_requests_room_is_indexed_whole() -> None:
    from memlane.operations import requests

    for home, names in requests._HOMES.items():
        assert sorted(names) == sorted(importlib.import_module(home).__all__), home
