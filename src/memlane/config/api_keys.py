"""API keys of the HTTP server (``server.api_keys``): parsing, hashing, roles and look-up.

Two entry forms, mixed freely in one mapping::

    server:
      api_keys:
        "sha256:<64 hex digits>": acme                           # role agent (the default)
        "sha256:<64 hex digits>": {tenant: acme, role: admin}    # an admin key

Roles (:data:`ROLES`):

* ``agent`` — what every key was before roles existed: every ``/v1`` request and every
  inspector page acts as the key's tenant, and nothing else exists for it.
* ``admin`` — the same on ``/v1`` (the API still acts as the key's tenant), and in the memory
  inspector (``/inspect``) it may also look at every other tenant (read-only). Its admin jobs
  (``/v1/admin/forget``, ``compact``, ``prune``) act on its own tenant only.
* ``operator`` — an ``admin`` whose ``/v1/admin/prune`` applies the retention store-wide
  (every tenant): the key of whoever runs the server.

Keys are kept only as SHA-256 digests and compared in constant time; a key is never echoed
in an error message.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from memlane.errors import ConfigError, MemlaneError
from memlane.validation import check_identifier

__all__ = [
    "ROLES",
    "ROLE_ADMIN",
    "ROLE_AGENT",
    "ROLE_OPERATOR",
    "ApiKey",
    "find_api_key",
    "hash_api_key",
    "parse_api_keys",
]

logger = logging.getLogger(__name__)

ROLE_AGENT: Final = "agent"
"""A key that acts as its tenant only (the default)."""
ROLE_ADMIN: Final = "admin"
"""A key that may also inspect every other tenant in the memory inspector (read-only)."""
ROLE_OPERATOR: Final = "operator"
"""An admin key whose retention prune is store-wide (every tenant)."""
ROLES: Final = (ROLE_AGENT, ROLE_ADMIN, ROLE_OPERATOR)
"""Every accepted role."""

_MIN_PLAINTEXT_KEY_LENGTH = 16
_SHA256_PREFIX = "sha256:"


@dataclass(frozen=True, slots=True)
class ApiKey:
    """One configured API key, kept only as its SHA-256 digest.

    Attributes:
        digest: ``sha256(key.encode("utf-8"))``, 32 bytes.
        tenant_id: The tenant every request with this key acts as.
        role: ``"agent"`` (default), ``"admin"`` or ``"operator"``; see :data:`ROLES`.
    """

    digest: bytes = field(repr=False)
    tenant_id: str
    role: str = ROLE_AGENT

    @property
    def is_admin(self) -> bool:
        """Whether the key may inspect every tenant and run the admin jobs (``admin`` and ``operator``)."""
        return self.role in (ROLE_ADMIN, ROLE_OPERATOR)

    @property
    def is_operator(self) -> bool:
        """Whether the key's retention prune is store-wide."""
        return self.role == ROLE_OPERATOR


def hash_api_key(key: str) -> str:
    """Return the config form of an API key: ``"sha256:" + sha256(key).hexdigest()``.

    Args:
        key: The secret key as clients send it.
    """
    return _SHA256_PREFIX + hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def find_api_key(keys: Iterable[ApiKey], presented: str) -> ApiKey | None:
    """Return the configured key matching ``presented``, or ``None``.

    The presented key is hashed and compared with every configured digest in constant time
    (:func:`hmac.compare_digest`, no early exit), so timing reveals nothing about which prefix
    matched.
    """
    digest = hashlib.sha256(presented.encode("utf-8", "surrogatepass")).digest()
    found: ApiKey | None = None
    for key in keys:
        if hmac.compare_digest(digest, key.digest):
            found = key
    return found


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _tenant_and_role(value: object, where: str, error: Callable[[str], ConfigError]) -> tuple[str, str]:
    """The ``(tenant, role)`` of one entry's value: a tenant id, or ``{tenant, role}``."""
    role: object = ROLE_AGENT
    tenant: object = value
    if isinstance(value, Mapping):
        unknown = sorted(str(k) for k in value if k not in ("tenant", "role"))
        if unknown:
            raise error(
                f"{where}: unknown keys {unknown}; an entry is 'tenant' or {{tenant: ..., role: ...}}"
            )
        if "tenant" not in value:
            raise error(f"{where}: missing 'tenant'")
        tenant, role = value["tenant"], value.get("role", ROLE_AGENT)
    try:
        tenant_id = check_identifier(tenant, "tenant id")
    except MemlaneError as exc:
        raise error(f"{where}: {exc}") from None
    if role not in ROLES:
        raise error(f"{where} (tenant {tenant_id!r}): role must be one of {list(ROLES)}, got {role!r}")
    assert isinstance(role, str)
    return tenant_id, role


def _digest(key: object, where: str, error: Callable[[str], ConfigError]) -> bytes:
    """The SHA-256 digest an entry's key stands for: ``sha256:<hex>`` as written, a plaintext key hashed."""
    if not isinstance(key, str):
        raise error(f"{where}: the key must be a string, got {_type_name(key)}")
    if key.startswith(_SHA256_PREFIX):
        try:
            digest = bytes.fromhex(key.removeprefix(_SHA256_PREFIX).strip().lower())
        except ValueError:
            digest = b""
        if len(digest) != 32:
            raise error(f"{where}: 'sha256:' must be followed by 64 hex digits")
        return digest
    if len(key) < _MIN_PLAINTEXT_KEY_LENGTH:
        raise error(
            f"{where}: a plaintext key must be at least {_MIN_PLAINTEXT_KEY_LENGTH} characters "
            "(better: store it hashed, see 'memlane api-key')"
        )
    logger.warning(
        "server.api_keys %s is stored in plaintext; store %s instead",
        where,
        "its sha256 form (memlane api-key prints it)",
    )
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def parse_api_keys(raw: object, error: Callable[[str], ConfigError]) -> tuple[ApiKey, ...]:
    """Parse the ``server.api_keys`` mapping (key -> tenant, or key -> ``{tenant, role}``).

    Args:
        raw: The mapping as loaded from YAML, or ``None`` (no keys).
        error: Makes the :class:`ConfigError` for a message (it prefixes the dotted key).

    Returns:
        The keys, one per distinct digest.

    Raises:
        ConfigError: not a mapping; a bad tenant id, role, digest or a too short plaintext
            key; the same key given to two tenants or with two roles. Messages name the
            entry's position and tenant, never the key.
    """
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise error(f"must be a mapping of API key -> tenant id, got {_type_name(raw)}")
    keys: dict[bytes, tuple[str, str]] = {}
    for position, (key, value) in enumerate(raw.items(), start=1):
        tenant_id, role = _tenant_and_role(value, f"entry #{position}", error)  # never echo the key
        where = f"entry #{position} (tenant {tenant_id!r})"
        digest = _digest(key, where, error)
        if digest in keys and keys[digest][0] != tenant_id:
            raise error(f"{where}: the same key is also given to tenant {keys[digest][0]!r}")
        if digest in keys and keys[digest][1] != role:
            raise error(f"{where}: the same key is also given with role {keys[digest][1]!r}")
        keys[digest] = (tenant_id, role)
    return tuple(ApiKey(digest=d, tenant_id=t, role=r) for d, (t, r) in keys.items())
