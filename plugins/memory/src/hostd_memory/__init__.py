"""hostd-memory: long-term memories for an assistant, in one SQLite file."""
