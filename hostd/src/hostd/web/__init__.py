"""The dashboard: pages people read and correct what the plugins keep, in a browser.

``app`` is the ASGI app mounted at ``/ui``; ``signing`` the stateless cookies and CSRF tokens;
``serve`` the ``hostd web`` command; ``rendering`` the templates and Markdown. The plugin-facing
contract is ``hostd.core.view_api`` (re-exported by ``hostd``). A page's calls go through the
host's call pipeline (``hostd.core.pipeline``), as every surface's do.
"""
