// OAuth discovery as the official TypeScript SDK's client does it
// (@modelcontextprotocol/sdk/client/auth.js), driven by
// e2e/mcp_discovery_interop_test.go against `delegate mcp --addr`: what a
// host on the SDK learns from the server's 401 and its metadata (RFC 9728,
// RFC 8414 / OpenID discovery), in the default mode (--tokens: no
// authorization server) and in OAuth mode (--issuer).
//
// Usage: node discovery.mjs, with the parameters as one JSON object in the
// environment variable MCP_INTEROP:
//
//   url            the Streamable HTTP endpoint (the resource)
//   issuer         OAuth mode: the issuer the metadata must name; absent in
//                  the default mode, where it must name none
//   client_id, client_secret
//                  OAuth mode: a client of the issuer (client_credentials):
//                  the SDK's ClientCredentialsProvider gets a token through
//                  the discovery and the session calls call with it
//   call           OAuth mode: {tool, arguments}, called once connected
//   timeout_ms     the whole run's deadline (default 60000)
//
// Each step prints one JSON line on stdout ({"step": ..., ...}); the last
// is {"step":"ok"}, or {"step":"fail","error":...} (exit 1) when what the
// SDK found is not what the mode promises.

import {
  discoverOAuthProtectedResourceMetadata,
  discoverOAuthServerInfo,
  extractWWWAuthenticateParams,
  selectResourceURL,
} from '@modelcontextprotocol/sdk/client/auth.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const p = JSON.parse(process.env.MCP_INTEROP ?? '{}');
const oauth = typeof p.issuer === 'string';

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

class Unexpected extends Error {}

function expect(cond, msg) {
  if (!cond) throw new Unexpected(msg);
}

// Every URL the SDK fetched, in order, with the status it got.
const fetched = [];
async function loggingFetch(input, init) {
  const res = await fetch(input, init);
  fetched.push(`${init?.method ?? 'GET'} ${String(input instanceof Request ? input.url : input)} ${res.status}`);
  return res;
}

// A request as a host sends its first one: initialize, with the given
// Authorization (none: undefined).
async function post(authorization) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': LATEST_PROTOCOL_VERSION };
  if (authorization) headers.Authorization = authorization;
  return fetch(p.url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'delegate-interop-discovery', version: '0.0.0' } } }),
  });
}

async function main() {
  const url = new URL(p.url);

  // 1. The 401 names the metadata (RFC 9728 §5.1): without a token, and
  // with one that does not pass (then with error="invalid_token", RFC 6750).
  const challenges = {};
  for (const [name, authorization] of [['no-token', undefined], ['bad-token', 'Bearer not-a-token-of-this-server']]) {
    const res = await post(authorization);
    await res.body?.cancel();
    const params = extractWWWAuthenticateParams(res);
    challenges[name] = params;
    emit({ step: 'challenge', token: name, status: res.status, www_authenticate: res.headers.get('www-authenticate'),
      resource_metadata: params.resourceMetadataUrl?.href ?? null, error: params.error ?? null });
    expect(res.status === 401, `${name}: HTTP ${res.status}, want 401`);
    expect(params.resourceMetadataUrl, `${name}: the 401's WWW-Authenticate names no resource_metadata the SDK can read`);
  }
  expect(challenges['no-token'].error === undefined, `no token: error="${challenges['no-token'].error}", want none (RFC 6750 §3.1)`);
  expect(challenges['bad-token'].error === 'invalid_token', `a bad token: error="${challenges['bad-token'].error}", want invalid_token`);
  const metadataUrl = challenges['no-token'].resourceMetadataUrl;

  // 2. The metadata the 401 points at, and the one the SDK finds by itself
  // (path-aware well-known URL first, RFC 9728 §3.1).
  const byHint = await discoverOAuthProtectedResourceMetadata(url, { resourceMetadataUrl: metadataUrl }, loggingFetch);
  const byProbe = await discoverOAuthProtectedResourceMetadata(url, undefined, loggingFetch);
  emit({ step: 'resource-metadata', metadata_url: metadataUrl.href, metadata: byHint, probed: byProbe });
  for (const [how, md] of [['from the 401', byHint], ['by the well-known URL', byProbe]]) {
    expect(md.resource === p.url, `metadata ${how}: resource ${md.resource}, want ${p.url}`);
    if (oauth) {
      expect(JSON.stringify(md.authorization_servers) === JSON.stringify([p.issuer]),
        `metadata ${how}: authorization_servers ${JSON.stringify(md.authorization_servers)}, want [${p.issuer}]`);
    } else {
      expect(md.authorization_servers === undefined,
        `metadata ${how}: authorization_servers ${JSON.stringify(md.authorization_servers)}, want none (no issuer)`);
    }
  }
  // The RFC 8707 resource the SDK would ask a token for.
  const resource = await selectResourceURL(url, {}, byHint);
  emit({ step: 'resource-indicator', resource: resource?.href ?? null });
  expect(resource?.href === p.url, `the SDK's resource indicator is ${resource?.href}, want ${p.url}`);

  // 3. The authorization server: the one the metadata names, and its own
  // metadata (RFC 8414, else OpenID discovery). Without one the SDK falls
  // back to the MCP server's origin (the 2025-03-26 rule), which serves no
  // authorization server metadata: nothing to ask a token of.
  const info = await discoverOAuthServerInfo(url, { resourceMetadataUrl: metadataUrl, fetchFn: loggingFetch });
  emit({ step: 'authorization-server', authorization_server: info.authorizationServerUrl, metadata: info.authorizationServerMetadata ?? null });
  if (oauth) {
    expect(info.authorizationServerUrl === p.issuer, `authorization server ${info.authorizationServerUrl}, want ${p.issuer}`);
    const md = info.authorizationServerMetadata;
    expect(md, `no metadata found for the issuer ${p.issuer}`);
    expect(md.issuer === p.issuer, `the issuer's metadata says issuer ${md.issuer}, want ${p.issuer}`);
    expect(typeof md.token_endpoint === 'string', `the issuer's metadata has no token_endpoint`);
  } else {
    expect(info.authorizationServerUrl === `${url.origin}/`, `authorization server ${info.authorizationServerUrl}, want the SDK's fallback ${url.origin}/`);
    expect(info.authorizationServerMetadata === undefined, `authorization server metadata found at ${url.origin}: ${JSON.stringify(info.authorizationServerMetadata)}`);
  }

  // 4. OAuth mode: what a host does with all this. The transport meets the
  // 401, runs the SDK's auth() (the discovery above, then the token
  // endpoint with resource = the metadata's resource) and retries.
  if (oauth && p.client_id) {
    let issued = null;
    const provider = new ClientCredentialsProvider({ clientId: p.client_id, clientSecret: p.client_secret, expectedIssuer: p.issuer });
    const save = provider.saveTokens.bind(provider);
    provider.saveTokens = (tokens) => {
      const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url').toString());
      issued = { aud: [claims.aud].flat(), sub: claims.sub, iss: claims.iss };
      emit({ step: 'token', ...issued });
      return save(tokens);
    };
    const transport = new StreamableHTTPClientTransport(url, { authProvider: provider, fetch: loggingFetch });
    const client = new Client({ name: 'delegate-interop-discovery', version: '0.0.0' });
    await client.connect(transport);
    emit({ step: 'initialized', server: client.getServerVersion()?.name ?? null });
    expect(issued, 'connected without the SDK asking the issuer for a token');
    expect(issued.aud.includes(p.url), `the token's aud ${JSON.stringify(issued.aud)} does not hold the resource ${p.url} (RFC 8707)`);
    const tools = await client.listTools();
    emit({ step: 'tools', tools: tools.tools.map((t) => t.name) });
    if (p.call) {
      const res = await client.callTool({ name: p.call.tool, arguments: p.call.arguments ?? {} });
      emit({ step: 'called', tool: p.call.tool, isError: res.isError ?? false, structuredContent: res.structuredContent ?? null });
      expect(!res.isError, `${p.call.tool}: ${JSON.stringify(res.content)}`);
    }
    await transport.terminateSession().catch(() => {});
    await client.close();
  }
  emit({ step: 'fetched', urls: fetched });
}

const timer = setTimeout(() => {
  emit({ step: 'fail', error: `timed out after ${p.timeout_ms ?? 60000} ms`, fetched });
  process.exit(1);
}, p.timeout_ms ?? 60000);
main().then(
  () => {
    clearTimeout(timer);
    emit({ step: 'ok' });
  },
  (err) => {
    clearTimeout(timer);
    emit({ step: 'fail', error: err instanceof Unexpected ? err.message : String(err?.stack ?? err), fetched });
    process.exit(1);
  },
);
