"""The ``transport.oauth`` section: which identity provider signs members in, and what its tokens mean."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: Asymmetric JWS algorithms only: a shared-secret (HS*) or ``none`` algorithm would let anyone
#: holding the public key, or no key, mint tokens.
ASYMMETRIC_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class OAuthScopes(_Strict):
    """Scopes a token must carry: ``read`` for any request, ``write`` besides for a tool that writes."""

    read: list[str] = Field(default_factory=lambda: ["mcp:read"])
    write: list[str] = Field(default_factory=lambda: ["mcp:write"])


class IntrospectionConfig(_Strict):
    """RFC 7662 token introspection, for opaque (non-JWT) access tokens."""

    client_id: str = Field(description="the client hostd authenticates as at the introspection endpoint")
    client_secret_env: str = Field(
        description="environment variable holding that client's secret", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$"
    )
    endpoint: str | None = Field(
        default=None, description="default: introspection_endpoint from the issuer's metadata"
    )
    cache_seconds: float = Field(
        default=30.0, ge=0, le=600, description="how long an answer is reused (never beyond the token's exp)"
    )


class OAuthConfig(_Strict):
    """hostd as an OAuth 2.1 resource server (MCP authorization): members sign in at ``issuer``."""

    issuer: str = Field(description="the authorization server's issuer URL, exactly as in its tokens' iss")
    resource: str | None = Field(
        default=None,
        description="this server's canonical URL, as clients reach it (default: http://HOST:PORT/mcp; "
        "required on a non-loopback bind)",
    )
    audience: str | None = Field(default=None, description="the aud tokens must carry (default: resource)")
    member_claim: str = Field(default="sub", description="the claim holding the member name")
    scopes: OAuthScopes = Field(default_factory=OAuthScopes)
    profile_claim: str | None = Field(
        default=None, description="a claim naming the profile the member is limited to"
    )
    profile_scopes: dict[str, str] = Field(
        default_factory=dict, description="scope -> profile: a token carrying the scope is limited to it"
    )
    members_file: str | None = Field(
        default=None,
        description="YAML list (or mapping to profiles) of the members allowed in; omitted: anyone the "
        "issuer vouches for. Reloaded on change: a member removed is refused at once",
    )
    algorithms: list[str] = Field(
        default_factory=lambda: ["RS256", "PS256", "ES256", "EdDSA"],
        description="signature algorithms accepted (asymmetric only)",
    )
    leeway_seconds: float = Field(default=30.0, ge=0, le=300, description="clock skew allowed on exp/nbf/iat")
    require_at_jwt_type: bool = Field(
        default=True,
        description="require the RFC 9068 header typ at+jwt (an ID token is then no access token)",
    )
    jwks_refresh_seconds: float = Field(
        default=30.0, ge=1, le=3600, description="at most one key re-fetch per this many seconds"
    )
    introspection: IntrospectionConfig | None = None
    http_timeout_seconds: float = Field(default=5.0, gt=0, le=60)

    @field_validator("algorithms")
    @classmethod
    def _asymmetric_only(cls, value: list[str]) -> list[str]:
        wrong = [name for name in value if name not in ASYMMETRIC_ALGORITHMS]
        if wrong or not value:
            raise ValueError(
                f"only asymmetric algorithms are accepted ({', '.join(sorted(ASYMMETRIC_ALGORITHMS))}); "
                f"not {', '.join(wrong) or 'an empty list'}"
            )
        return value
