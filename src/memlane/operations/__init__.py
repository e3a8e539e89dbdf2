"""The operations every interface runs, declared once (issue #19).

* :mod:`memlane.operations.wire`: the one wire format (JSON shapes of episodes, hits, sessions).
* :mod:`memlane.operations.arguments`: the one argument policy (checks of every interface).
* :mod:`memlane.operations.handlers`: one function per operation: checked arguments in, a wire result out.
* :mod:`memlane.operations.tool_specs`: the agent tools' JSON schemas beyond remember/recall.

This ``__init__`` imports nothing, so the value types (:mod:`memlane.models`) can import
:mod:`memlane.operations.wire` without loading the interface modules.
"""
