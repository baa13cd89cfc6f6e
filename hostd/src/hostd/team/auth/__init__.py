"""Signing members in with the team's identity provider: hostd as an OAuth 2.1 resource server.

- ``settings``: the ``transport.oauth`` section.
- ``keys``: the issuer's metadata and signing keys (JWKS), cached, re-fetched on an unknown key id.
- ``verifier``: an access token in, a ``Member`` (and its scopes) out, or why it is refused.
- ``resource``: what the HTTP guard answers: protected resource metadata (RFC 9728), 401/403
  with ``WWW-Authenticate``, and the scope a request needs.

Nothing here implements cryptography: signatures and claims are checked by PyJWT (with
``cryptography``).
"""
