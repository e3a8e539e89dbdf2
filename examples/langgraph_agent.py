"""A LangGraph agent whose long-term memory is memlane (``MemlaneStore``), fully offline.

The graph is ``recall -> agent <-> tools``: ``recall`` searches the user's memories with the
latest message (memlane's ranked recall, via the store LangGraph injects) and puts the best
ones in a system message; ``agent`` is the chat model; ``tools`` runs ``save_memory``, which
puts a fact under the user's namespace. Saving under an existing key supersedes the old fact:
memlane keeps it as history (``store.history``) and ``get``/``search`` return the new one.

The chat model is LangChain's ``GenericFakeChatModel`` replaying a script (so the example
needs no API key and sends nothing); swap in any LangChain chat model that supports tool
calling (``model.bind_tools([save_memory])``) for a real agent. Embeddings come from
memlane's bundled offline model.

Needs ``pip install 'memlane[langgraph]'``. Run::

    python examples/langgraph_agent.py --db /tmp/langgraph-agent.db
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path
from typing import Annotated, Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedStore, ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore

from memlane.integrations.langgraph import MemlaneSearchItem, MemlaneStore


@tool
def save_memory(
    key: str, content: str, config: RunnableConfig, store: Annotated[BaseStore, InjectedStore()]
) -> str:
    """Save a fact about the user under a short key; saving the same key again replaces it."""
    user = config["configurable"]["user_id"]
    store.put(("memories", user), key, {"content": content})
    return f"saved {key!r}"


def build_graph(store: MemlaneStore, script: list[AIMessage]) -> Any:
    """``recall -> agent <-> tools``, compiled with ``store``; ``script`` is what the fake model says."""
    model = GenericFakeChatModel(messages=iter(script))

    def recall(state: MessagesState, config: RunnableConfig, runtime: Runtime[None]) -> dict[str, Any]:
        assert runtime.store is not None
        user = config["configurable"]["user_id"]
        query = str(state["messages"][-1].content)
        found = runtime.store.search(("memories", user), query=query, limit=3)
        for item in found:
            why = item.breakdown if isinstance(item, MemlaneSearchItem) else None
            parts = f" (relevance {why.relevance:.2f}, recency {why.recency:.2f})" if why else ""
            print(f"  recalled {item.key!r}: {item.value['content']!r} score {item.score:.3f}{parts}")
        if not found:
            return {}
        lines = "\n".join(f"- {item.value['content']}" for item in found)
        return {"messages": [SystemMessage(content=f"What you remember about the user:\n{lines}")]}

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("recall", recall)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode([save_memory]))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "agent")
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(store=store)


def _save(key: str, content: str, call_id: str) -> AIMessage:
    args = {"key": key, "content": content}
    return AIMessage(content="", tool_calls=[{"name": "save_memory", "args": args, "id": call_id}])


CONVERSATIONS: list[tuple[str, list[AIMessage]]] = [
    (
        "Hi! I live in Lisbon and I'm vegetarian.",
        [
            _save("home", "User lives in Lisbon", "c1"),
            _save("diet", "User is vegetarian", "c2"),
            AIMessage("Nice to meet you! I'll remember that."),
        ],
    ),
    (
        "Big news: I moved to Berlin last week.",
        [_save("home", "User lives in Berlin", "c3"), AIMessage("Noted!")],
    ),
    ("Any dinner ideas near where I live?", [AIMessage("Try a vegetarian place in Berlin-Kreuzberg.")]),
]


async def main(db: Path, user: str) -> None:
    store = MemlaneStore.open(db, tenant_label=1)  # ("memories", user): one memlane tenant per user
    config: RunnableConfig = {"configurable": {"user_id": user}}
    try:
        for text, script in CONVERSATIONS:
            print(f"user: {text}")
            graph = build_graph(store, script)
            state = await graph.ainvoke({"messages": [HumanMessage(text)]}, config)  # async: store.abatch
            for message in state["messages"][1:]:
                if isinstance(message, AIMessage) and message.tool_calls:
                    for call in message.tool_calls:
                        print(f"  tool call {call['name']}({call['args']})")
                elif isinstance(message, AIMessage):
                    print(f"assistant: {message.content}")
        print("history of 'home':")
        for version in store.history(("memories", user), "home"):
            print(f"  {version.updated_at:%Y-%m-%d %H:%M:%S} {version.value['content']}")
        print(f"namespaces: {store.list_namespaces()}")
    finally:
        await store.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=None, help="SQLite file (default: a temporary one)")
    parser.add_argument("--user", default="u1", help="the user id (becomes the memlane tenant)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(main(args.db or Path(scratch) / "langgraph-agent.db", args.user))
