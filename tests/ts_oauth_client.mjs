// The TypeScript SDKs' own OAuth client code, driven step by step from a test
// (tests/ts_oauth.py): @modelcontextprotocol/sdk 1.32.2 ("v1") and
// @modelcontextprotocol/client 2.4.0 ("v2", with @modelcontextprotocol/core's schemas).
//
//   node ts_oauth_client.mjs <request.json>
//
// request: {sdk, action, ...}; prints one JSON line. State between runs (client
// information, PKCE verifier, discovery state, tokens) lives in request.stateFile,
// as a real client keeps it on disk.
//   action "schemas":   {documents: [url]} -> each document parsed with the SDK's
//                       OAuthMetadataSchema and OpenIdProviderDiscoveryMetadataSchema
//   action "auth":      {serverUrl, redirectUrl, code?, iss?, challenge?} -> what the
//                       SDK's transport does on a 401: read the challenge, then auth();
//                       challenge false: auth() alone, as an app that starts OAuth
//                       itself (a "Connect" button) before any MCP request
import { readFileSync, writeFileSync, existsSync } from 'node:fs';

const request = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const v1 = request.sdk === 'v1';
const client = v1
  ? await import('@modelcontextprotocol/sdk/client/auth.js')
  : await import('@modelcontextprotocol/client');
const schemas = v1
  ? await import('@modelcontextprotocol/sdk/shared/auth.js')
  : await import('@modelcontextprotocol/core');

function issues(result) {
  return result.success ? null : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
}

async function checkSchemas() {
  const checked = [];
  for (const url of request.documents) {
    const response = await fetch(url, { headers: { accept: 'application/json' } });
    const body = response.ok ? await response.json() : null;
    checked.push({
      url,
      status: response.status,
      oauth: body && issues(schemas.OAuthMetadataSchema.safeParse(body)),
      oidc: body && issues(schemas.OpenIdProviderDiscoveryMetadataSchema.safeParse(body)),
    });
  }
  return { checked };
}

async function runAuth() {
  const state = existsSync(request.stateFile) ? JSON.parse(readFileSync(request.stateFile, 'utf8')) : {};
  const out = {};
  const provider = {
    get redirectUrl() {
      return request.redirectUrl;
    },
    get clientMetadata() {
      return {
        client_name: `TypeScript SDK ${request.sdk}`,
        redirect_uris: [request.redirectUrl],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      };
    },
    state: () => 'ts-state',
    clientInformation: () => state.clientInformation,
    saveClientInformation: (info) => {
      state.clientInformation = info;
    },
    tokens: () => state.tokens,
    saveTokens: (tokens) => {
      state.tokens = tokens;
    },
    redirectToAuthorization: (url) => {
      out.authorizationUrl = url.href;
    },
    saveCodeVerifier: (verifier) => {
      state.codeVerifier = verifier;
    },
    codeVerifier: () => state.codeVerifier,
    discoveryState: () => state.discovery,
    saveDiscoveryState: (discovery) => {
      state.discovery = discovery;
    },
  };
  // As the SDK's Streamable HTTP transport does on a 401: the challenge names the
  // resource metadata and the scope, and auth() takes it from there.
  let resourceMetadataUrl;
  let scope;
  if (request.challenge !== false) {
    const challenge = await fetch(request.serverUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
    });
    ({ resourceMetadataUrl, scope } = client.extractWWWAuthenticateParams(challenge));
    out.challengeStatus = challenge.status;
  }
  out.result = await client.auth(provider, {
    serverUrl: request.serverUrl,
    resourceMetadataUrl,
    scope,
    ...(request.code ? { authorizationCode: request.code } : {}),
    ...(request.iss ? { iss: request.iss } : {}),
  });
  out.issuer = state.discovery?.authorizationServerMetadata?.issuer;
  out.tokens = state.tokens ?? null;
  writeFileSync(request.stateFile, JSON.stringify(state));
  return out;
}

try {
  const result = request.action === 'schemas' ? await checkSchemas() : await runAuth();
  console.log(JSON.stringify({ ok: true, ...result }));
} catch (error) {
  console.log(JSON.stringify({ ok: false, error: `${error?.name}: ${error?.message}` }));
}
