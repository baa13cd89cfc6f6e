"""The file a tool's export writes, chosen by the caller as ``output_path``.

One rule for every plugin that exports to a file: the path is resolved beneath the allowed roots
(missing folders are fine, the writers make them), and an existing file is kept unless the caller
passed ``overwrite=true``, refused with the same ``ALREADY_EXISTS`` answer wherever it is asked.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from hostd_errors import CodedError, Text

from hostd_fs.beneath import RootedPath, resolve_beneath

__all__ = ["output_target"]


def output_target(output_path: str, roots: Sequence[Path], *, overwrite: bool) -> RootedPath:
    """Where an export to ``output_path`` writes; ``ALREADY_EXISTS`` when a file is there and not
    ``overwrite`` (the one refusal the exporting tools share)."""
    target = resolve_beneath(output_path, roots, allow_missing=True, expect="file")
    if target.exists() and not overwrite:
        raise CodedError(
            "ALREADY_EXISTS",
            Text(en=f"{target} already exists.", zh=f"{target} 已存在。"),
            hint=Text(
                en="Pass overwrite=true to replace it, or choose another output_path.",
                zh="传入 overwrite=true 以覆盖，或换一个 output_path。",
            ),
            details={"argument": "output_path", "path": str(target)},
        )
    return target
