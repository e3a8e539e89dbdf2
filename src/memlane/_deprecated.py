"""Old module paths kept importable after a move, with a :class:`DeprecationWarning` (one implementation).

A moved module's old file holds only::

    from memlane._deprecated import moved

    __all__, __getattr__ = moved(__name__, "memlane.new.home")

Every module-level name of the new home (``__all__`` and the rest) is then forwarded lazily
(PEP 562 module ``__getattr__``), so ``from memlane.old import name`` and ``import *`` keep
working; the warning is raised once, when the old path is first imported.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved"]


def moved(
    old: str, new: str, extra: Mapping[str, str] | None = None
) -> tuple[list[str], Callable[[str], Any]]:
    """Warn that ``old`` moved to ``new`` and build the forwarding for the old module.

    Args:
        old: The old module's name (its ``__name__``).
        new: The module that now holds the code.
        extra: Names the old module exported that now live elsewhere: ``{name: module}``.

    Returns:
        ``(__all__, __getattr__)`` for the old module: the new home's ``__all__`` plus
        ``extra``, and a function that resolves any other public name on the new home.
    """
    warnings.warn(f"{old} is deprecated; import from {new} instead", DeprecationWarning, stacklevel=3)
    target = importlib.import_module(new)
    elsewhere = dict(extra or {})

    def forward(name: str) -> Any:
        if name in elsewhere:
            return getattr(importlib.import_module(elsewhere[name]), name)
        if name.startswith("__"):
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        return getattr(target, name)

    return [*getattr(target, "__all__", ()), *elsewhere], forward
