"""Adapters that let other agent frameworks use memlane through their own interfaces.

* :mod:`memlane.integrations.langgraph`: :class:`~memlane.integrations.langgraph.MemlaneStore`,
  a LangGraph ``BaseStore`` (``pip install 'memlane[langgraph]'``); LangMem's memory tools
  work on it too.

Each adapter uses only memlane's public API and imports its framework lazily: importing this
package needs no optional dependency.
"""

__all__: list[str] = []
