"""Writing MetaCortex into other applications' MCP configuration (``metacortex init``)."""
