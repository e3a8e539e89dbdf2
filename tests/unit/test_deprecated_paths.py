"""The module paths that moved in the recall/lifecycle/config restructuring still work, with a warning."""

from __future__ import annotations

import importlib
import sys

import pytest

MOVED = {
    "memlane.ranking": "memlane.recall.ranking",
    "memlane.keywords": "memlane.analysis",
    "memlane.temporal": "memlane.recall.temporal",
    "memlane.retrieval": "memlane.recall.candidates",
    "memlane.compaction": "memlane.lifecycle.compaction",
    "memlane.forgetting": "memlane.lifecycle.forgetting",
    "memlane.reembed": "memlane.lifecycle.reembed",
    "memlane.config_file": "memlane.config.file",
}


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_old_path_warns_and_reexports_the_same_objects(
    old: str, new: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, old, raising=False)  # the warning is raised on first import only
    with pytest.warns(DeprecationWarning, match=f"{old} is deprecated; import from {new}"):
        shim = importlib.import_module(old)
    target = importlib.import_module(new)
    assert shim.__all__
    for name in set(shim.__all__) - {"CommonTermFilter"}:  # that one: see the next test
        assert getattr(shim, name) is getattr(target, name), name
    public = [name for name in vars(target) if not name.startswith("_")]
    for name in public:  # names outside __all__ are forwarded too
        assert getattr(shim, name) is getattr(target, name), name


def test_keywords_alias_keeps_common_term_filter() -> None:
    from memlane.stores.common_terms import CommonTermFilter

    with pytest.warns(DeprecationWarning):
        sys.modules.pop("memlane.keywords", None)
        shim = importlib.import_module("memlane.keywords")
    assert shim.CommonTermFilter is CommonTermFilter
