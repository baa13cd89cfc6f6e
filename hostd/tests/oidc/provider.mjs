// A real OpenID provider for the OAuth tests: `oidc-provider` (npm), with resource indicators
// (RFC 8707) and JWT access tokens (RFC 9068). Started by oauth_support.py with a settings file:
// {port, jwks (private keys, the first signs), clients, opaque: [resources given opaque tokens]}.
// Login and consent use the package's development interactions (plain HTML forms at
// /interaction/:uid), which the tests submit with plain HTTP requests.
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

const { default: Provider } = await import(pathToFileURL(process.env.OIDC_PROVIDER_MODULE).href);
const settings = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const issuer = `http://127.0.0.1:${settings.port}`;
const opaque = new Set(settings.opaque ?? []);

const provider = new Provider(issuer, {
  jwks: settings.jwks,
  clients: settings.clients ?? [],
  cookies: { keys: ['hostd-tests-only-cookie-key'] },
  pkce: { required: () => true },
  scopes: ['openid', 'offline_access', 'mcp:read', 'mcp:write'],
  features: {
    devInteractions: { enabled: true },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: (ctx, client, oneOf) => oneOf,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, resourceIndicator) => ({
        scope: 'mcp:read mcp:write',
        audience: resourceIndicator,
        accessTokenTTL: 300,
        accessTokenFormat: opaque.has(resourceIndicator) ? 'opaque' : 'jwt',
        jwt: { sign: { alg: 'RS256' } },
      }),
    },
  },
  // The member name hostd reads (transport.oauth.member_claim: preferred_username).
  extraTokenClaims: (ctx, token) => ({ preferred_username: token.accountId ?? token.clientId }),
});

const server = provider.listen(settings.port, '127.0.0.1', () => {
  process.stdout.write(`ready ${issuer}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
