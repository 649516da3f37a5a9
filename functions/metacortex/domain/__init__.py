"""The memory domain: records, lifecycle rules, validation limits, write fingerprints."""
