"""Retrieval pieces shared by every store: text analysis and score fusion."""
