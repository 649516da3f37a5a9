"""The memory use cases, one concept per module, independent of MCP and HTTP.

Every rule of the tool contract (``docs/SERVER.md``, "Tools and results") lives
here or in ``domain``; stores provide
atomicity and filtering, providers the models, the server only translation.
``metacortex.service.MemoryService`` puts them together behind one facade.
Use cases are synchronous (stores and models are); the async edge runs them in
worker threads.
"""
