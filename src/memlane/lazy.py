"""Names a package exports but imports on first use (PEP 562), so importing the package is cheap.

``import memlane`` (which runs before any ``memlane.<module>`` import), ``memlane.recall`` and
``memlane.evaluation`` re-export names whose modules import numpy, the recall pipeline or the
stores. With :func:`lazy_exports` a command that needs none of them (``memlane --help``, a
structured lookup) does not pay for them: each name's module is imported when the name is first
read, then cached in the package's namespace.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], homes: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """Build a package's module-level ``__getattr__`` and ``__dir__`` over lazily imported names.

    Args:
        package: The package's ``__name__`` (for the error message).
        namespace: The package's ``globals()``; each name is stored there on first use.
        homes: Module name -> the names it defines that the package exports.

    Returns:
        ``(__getattr__, __dir__)`` to assign in the package's ``__init__.py``. ``__getattr__``
        raises :class:`AttributeError` for a name no home lists.
    """
    home_of = {name: module for module, names in homes.items() for name in names}

    def get_attribute(name: str) -> object:
        module = home_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted(set(namespace) | set(home_of))

    return get_attribute, names
