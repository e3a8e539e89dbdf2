"""The operations every interface runs, declared once (issue #19).

* :mod:`memlane.operations.requests`: one typed request per operation (pydantic models).
* :mod:`memlane.operations.fields`: the field types, the one check of a request, and the schemas
  derived from them.
* :mod:`memlane.operations.arguments`: how a tool call's raw arguments arrive (JSON text or a mapping).
* :mod:`memlane.operations.handlers`: one function per operation: checked arguments in, a wire result out.
* :mod:`memlane.operations.tool_specs`: the agent tools' JSON schemas beyond remember/recall.

The wire format they answer in is the leaf :mod:`memlane.wire` (the value types' JSON form,
which the engine's reports use too).
"""
