"""Make a plugin module discoverable by entry point without installing it.

``importlib.metadata`` finds distributions through ``*.dist-info`` folders on ``sys.path``,
so a folder holding a module and a minimal dist-info is a real install for a subprocess
whose ``PYTHONPATH`` includes it: the host's normal entry-point loading, no test-only path.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path


def install_plugin_source(folder: Path, *, entry_point: str, module: str, source: str) -> Path:
    """Write ``module.py`` and a dist-info declaring entry point ``entry_point`` in group ``hostd``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    dist = folder / f"{module}-0.0.0.dist-info"
    dist.mkdir(exist_ok=True)
    (dist / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.0.0\n", encoding="utf-8"
    )
    (dist / "entry_points.txt").write_text(f"[hostd]\n{entry_point} = {module}\n", encoding="utf-8")
    return folder


def pythonpath_with(folder: Path) -> dict[str, str]:
    """Environment entries that put ``folder`` first on a subprocess's ``sys.path``."""
    existing = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": str(folder) + (os.pathsep + existing if existing else "")}
