"""A minimal agent loop with memlane session memory.

Each line on stdin is a user message. Before every model call, the best passages of this
user's past conversations (and remembered event episodes) are injected as a
``[Past Conversation Context]`` system message, within a token budget. A line ``/end``
finishes the conversation: it is stored as a session episode, and the next line starts a
new one. End of input stores the conversation in progress too.

With ``OPENAI_BASE_URL`` or ``OPENAI_API_KEY`` set, each request goes to that
OpenAI-compatible endpoint (``pip install 'memlane[openai]'``; ``--model`` names the
model). Otherwise nothing is sent: the loop prints each request it would send, as JSON,
and records a placeholder reply.

Try it::

    printf 'Please onboard Acme Corp as a vendor\\n/end\\nDid the Acme onboarding go through?\\n' \\
        | python examples/agent_loop.py --db /tmp/agent.db
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from typing import Any, TextIO

from memlane import EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder

SYSTEM_PROMPT = "You are a helpful assistant. Use the past conversation context when it is relevant."
DRY_RUN_REPLY = "(dry run: no model configured, nothing was sent)"


def make_client() -> Any | None:
    """An OpenAI client when an endpoint or key is configured, else ``None`` (dry run)."""
    if not (os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_KEY")):
        return None
    from openai import OpenAI  # the optional 'openai' extra

    return OpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "not-needed")


def run(
    memory: EpisodicMemory,
    lines: TextIO,
    out: TextIO,
    *,
    agent_id: str,
    user_id: str,
    model: str,
    budget: int,
) -> int:
    """Run the loop over ``lines``; return how many conversations were stored."""
    client = make_client()
    stored = 0
    session_id = uuid.uuid4().hex
    conversation: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]

    def finish() -> None:
        nonlocal stored, session_id, conversation
        if any(m["role"] == "user" for m in conversation):
            memory.sessions.store_session(session_id, conversation, agent_id=agent_id, user_id=user_id)
            stored += 1
            print(f"# stored conversation {session_id} ({len(conversation)} messages)", file=out)
        session_id = uuid.uuid4().hex
        conversation = [{"role": "system", "content": SYSTEM_PROMPT}]

    for line in lines:
        text = line.strip()
        if not text:
            continue
        if text == "/end":
            finish()
            continue
        conversation.append({"role": "user", "content": text})
        request = memory.sessions.inject_context(
            conversation, agent_id=agent_id, user_id=user_id, token_budget=budget
        )
        if client is None:
            print(json.dumps({"model": model, "messages": request}, ensure_ascii=False, indent=2), file=out)
            reply = DRY_RUN_REPLY
        else:
            response = client.chat.completions.create(model=model, messages=request)
            reply = response.choices[0].message.content or ""
            print(f"assistant: {reply}", file=out)
        conversation.append({"role": "assistant", "content": reply})
    finish()
    return stored


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, open the memory and run the loop on stdin."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--db", default="memlane.db", help="SQLite file or postgresql:// URL (default memlane.db)"
    )
    parser.add_argument("--tenant", default="default")
    parser.add_argument("--agent", default="example-agent")
    parser.add_argument("--user", default="example-user")
    parser.add_argument("--model", default=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    parser.add_argument("--budget", type=int, default=600, help="token budget of the context block")
    parser.add_argument(
        "--embedder",
        choices=["local", "hashing"],
        default="local",
        help="local: the bundled model (default); hashing: a fast fake for tests",
    )
    args = parser.parse_args(argv)
    embedder = HashingEmbedder() if args.embedder == "hashing" else None
    with EpisodicMemory.open(args.db, embedder=embedder, tenant_id=args.tenant) as memory:
        run(
            memory,
            sys.stdin,
            sys.stdout,
            agent_id=args.agent,
            user_id=args.user,
            model=args.model,
            budget=args.budget,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
