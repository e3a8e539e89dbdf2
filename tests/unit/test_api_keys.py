"""API key roles in ``server.api_keys``: the old ``key: tenant`` form and ``key: {tenant, role}``."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from memlane.cli import cli
from memlane.config.api_keys import ROLE_ADMIN, ROLE_AGENT, hash_api_key
from memlane.config.file import load_config
from memlane.errors import ConfigError

AGENT_KEY = "agent-key-of-24-characters"
ADMIN_KEY = "admin-key-of-24-characters"


def test_both_entry_forms_give_tenant_and_role() -> None:
    config = load_config(
        {
            "server": {
                "api_keys": {
                    hash_api_key(AGENT_KEY): "acme",
                    hash_api_key(ADMIN_KEY): {"tenant": "ops", "role": "admin"},
                    hash_api_key("x" * 20): {"tenant": "globex"},  # role defaults to agent
                }
            }
        }
    )
    server = config.server
    agent, admin, implicit = (
        server.api_key_for(AGENT_KEY),
        server.api_key_for(ADMIN_KEY),
        server.api_key_for("x" * 20),
    )
    assert agent is not None and (agent.tenant_id, agent.role, agent.is_admin) == ("acme", ROLE_AGENT, False)
    assert admin is not None and (admin.tenant_id, admin.role, admin.is_admin) == ("ops", ROLE_ADMIN, True)
    assert implicit is not None and (implicit.tenant_id, implicit.role) == ("globex", ROLE_AGENT)
    assert server.tenant_for_key(ADMIN_KEY) == "ops"  # the API still acts as the key's tenant
    assert server.api_key_for("not-a-configured-key-at-all") is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"tenant": "acme", "role": "root"},
            "server.api_keys: entry #1 (tenant 'acme'): role must be one of",
        ),
        ({"role": "admin"}, "server.api_keys: entry #1: missing 'tenant'"),
        ({"tenant": "acme", "roles": "admin"}, "server.api_keys: entry #1: unknown keys ['roles']"),
        ({"tenant": " ", "role": "admin"}, "server.api_keys: entry #1: tenant id must be"),
    ],
)
def test_invalid_role_entries_name_the_entry(value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        load_config({"server": {"api_keys": {hash_api_key(AGENT_KEY): value}}})
    assert str(excinfo.value).startswith(message), str(excinfo.value)
    assert AGENT_KEY not in str(excinfo.value)


def test_one_key_cannot_have_two_roles() -> None:
    keys = {AGENT_KEY: "acme", hash_api_key(AGENT_KEY): {"tenant": "acme", "role": "admin"}}
    with pytest.raises(ConfigError, match="also given with role 'agent'"):
        load_config({"server": {"api_keys": keys}})


def test_api_key_command_prints_an_admin_entry_that_loads() -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["api-key", "acme", "--role", "admin"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    key, entry = lines[1].strip(), lines[-1].strip()
    config = load_config({"server": {"api_keys": yaml.safe_load(entry)}})
    found = config.server.api_key_for(key)
    assert found is not None and (found.tenant_id, found.role) == ("acme", "admin")
    made = runner.invoke(cli, ["--json", "api-key", "acme"])
    assert made.exit_code == 0
    assert '"role": "agent"' in made.stdout
