"""Network interfaces over one :class:`memlane.EpisodicMemory`; each needs its extra.

* :mod:`memlane.server.http` — REST API with API-key tenant auth (``pip install 'memlane[server]'``):
  :func:`~memlane.server.http.create_app`, run by ``memlane serve``.
* :mod:`memlane.server.mcp` — Model Context Protocol server (``pip install 'memlane[mcp]'``):
  :func:`~memlane.server.mcp.create_mcp_server`, run by ``memlane mcp`` (stdio or streamable HTTP).
* :mod:`memlane.server.errors` — how the HTTP API maps memlane's errors to statuses and bodies.

Nothing is imported here, so ``import memlane.server`` needs neither extra.
"""
