"""The MCP surface: what a model or an MCP client sees of MetaCortex.

``mcp_server.build_mcp_server`` builds the one low-level ``mcp`` SDK ``Server``
that both transports (HTTP in ``metacortex.server.app``, stdio in
``metacortex.server.stdio``) serve. One module a kind of thing: ``tools``
(calls, and their translation of domain errors to ``isError`` results),
``schemas`` (every tool's input and output schema and description),
``chatgpt_tools`` (ChatGPT's fixed ``search``/``fetch`` pair), ``resources``,
``prompts`` and ``context_prompt``, ``recording`` (the log line and event of
every call) and ``summaries`` (what an event keeps of a request).

It depends on ``metacortex.kernel`` (runtime, logs, events), ``metacortex.access``
(profiles) and the service, never on ``metacortex.guard``: the guard has already let the request
in when a handler runs.
"""
