"""Model providers (embeddings, image description, merges) behind small Protocols."""
