"""The ``metacortex`` command line (entry point: ``metacortex.cli.main:main``)."""

import os

# numpy's OpenBLAS keeps its worker threads busy-waiting for a while after every
# product (the vector search's), on the cores the next search's embedding, SQLite and
# Python work need: at 100,000 memories 44 ms of CPU per search for 22 ms of wall,
# against 32 ms without the wait and the same wall (docs/benchmarks.md, "Scale").
# OpenBLAS reads this when numpy loads, so it is set here, before any command imports
# numpy; a value the operator set is kept.
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
