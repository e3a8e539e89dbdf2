"""How a tool call's arguments arrive: JSON object text (OpenAI), a mapping (Anthropic, MCP), or nothing.

The arguments themselves are declared and checked by :mod:`memlane.operations.requests`
(one typed request per operation); this module only turns the raw form into a mapping.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from memlane.errors import ValidationError
from memlane.validation import json_type_name, safe_text

__all__ = ["parse_arguments"]


def parse_arguments(arguments: str | bytes | Mapping[str, Any] | None) -> Mapping[str, Any]:
    """Turn a tool call's arguments into a mapping: JSON object text (OpenAI), a mapping, or nothing.

    ``None`` and blank text are ``{}``.

    Raises:
        ValidationError: not valid JSON, or not a JSON object.
    """
    if arguments is None:
        return {}
    raw: object = arguments
    if isinstance(arguments, bytes):
        raw = arguments.decode("utf-8", "replace")
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"arguments are not valid JSON: {exc.msg} at column {exc.colno}") from None
        except ValueError as exc:  # e.g. an integer of more than 4,300 digits
            raise ValidationError(f"arguments are not valid JSON: {safe_text(str(exc))[:200]}") from None
        except RecursionError:
            raise ValidationError("arguments are not valid JSON: nested too deeply") from None
    if not isinstance(raw, Mapping):
        raise ValidationError(f"arguments must be a JSON object, got {json_type_name(raw)}")
    return raw
