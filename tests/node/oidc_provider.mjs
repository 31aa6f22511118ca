// A real OAuth 2.1 / OpenID authorization server for the tests: panva's oidc-provider on a loopback port, configured
// by the JSON the test passes as the first argument (tests/common/oidc.rs writes it). Prints one line to stdout when
// it listens, `{"issuer":"http://127.0.0.1:PORT"}`, and logs to stderr.
//
// Configuration (every key optional):
//   port              0 (a free one) or a fixed port
//   scopes            the scopes it knows, e.g. ["openid", "offline_access", "books:read", "books:write"]
//   clients           oidc-provider client metadata, as is; harness-only properties a client may carry:
//                     access_token_ttl (seconds), access_token_alg ("RS256" or "ES256"), access_token_format
//                     ("jwt" or "opaque") for the access tokens it gets
//   resources         {"<resource indicator>": {scope, audience, access_token_ttl, access_token_alg,
//                     access_token_format}}; a resource not listed is accepted too, with every scope that is not
//                     openid or offline_access
//   access_token_ttl  seconds (default 3600)
//   account           the account the auto-approved login signs in (default "harness-user")
//   jwks              {"keys": [...]} private signing keys; default one RSA (RS256) and one EC P-256 (ES256) key
//   dpop              true: DPoP (RFC 9449) at the token endpoint, listed in the metadata
//                     (dpop_signing_alg_values_supported), and access tokens bound to the proof's key (cnf.jkt) when
//                     the token request carries a proof; off unless set (oidc-provider 9 turns it on by default), so
//                     a client that does DPoP where both servers offer it keeps to bearer tokens in the other tests
//
// Around the provider, on the same port, what a test needs of it and that no client would ask of a real server:
//   GET  /interaction/:uid   finishes the login or consent prompt oidc-provider sends the user-agent to (the
//                            account above; every scope and resource asked for is granted), so a user-agent that
//                            follows redirects ends at the client's redirect URI; ?decision=deny refuses instead
//   POST /__harness/rotate   new signing keys (generated, or the body's "jwks"); {"retain": true} keeps the old
//                            ones published after the new; answers {"kids": [...]}
//   GET  /__harness/stats    {"jwks_requests": N, "requests": {"/token": N, ...}, "grants": {"refresh_token": N,
//                            ...}}: requests by path, not counting those with an x-harness-uncounted header, and
//                            the token endpoint's successful grants by grant_type
//
// Rotation builds a new Provider with the new keystore and serves it from then on (a Provider's keystore is fixed at
// construction); every Provider shares one in-memory store, so clients registered, grants, sessions and interactions
// carry over, and the cookie keys are the same.

import * as crypto from 'node:crypto';
import * as http from 'node:http';

import Provider, { errors } from 'oidc-provider';
// The store of oidc-provider's in-memory adapter, made once and shared by the providers of every key rotation
// (each Provider makes a store of its own otherwise). A path inside the package: its version is pinned.
import { createMemoryAdapter } from 'oidc-provider/lib/adapters/memory_adapter.js';

// stdout holds the ready line alone: oidc-provider's notices (console.info) go to stderr with the rest.
console.log = console.error;
console.info = console.error;

const config = JSON.parse(process.argv[2] ?? process.env.OIDC_HARNESS_CONFIG ?? '{}');
const scopes = config.scopes ?? ['openid', 'offline_access'];
const resourceScope = scopes.filter((s) => s !== 'openid' && s !== 'offline_access').join(' ');
const account = config.account ?? 'harness-user';
const cookieKeys = [crypto.randomBytes(32).toString('base64url')];

function generateKeys() {
  const rsa = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const ec = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' });
  const kid = () => crypto.randomBytes(8).toString('hex');
  return [
    { ...rsa, alg: 'RS256', use: 'sig', kid: `rs256-${kid()}` },
    { ...ec, alg: 'ES256', use: 'sig', kid: `es256-${kid()}` },
  ];
}

let keys = config.jwks?.keys ?? generateKeys();
const adapter = createMemoryAdapter();
// Requests by path, but for the harness's own (those with x-harness-uncounted, and /__harness/).
const requests = {};
// Successful token requests by grant_type (authorization_code, refresh_token, client_credentials), all providers'.
const grants = {};

// What a client's or a resource's harness-only settings make of the access tokens issued to it for a resource.
async function getResourceServerInfo(ctx, indicator, client) {
  const resource = config.resources?.[indicator] ?? {};
  let url;
  try {
    url = new URL(indicator);
  } catch {
    throw new errors.InvalidTarget('the resource indicator must be an absolute URI');
  }
  if (url.hash) throw new errors.InvalidTarget('the resource indicator must not have a fragment');
  const setting = (name) => client?.[name] ?? resource[name];
  return {
    scope: resource.scope ?? resourceScope,
    audience: resource.audience ?? indicator,
    accessTokenTTL: setting('access_token_ttl') ?? config.access_token_ttl ?? 3600,
    accessTokenFormat: setting('access_token_format') ?? 'jwt',
    jwt: { sign: { alg: setting('access_token_alg') ?? 'RS256' } },
  };
}

function makeProvider(issuer) {
  const provider = new Provider(issuer, {
    adapter,
    clients: config.clients ?? [],
    scopes,
    jwks: { keys },
    cookies: { keys: cookieKeys },
    extraClientMetadata: { properties: ['access_token_ttl', 'access_token_alg', 'access_token_format'] },
    features: {
      devInteractions: { enabled: false },
      dPoP: { enabled: config.dpop === true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        // oidc-provider's defaults, spelled out. A token request that names no resource gets a token for the one
        // resource its grant has when the scope has no openid; with openid, an opaque token for userinfo.
        defaultResource: async (ctx, client, oneOf) => oneOf,
        useGrantedResource: async () => false,
        getResourceServerInfo,
      },
    },
    // OAuth 2.1: no implicit flow.
    responseTypes: ['code'],
    // OAuth 2.1: PKCE for every client of the code flow, confidential ones too (the default asks it of public ones).
    pkce: { required: () => true },
    ttl: {
      AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL ?? config.access_token_ttl ?? 3600,
      ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL ?? config.access_token_ttl ?? 3600,
      // About oidc-provider's default lengths, set so that it does not warn about them.
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 3600,
      RefreshToken: 14 * 24 * 3600,
      Session: 14 * 24 * 3600,
      Grant: 14 * 24 * 3600,
    },
    // A refresh token for every client allowed the grant, as OAuth 2.1 servers do; oidc-provider's default gives
    // one only for offline_access, which it drops unless the request also says prompt=consent (OpenID Core 11).
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(ctx, sub) {
      return { accountId: sub, claims: async () => ({ sub }) };
    },
  });
  provider.on('grant.success', (ctx) => {
    const type = ctx.oidc.params.grant_type;
    grants[type] = (grants[type] ?? 0) + 1;
  });
  provider.on('server_error', (ctx, error) => console.error(`oidc-provider server_error: ${error.stack}`));
  return provider;
}

// Finishes whichever prompt oidc-provider asks for: login with the fixed account, consent with every scope, claim
// and resource scope the request is missing; or, with ?decision=deny, refuses it (access_denied).
async function interact(provider, req, res, deny) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session, grantId } = details;
  console.error(`harness: interaction ${details.uid}: ${prompt.name} (${prompt.reasons.join(', ')}): ${deny ? 'denied' : 'approved'}`);
  let result;
  if (deny) {
    result = { error: 'access_denied', error_description: 'the harness user denied the request' };
  } else if (prompt.name === 'login') {
    result = { login: { accountId: account } };
  } else if (prompt.name === 'consent') {
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    for (const [indicator, wanted] of Object.entries(missing.missingResourceScopes ?? {})) {
      grant.addResourceScope(indicator, wanted.join(' '));
    }
    result = { consent: { grantId: await grant.save() } };
  } else {
    throw new Error(`the harness cannot finish the ${prompt.name} prompt`);
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function sendJson(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

let provider;
let serve;

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://harness');
  const { pathname } = url;
  try {
    if (!req.headers['x-harness-uncounted'] && !pathname.startsWith('/__harness/')) {
      requests[pathname] = (requests[pathname] ?? 0) + 1;
    }
    if (pathname === '/__harness/stats' && req.method === 'GET') {
      return sendJson(res, 200, { jwks_requests: requests['/jwks'] ?? 0, requests, grants });
    }
    if (pathname === '/__harness/rotate' && req.method === 'POST') {
      const body = JSON.parse((await readBody(req)) || '{}');
      const fresh = body.jwks?.keys ?? generateKeys();
      keys = body.retain ? [...fresh, ...keys] : fresh;
      provider = makeProvider(provider.issuer);
      serve = provider.callback();
      return sendJson(res, 200, { kids: keys.map((k) => k.kid) });
    }
    if (pathname.startsWith('/interaction/') && req.method === 'GET') {
      return await interact(provider, req, res, url.searchParams.get('decision') === 'deny');
    }
    return serve(req, res);
  } catch (error) {
    console.error(`harness: ${req.method} ${req.url}: ${error.stack ?? error}`);
    if (!res.headersSent) sendJson(res, 500, { error: 'harness_error', error_description: String(error) });
    else res.end();
  }
});

server.listen(config.port ?? 0, '127.0.0.1', async () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  provider = makeProvider(issuer);
  serve = provider.callback();
  // oidc-provider checks a configured client's metadata when the client is first used: check each now, so that a
  // test with a client it refuses fails at the start, with the reason.
  for (const { client_id: id } of config.clients ?? []) {
    try {
      await provider.Client.find(id);
    } catch (error) {
      console.error(`harness: client ${id}: ${error.error_description ?? error.message}`);
      process.exit(1);
    }
  }
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});

// The test's end of stdin closing means the test is gone (the harness also kills the process on drop).
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
