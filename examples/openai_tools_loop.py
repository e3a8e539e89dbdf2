"""An OpenAI tool-calling loop with memlane's memory tools (``memlane.tools.MemoryTools``).

The model gets memlane's ``remember_episode`` / ``recall_episodes`` tools in Chat Completions
format; each tool call it makes is run by ``MemoryTools.handle_tool_call`` (which never
raises: a bad call comes back as ``{"ok": false, "error": ...}`` for the model to read) and
the result is sent back as a ``tool`` message, until the model answers in text.

Offline by default: without ``OPENAI_API_KEY``/``OPENAI_BASE_URL`` the client is
:class:`ScriptedClient`, a stand-in with the same ``client.chat.completions.create(...)``
shape that returns real ``openai`` response objects from a script (it reads the tool results
it is sent, so what it says comes from memlane). With either variable set, the real
``openai.OpenAI`` client talks to that endpoint (``--model`` names the model). Needs the
``openai`` extra (``pip install 'memlane[openai]'``) for the response types.

Run::

    python examples/openai_tools_loop.py --db /tmp/openai-tools.db
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from openai.types.chat import ChatCompletion

from memlane import EpisodicMemory
from memlane.tools import MemoryTools

SYSTEM_PROMPT = (
    "You are a helpful assistant with long-term memory. Remember durable facts about the user "
    "with remember_episode; before answering questions about the user, call recall_episodes."
)
MAX_STEPS = 6


def _contents(value: Any) -> Iterator[str]:
    """Every string stored under a ``content`` key in a tool result, in order."""
    if isinstance(value, dict):
        for key, child in value.items():
            if key == "content" and isinstance(child, str):
                yield child
            else:
                yield from _contents(child)
    elif isinstance(value, list):
        for child in value:
            yield from _contents(child)


class ScriptedClient:
    """A stand-in for ``openai.OpenAI`` whose replies come from a script (no network).

    Each step of the script sees the request's messages and returns either a tool call
    ``(name, arguments)`` or the assistant's text.
    """

    Step = Callable[[list[dict[str, Any]]], "tuple[str, dict[str, Any]] | str"]

    def __init__(self, script: list[ScriptedClient.Step]) -> None:
        self._script = iter(script)
        self.requests: list[dict[str, Any]] = []
        self.chat = self  # client.chat.completions.create(...)
        self.completions = self

    def create(self, *, model: str, messages: list[dict[str, Any]], **options: Any) -> ChatCompletion:
        self.requests.append({"model": model, "messages": messages, **options})
        reply = next(self._script)(messages)
        n = len(self.requests)
        if isinstance(reply, tuple):
            name, arguments = reply
            call = {
                "id": f"call_{n}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        else:
            message, finish = {"role": "assistant", "content": reply}, "stop"
        return ChatCompletion.model_validate(
            {
                "id": f"chatcmpl-{n}",
                "object": "chat.completion",
                "created": 0,
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            }
        )


def demo_script() -> list[ScriptedClient.Step]:
    """Two user turns: one fact to remember, then a question answered from recall."""

    def answer_from_recall(messages: list[dict[str, Any]]) -> str:
        result = json.loads(messages[-1]["content"])
        found = list(_contents(result))
        return f"You told me: {found[0]}" if found else "I don't remember that."

    return [
        lambda _: (
            "remember_episode",
            {
                "event_type": "preference",
                "content": "User prefers window seats",
                "tags": ["travel"],
                "importance": 7,
            },
        ),
        lambda _: "Got it, window seats from now on.",
        lambda _: ("recall_episodes", {"query": "seat preference on flights", "tags": ["travel"]}),
        answer_from_recall,
    ]


def make_client() -> Any:
    """The real OpenAI client when an endpoint or key is configured, else the scripted one."""
    if os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY"):
        from openai import OpenAI

        return OpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "not-needed")
    return ScriptedClient(demo_script())


def turn(client: Any, tools: MemoryTools, messages: list[dict[str, Any]], model: str) -> str:
    """Run the model until it answers in text, executing its memory tool calls; return the answer."""
    for _ in range(MAX_STEPS):
        response = client.chat.completions.create(
            model=model, messages=messages, tools=tools.schemas("openai")
        )
        message = response.choices[0].message
        if not message.tool_calls:
            messages.append({"role": "assistant", "content": message.content or ""})
            return str(message.content or "")
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            result = tools.handle_tool_call(call.function.name, call.function.arguments)
            print(f"  tool {call.function.name}({call.function.arguments}) -> ok={result.get('ok')}")
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return "(stopped: too many tool calls)"


def main(db: Path, model: str, user_turns: list[str]) -> None:
    with EpisodicMemory.open(db, tenant_id="demo-user", session_id="chat-1") as memory:
        tools = MemoryTools(memory)
        client = make_client()
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        for text in user_turns:
            print(f"user: {text}")
            messages.append({"role": "user", "content": text})
            print(f"assistant: {turn(client, tools, messages, model)}")
        print(f"episodes stored: {memory.count()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=None, help="SQLite file (default: a temporary one)")
    parser.add_argument("--model", default="gpt-4o-mini", help="model name for a real endpoint")
    args = parser.parse_args()
    turns = ["I always want a window seat when I fly.", "Which seat do I like on flights?"]
    with tempfile.TemporaryDirectory() as scratch:
        main(args.db or Path(scratch) / "openai-tools.db", args.model, turns)
