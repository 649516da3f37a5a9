"""Operator tasks over a store: portable backup and restore, re-embedding."""
