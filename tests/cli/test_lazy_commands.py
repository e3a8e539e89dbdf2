"""The root group lists its commands without importing them (issue #24 item 7): the lazy
listing (names from :data:`memlane.cli.registry.HOMES`, summaries from
:data:`memlane.cli.registry.SUMMARIES`) equals what click prints with every command imported,
and the options generated from request fields take their help from the recorded field schemas
(:data:`memlane.cli.params.FIELD_SCHEMAS_FILE`), which equal what the requests generate.
"""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from memlane.cli import cli, registry
from memlane.cli.app import MemlaneGroup
from memlane.cli.params import FIELD_SCHEMAS_FILE, field_schema, generated_field_schemas
from memlane.operations.fields import tool_parameters
from memlane.operations.requests import RecallBody
from memlane.validation import MAX_LIMIT


def test_summaries_are_generated_from_the_commands_help() -> None:
    assert registry.generated_summaries() == registry.SUMMARIES, (
        "memlane.cli.registry.SUMMARIES is stale: run 'python -m memlane.cli.registry'"
    )


def test_field_schemas_are_generated_from_the_requests() -> None:
    recorded = json.loads(FIELD_SCHEMAS_FILE.read_text(encoding="utf-8"))
    generated = generated_field_schemas(registry.load_command(name) for name in registry.HOMES)
    assert generated == recorded, f"{FIELD_SCHEMAS_FILE.name} is stale: run 'python -m memlane.cli.registry'"
    assert generated["RecallBody"]["limit"]["maximum"] == MAX_LIMIT  # the CLI's maximum, not the tools'


def test_a_field_the_file_does_not_record_is_generated_from_its_request() -> None:
    recorded = json.loads(FIELD_SCHEMAS_FILE.read_text(encoding="utf-8"))
    assert "weights" not in recorded["RecallBody"]  # an HTTP-only field: no option is generated from it
    expected = tool_parameters(RecallBody, MAX_LIMIT)["properties"]["weights"]
    assert field_schema("RecallBody", "weights") == expected


def _eager_group() -> click.Group:
    """The same root group with every command imported and added (click's own listing)."""
    eager = click.Group(name="memlane", params=cli.params, callback=cli.callback, help=cli.help)
    for name in registry.HOMES:
        eager.add_command(registry.load_command(name), name)
    return eager


@pytest.mark.parametrize("width", [60, 80, 120, 200])
def test_the_lazy_listing_equals_the_eager_one(width: int) -> None:
    lazy = MemlaneGroup(name="memlane", params=cli.params, callback=cli.callback, help=cli.help)
    eager = _eager_group()
    texts = []
    for group in (lazy, eager):
        ctx = click.Context(group, info_name="memlane", terminal_width=width, max_content_width=width)
        texts.append(group.get_help(ctx))
    assert not lazy.commands  # listing imported nothing
    assert texts[0] == texts[1]


def test_every_registered_command_is_its_declared_name() -> None:
    for name in registry.HOMES:
        command = registry.load_command(name)
        assert command.name == name and isinstance(command, click.Command)


def test_a_lazy_command_runs_and_has_its_own_json_flag() -> None:
    result = CliRunner().invoke(cli, ["history", "--help"])
    assert result.exit_code == 0 and "--json" in result.stdout
    assert cli.get_command(click.Context(cli), "no-such-command") is None


def test_root_help_imports_no_command_module() -> None:
    code = (
        "import sys; from memlane.cli import main; sys.argv = ['memlane', '--help']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "mods = sorted(set(m for m in sys.modules if m.startswith('memlane.cli.')))\n"
        "print(' '.join(mods), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "Commands:" in done.stdout
    assert set(done.stderr.split()) == {"memlane.cli.app", "memlane.cli.registry"}, done.stderr
