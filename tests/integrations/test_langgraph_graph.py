"""A real LangGraph graph, compiled with ``store=MemlaneStore(...)``, with LangMem's memory tools.

The chat model is LangChain's ``GenericFakeChatModel`` replaying scripted messages (tool calls
included), so nothing goes over the network; everything else is real: the graph, LangGraph's
``ToolNode`` and store injection, LangMem's tools, memlane's store and the bundled model.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.runtime import Runtime
from langmem import create_manage_memory_tool, create_search_memory_tool

from memlane import EpisodicMemory, LocalEmbedder, MemoryConfig, SQLiteStore
from memlane.integrations.langgraph import MemlaneStore

NAMESPACE = ("memories", "{langgraph_user_id}")


def _call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


def build_graph(store: MemlaneStore, script: list[AIMessage]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """recall (store.search via the injected runtime) -> agent (fake model) <-> tools (LangMem)."""
    model = GenericFakeChatModel(messages=iter(script))
    tools = [create_manage_memory_tool(namespace=NAMESPACE), create_search_memory_tool(namespace=NAMESPACE)]

    def recall(state: MessagesState, config: RunnableConfig, runtime: Runtime[None]) -> dict[str, Any]:
        user = config["configurable"]["langgraph_user_id"]
        assert runtime.store is not None
        query = str(state["messages"][-1].content)
        found = runtime.store.search(("memories", user), query=query, limit=3)
        lines = "\n".join(f"- {item.value['content']}" for item in found)
        return {"messages": [SystemMessage(content=f"Memories:\n{lines}")]} if found else {}

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("recall", recall)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "agent")
    builder.add_conditional_edges("agent", tools_condition, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(store=store)


def _tool_results(messages: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


def _run_conversations(store: MemlaneStore, invoke: Any) -> None:
    config = {"configurable": {"langgraph_user_id": "u1"}}
    first = build_graph(
        store,
        [
            _call("manage_memory", {"content": "User lives in Lisbon", "action": "create"}, "c1"),
            AIMessage("Noted."),
        ],
    )
    out = invoke(first, {"messages": [HumanMessage("I live in Lisbon, remember that.")]}, config)
    created = _tool_results(out["messages"])
    assert len(created) == 1 and created[0].startswith("created memory ")
    memory_id = created[0].removeprefix("created memory ")

    item = store.get(("memories", "u1"), memory_id)
    assert item is not None and item.value == {"content": "User lives in Lisbon"}
    # tenant_label=1: the user's memories are memlane tenant "u1"
    tenant = store.memory.with_context(tenant_id="u1", config=MemoryConfig(scope="tenant"))
    assert [ep.content for ep in tenant.iter_episodes()] == ["User lives in Lisbon"]

    second = build_graph(
        store,
        [
            _call(
                "manage_memory",
                {"content": "User moved to Berlin", "action": "update", "id": memory_id},
                "c2",
            ),
            _call("search_memory", {"query": "where does the user live?"}, "c3"),
            AIMessage("You live in Berlin."),
        ],
    )
    out = invoke(second, {"messages": [HumanMessage("I moved to Berlin. Where do I live now?")]}, config)
    messages = out["messages"]
    system = [m for m in messages if isinstance(m, SystemMessage)]
    assert system and "User lives in Lisbon" in str(system[0].content)  # recalled before the update
    updated, searched = _tool_results(messages)
    assert updated == f"updated memory {memory_id}"
    found = json.loads(searched)
    assert [hit["value"]["content"] for hit in found] == ["User moved to Berlin"]
    assert found[0]["score"] is not None and 0.0 < found[0]["score"] <= 1.0
    assert messages[-1].content == "You live in Berlin."

    assert [i.value["content"] for i in store.history(("memories", "u1"), memory_id)] == [
        "User lives in Lisbon",
        "User moved to Berlin",
    ]
    other = store.search(("memories", "u2"), query="where does the user live?")
    assert other == []  # another user's namespace (and tenant) is empty


def _memory(tmp_path: Path, embedder: LocalEmbedder) -> MemlaneStore:
    memory = EpisodicMemory(SQLiteStore(tmp_path / "graph.db"), embedder)
    return MemlaneStore(memory, tenant_label=1, owns_memory=True)


def test_graph_with_langmem_tools_sync(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    store = _memory(tmp_path, local_embedder)
    _run_conversations(store, lambda graph, state, config: graph.invoke(state, config))
    store.close()


def test_graph_with_langmem_tools_async(tmp_path: Path, local_embedder: LocalEmbedder) -> None:
    store = _memory(tmp_path, local_embedder)

    def invoke(graph: Any, state: Any, config: Any) -> Any:
        return asyncio.run(graph.ainvoke(state, config))  # tools use aput/asearch -> abatch

    _run_conversations(store, invoke)
    asyncio.run(store.aclose())
