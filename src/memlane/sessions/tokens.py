"""Offline token counting for context budgets.

The default counter uses ``toktok-rs`` (PyPI; import name ``toktok``), a Rust BPE tokenizer
whose token ids are identical to OpenAI's ``tiktoken`` and whose vocabularies are compiled
into the wheel: it never downloads anything, unlike ``tiktoken``, which fetches its
vocabulary files on first use and fails offline. The default encoding is ``o200k_base``
(GPT-4o, GPT-4.1, GPT-5, o-series); ``cl100k_base`` (GPT-3.5/GPT-4) is also available.
For another model family, pass any object with a ``count(text) -> int`` method (see
:class:`TokenCounter`), e.g. one wrapping that model's own tokenizer.

Counts are of the text only: a chat API adds a few tokens of framing per message
(role markers), which a budget for the block does not include.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from memlane.errors import ConfigError, ValidationError

__all__ = [
    "DEFAULT_ENCODING",
    "ENCODINGS",
    "CallableTokenCounter",
    "TokenCounter",
    "ToktokCounter",
    "resolve_token_counter",
]

DEFAULT_ENCODING = "o200k_base"
"""Encoding used when none is given: GPT-4o / GPT-4.1 / GPT-5 / o-series models."""

ENCODINGS = ("o200k_base", "cl100k_base")
"""Encodings offered by :class:`ToktokCounter` (both tiktoken-identical)."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts tokens of a text.

    Attributes:
        name: A short description shown in reports, e.g. ``"toktok o200k_base"``.
    """

    @property
    def name(self) -> str:
        """Description of the tokenizer."""
        ...

    def count(self, text: str) -> int:
        """Number of tokens in ``text`` (>= 0; 0 for the empty string)."""
        ...


class ToktokCounter:
    """Exact OpenAI token counts with ``toktok-rs`` (offline; vocabularies built in).

    Args:
        encoding: ``"o200k_base"`` (default) or ``"cl100k_base"``.

    Raises:
        ValidationError: an unknown encoding.
        ConfigError: the ``toktok-rs`` package (a base dependency) is not installed.
    """

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        if encoding not in ENCODINGS:
            raise ValidationError(
                f"unknown token encoding {encoding!r}; choose one of {', '.join(ENCODINGS)}"
            )
        try:
            import toktok
        except ImportError as exc:  # pragma: no cover - a base dependency
            raise ConfigError(
                f"token counting needs the toktok-rs package: pip install toktok-rs ({exc})"
            ) from exc
        self._toktok = toktok
        self.encoding = encoding

    @property
    def name(self) -> str:
        """``"toktok <encoding>"``."""
        return f"toktok {self.encoding}"

    def count(self, text: str) -> int:
        """Exact ``tiktoken``-identical token count of ``text`` (special-token strings count as text)."""
        counts: list[int] = self._toktok.batch_count([text], self.encoding, threads=1)
        return int(counts[0])


class CallableTokenCounter:
    """Adapts a plain function ``text -> int`` to :class:`TokenCounter`.

    Args:
        function: Returns the number of tokens of a text (>= 0).
        name: Description for reports.
    """

    def __init__(self, function: Callable[[str], int], name: str = "custom") -> None:
        self._function = function
        self._name = name

    @property
    def name(self) -> str:
        """The given description."""
        return self._name

    def count(self, text: str) -> int:
        """``function(text)``.

        Raises:
            ConfigError: the function returned something other than a non-negative int.
        """
        value = self._function(text)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(f"token counter {self._name!r} returned {value!r}, expected an int >= 0")
        return value


_COUNTERS: dict[str, ToktokCounter] = {}


def resolve_token_counter(counter: TokenCounter | Callable[[str], int] | str | None) -> TokenCounter:
    """Turn an encoding name, a function or ``None`` into a :class:`TokenCounter`.

    Args:
        counter: A :class:`TokenCounter`; an encoding name from :data:`ENCODINGS`; a
            function ``text -> int``; or ``None`` for :data:`DEFAULT_ENCODING`.

    Raises:
        ValidationError: an unknown encoding name or an unusable value.
    """
    if counter is None:
        counter = DEFAULT_ENCODING
    if isinstance(counter, str):
        if counter not in _COUNTERS:
            _COUNTERS[counter] = ToktokCounter(counter)
        return _COUNTERS[counter]
    if isinstance(counter, TokenCounter):
        return counter
    if callable(counter):
        return CallableTokenCounter(counter, getattr(counter, "__name__", "custom"))
    raise ValidationError(
        f"tokenizer must be an encoding name, a TokenCounter or a function, got {counter!r}"
    )
