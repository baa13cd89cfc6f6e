"""What the HTTP guard says as a resource server: the protected resource metadata (RFC 9728), the
``WWW-Authenticate`` challenges of a 401 / 403, and whether a request's token has the scopes it needs.

A request needs the ``read`` scopes; a ``tools/call`` of a ``write`` tool (its access class, as
the access policy reads it) needs the ``write`` scopes too. A token without them gets 403
``insufficient_scope`` naming the scopes, so a client can ask its user for more (MCP's step-up
authorization).
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hostd.core.errors import HostError
from hostd.core.oauth_settings import OAuthConfig
from hostd.team.auth.verifier import Admitted, TokenRefused, TokenVerifier

if TYPE_CHECKING:
    from starlette.types import Receive, Scope, Send

    from hostd.core.access import AccessPolicy
    from hostd.core.identity import Member

logger = logging.getLogger("hostd.auth")

METADATA_PATH = "/.well-known/oauth-protected-resource"

#: A refusal: status, text/plain reason, extra headers.
Refusal = tuple[int, str, dict[str, str]]


def metadata_url_for(resource: str) -> str:
    """RFC 9728 §3.1: the well-known path goes between the host and the resource's path."""
    parts = urlsplit(resource)
    path = parts.path if parts.path != "/" else ""
    return f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{path}"


class ResourceServer:
    """hostd's side of MCP authorization for one HTTP bind."""

    def __init__(
        self,
        config: OAuthConfig,
        *,
        host: str,
        port: int,
        loopback: bool,
        known_profiles: Collection[str] = (),
    ) -> None:
        if config.resource is None and not loopback:
            raise HostError(
                f"refusing to listen on {host} with transport.oauth: set transport.oauth.resource to the URL "
                "clients reach this server at (e.g. https://mcp.example.internal/mcp): tokens name it"
            )
        self.config = config
        self.resource = config.resource or f"http://{host}:{port}/mcp"
        self.audience = config.audience or self.resource
        self.metadata_url = metadata_url_for(self.resource)
        self.metadata_paths = frozenset({METADATA_PATH, urlsplit(self.metadata_url).path})
        self.verifier = TokenVerifier(config, self.audience, known_profiles)
        self.read_scopes = list(config.scopes.read)
        self.all_scopes = list(dict.fromkeys([*config.scopes.read, *config.scopes.write]))

    def metadata(self) -> dict[str, object]:
        from mcp.shared.auth import ProtectedResourceMetadata
        from pydantic import AnyHttpUrl

        document = ProtectedResourceMetadata(
            resource=AnyHttpUrl(self.resource),
            authorization_servers=[AnyHttpUrl(self.config.issuer)],
            scopes_supported=self.all_scopes,
            bearer_methods_supported=["header"],
            resource_name="hostd",
        )
        dumped = document.model_dump(mode="json", exclude_none=True)
        # Exactly as configured: a URL type would add a "/" to a bare origin, and clients compare
        # the issuer in the provider's metadata with this string as it is (RFC 8414 §3.3).
        dumped["authorization_servers"] = [self.config.issuer]
        dumped["resource"] = self.resource
        return dumped

    async def serve_metadata(self, scope: Scope, receive: Receive, send: Send) -> None:
        """GET the metadata (no token needed: it is what a client reads to learn how to get one)."""
        from starlette.responses import JSONResponse, Response

        cors = {"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Methods": "GET, OPTIONS"}
        response: Response
        if scope["method"] == "OPTIONS":
            response = Response(status_code=204, headers={**cors, "Access-Control-Allow-Headers": "*"})
        elif scope["method"] in ("GET", "HEAD"):
            response = JSONResponse(self.metadata(), headers={**cors, "Cache-Control": "max-age=300"})
        else:
            response = Response(status_code=405, headers={"Allow": "GET, OPTIONS"})
        await response(scope, receive, send)

    def challenge(self, *, error: str | None = None, scopes: Collection[str] | None = None) -> dict[str, str]:
        parts = []
        if error is not None:
            parts.append(f'error="{error}"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        parts.append(f'scope="{" ".join(scopes if scopes is not None else self.all_scopes)}"')
        return {"WWW-Authenticate": "Bearer " + ", ".join(parts)}

    def unauthorized(self, reason: str, *, presented: bool) -> Refusal:
        return 401, reason, self.challenge(error="invalid_token" if presented else None)

    async def authenticate(self, token: str | None, reason: str) -> tuple[Admitted | None, Refusal | None]:
        """The signed-in member, or the 401 to answer (``reason``: the text a person reads)."""
        if not token:
            return None, self.unauthorized(reason, presented=False)
        try:
            return await self.verifier.verify(token), None
        except TokenRefused as exc:
            logger.info("access token refused: %s", exc)
            return None, self.unauthorized(reason, presented=True)
        except Exception:  # a defect here must refuse the request, never let it through
            logger.exception("access token check failed")
            return None, self.unauthorized(reason, presented=True)

    def scope_refusal(
        self, member: Member, access: AccessPolicy, body: bytes, forbidden: str
    ) -> tuple[Refusal, str] | None:
        """403 ``insufficient_scope`` when the token lacks what this request needs, with the tool
        it was refused for (``-`` when the read scopes are missing); ``None`` when it may pass.

        Every request needs the read scopes; a ``tools/call`` needs what the access policy says
        the tool needs. The call is read from the body as the SDK reads it (``called_tools``), so
        no spelling of the method that the SDK would run can pass for another.
        """
        scopes = member.scopes or frozenset()
        needed = [scope for scope in access.read_scopes if scope not in scopes]
        tool = "-"
        if not needed and not set(access.write_scopes) <= scopes:
            for called in called_tools(body):
                refusal = access.check(member, called)
                if refusal is not None and refusal.reason == "missing_scope":
                    needed, tool = list(refusal.scopes), called
                    break
        if not needed:
            return None
        logger.info("member %s lacks scope(s) %s", member.name, " ".join(needed))
        wanted = sorted(scopes | set(needed))
        return (403, forbidden, self.challenge(error="insufficient_scope", scopes=wanted)), tool


def called_tools(body: bytes) -> list[str]:
    """The tools a request body calls, parsed exactly as the SDK's transports parse it (JSON, then
    the JSON-RPC message model): escapes in the method's spelling are decoded before it is read.
    A body the SDK would refuse calls nothing."""
    import mcp_types as types
    import pydantic_core
    from pydantic import ValidationError

    try:
        raw = pydantic_core.from_json(body)
    except ValueError:
        return []
    items = raw if isinstance(raw, list) else [raw]
    called = []
    for item in items:
        try:
            message = types.jsonrpc_message_adapter.validate_python(item, by_name=False)
        except ValidationError:
            continue
        if isinstance(message, types.JSONRPCRequest) and message.method == "tools/call":
            params = message.params or {}
            name = params.get("name")
            called.append(name if isinstance(name, str) else "")
    return called
