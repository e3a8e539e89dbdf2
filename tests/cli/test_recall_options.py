"""``memlane recall --retrieval / --min-relevance`` and the hybrid breakdown in the CLI."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.cli.conftest import Invoke

Remember = Callable[..., dict[str, Any]]


def test_retrieval_modes(invoke: Invoke, remember: Remember) -> None:
    seat = remember("preference", "User prefers window seats on flights")
    remember("note", "Dinner booked at the Italian place")
    for mode in ("hybrid", "dense", "keyword"):
        result = invoke("recall", "window seats", "--retrieval", mode, "--limit", "1", global_opts=["--json"])
        assert result.exit_code == 0, result.output
        (hit,) = json.loads(result.stdout)
        assert hit["id"] == seat["id"]
        assert hit["breakdown"]["retrieval"] == mode
    # keyword recall never loads the embedding model
    result = invoke(
        "recall", "window seats", "--retrieval", "keyword", embedder="failing", global_opts=["--json"]
    )
    assert result.exit_code == 0, result.output
    assert [h["id"] for h in json.loads(result.stdout)] == [seat["id"]]
    table = invoke("recall", "window seats", "--retrieval", "keyword")
    assert table.exit_code == 0 and "keyword" in table.stdout


def test_min_relevance_option(invoke: Invoke, remember: Remember) -> None:
    seat = remember("preference", "User prefers window seats on flights")
    remember("note", "Dinner booked at the Italian place")
    loose = invoke("recall", "window seats", "--limit", "5", global_opts=["--json"])
    assert len(json.loads(loose.stdout)) == 2
    strict = invoke("recall", "window seats", "--min-relevance", "0.3", global_opts=["--json"])
    assert [h["id"] for h in json.loads(strict.stdout)] == [seat["id"]]


def test_bad_options_exit_2(invoke: Invoke) -> None:
    assert invoke("recall", "x", "--retrieval", "sparse").exit_code == 2
    assert invoke("recall", "x", "--min-relevance", "1.5").exit_code == 2
