"""The dashboard: pages people read and correct what the plugins keep, in a browser.

``api`` is the plugin-facing contract (re-exported by ``hostd``); ``app`` the ASGI app mounted
at ``/ui``; ``signing`` the stateless cookies and CSRF tokens; ``serve`` the ``hostd web``
command; ``rendering`` the templates and Markdown; ``calls`` runs a plugin's tool for a page.
"""
