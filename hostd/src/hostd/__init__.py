"""hostd: a small MCP host that serves tools from pluggy plugins.

The plugin API is what this module exports (the names of ``hostd.api``) plus ``hostd.paging``.
It is typed (``py.typed``), and within a minor version it only grows: a name, a parameter or a
field is added, never removed, renamed or retyped (depend on ``hostd>=0.2,<0.3``). Everything
else in ``hostd`` is the host's own business and may change in any release.
"""

from hostd import api
from hostd.api import *  # noqa: F403  (the names are listed once, in ``hostd.api.__all__``)

# Built in the forms the typing spec lists for ``__all__`` (a plain ``= api.__all__`` is not one).
__all__: list[str] = []
__all__ += api.__all__
