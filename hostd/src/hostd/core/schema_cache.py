"""A per-user cache of the tools' JSON schemas, so a server start does not rebuild them.

Deriving ``inputSchema`` and ``outputSchema`` from pydantic models is most of what the host
does at start-up (tens of milliseconds for the five plugins). The schemas depend only on the
plugin's code, the host's code and pydantic, so they are cached per plugin under a key made
from those files' sizes and modification times: any edit or upgrade makes a new key. Only
plugins loaded from a file are cached; a broken or unwritable cache is simply not used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Any

logger = logging.getLogger("hostd.schema_cache")

CACHE_FORMAT = 1


def _stamp(path: Path, digest: Any) -> None:
    """Feed the size and modification time of a file, or of every module under a folder."""
    if path.is_file():
        stat = path.stat()
        digest.update(f"{path}:{stat.st_size}:{stat.st_mtime_ns};".encode())
        return
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                _stamp(Path(dirpath) / name, digest)


def _plugin_source(plugin: object) -> Path | None:
    """The plugin's package folder, or its lone module file; ``None`` for in-memory objects."""
    module_file = getattr(plugin, "__file__", None)
    if not module_file:
        return None
    module = Path(module_file).resolve()
    return module.parent if (module.parent / "__init__.py").exists() else module


class SchemaCache:
    """The cached schemas of one plugin's tools (``get``/``put``), written back with ``save``."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, Any] = {}
        self._changed = False
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if data.get("format") == CACHE_FORMAT:
                    self._entries = data["tools"]
            except (OSError, ValueError, KeyError, TypeError):
                self._entries = {}

    @classmethod
    def disabled(cls) -> SchemaCache:
        return cls(None)

    @classmethod
    def for_plugin(cls, name: str, plugin: object, cache_dir: Path | None) -> SchemaCache:
        """The cache for a plugin module loaded from a package folder; disabled otherwise."""
        source = _plugin_source(plugin)
        if cache_dir is None or source is None:
            return cls.disabled()
        import pydantic

        digest = hashlib.sha256(f"{CACHE_FORMAT}:{pydantic.VERSION}:{name}".encode())
        _stamp(Path(__file__).resolve().parent, digest)  # the host's own code shapes the schemas
        _stamp(source, digest)
        safe_name = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)
        return cls(cache_dir / f"{safe_name}-{digest.hexdigest()[:24]}.json")

    def get(self, key: str) -> dict[str, Any] | None:
        entry = self._entries.get(key)
        return entry if isinstance(entry, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        if self.path is not None:
            self._entries[key] = value
            self._changed = True

    def save(self) -> None:
        """Write new entries (atomically) and drop this plugin's stale cache files."""
        if self.path is None or not self._changed:
            return
        try:
            from hostd_fs import atomic_write

            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, json.dumps({"format": CACHE_FORMAT, "tools": self._entries}))
            prefix = self.path.name.rsplit("-", 1)[0] + "-"
            for old in self.path.parent.glob(f"{prefix}*.json"):
                if old != self.path and old.name[len(prefix) :].count("-") == 0:
                    old.unlink(missing_ok=True)
            self._changed = False
        except Exception as exc:  # a cache must never stop the server
            logger.debug("could not write the schema cache %s: %s", self.path, exc)
