"""Storage backends behind one narrow Protocol (``base.MemoryStore``)."""
