// Drives the TypeScript MCP SDK's own OAuth client against a MetaCortex URL, the way an
// app built on it (Claude Code, Cursor, the MCP Inspector) does: connect, get 401, let
// the SDK discover, register and build the authorization URL, finish with the code,
// then list tools, call tools, refresh on a 401, and race two refreshes.
//
//   node oauth_driver.mjs <v1|v2> <mcp url> <redirect uri>
//
// v1 is @modelcontextprotocol/sdk (1.x), v2 is @modelcontextprotocol/client (2.x).
// Protocol: one JSON object per line on stdout ({"event": ...}); the caller answers the
// single "authorize" event with one line on stdin: the full redirect URL the
// authorization server sent the browser to. Any later consent request is a failure
// ("reconsent"), reported and not waited for.

import { createInterface } from "node:readline";

const [flavour, serverUrl, redirectUrl] = process.argv.slice(2);

async function loadSdk() {
  if (flavour === "v1") {
    const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
    const { StreamableHTTPClientTransport } = await import(
      "@modelcontextprotocol/sdk/client/streamableHttp.js"
    );
    const { auth, UnauthorizedError } = await import("@modelcontextprotocol/sdk/client/auth.js");
    return { Client, StreamableHTTPClientTransport, auth, UnauthorizedError };
  }
  if (flavour === "v2") {
    return await import("@modelcontextprotocol/client");
  }
  throw new Error(`unknown SDK flavour ${flavour}`);
}

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + "\n");
}

const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

// The application's side of OAuthClientProvider: in-memory storage and the browser
// hand-off. Everything else (discovery, registration, PKCE, token requests, refresh)
// is the SDK's.
class MemoryProvider {
  constructor(data = {}) {
    this.data = structuredClone(data);
    this.interactive = Object.keys(data).length === 0;
  }
  get redirectUrl() {
    return redirectUrl;
  }
  get clientMetadata() {
    return {
      client_name: `MetaCortex connector matrix (${flavour})`,
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  state() {
    return this.data.oauthState ?? (this.data.oauthState = crypto.randomUUID());
  }
  clientInformation() {
    return this.data.client;
  }
  saveClientInformation(client) {
    this.data.client = client;
  }
  tokens() {
    return this.data.tokens;
  }
  saveTokens(tokens) {
    this.data.tokens = tokens;
    this.data.saved = (this.data.saved ?? 0) + 1;
  }
  saveCodeVerifier(verifier) {
    this.data.verifier = verifier;
  }
  codeVerifier() {
    return this.data.verifier;
  }
  saveDiscoveryState(discovery) {
    this.data.discovery = discovery;
  }
  discoveryState() {
    return this.data.discovery;
  }
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "tokens") delete this.data.tokens;
    if (scope === "all" || scope === "client") delete this.data.client;
    if (scope === "all" || scope === "verifier") delete this.data.verifier;
    if (scope === "all" || scope === "discovery") delete this.data.discovery;
  }
  redirectToAuthorization(url) {
    if (!this.interactive) {
      emit("reconsent", { url: url.toString() });
      throw new Error("the SDK asked for consent again instead of refreshing");
    }
    this.interactive = false;
    emit("authorize", { url: url.toString() });
  }
}

function summary(tokens) {
  return {
    has_access_token: Boolean(tokens?.access_token),
    has_refresh_token: Boolean(tokens?.refresh_token),
    scope: tokens?.scope ?? null,
  };
}

function failure(error) {
  return { name: error?.constructor?.name ?? "Error", message: String(error?.message ?? error) };
}

async function session(sdk, provider, work) {
  const transport = new sdk.StreamableHTTPClientTransport(new URL(serverUrl), {
    authProvider: provider,
  });
  const client = new sdk.Client({ name: "metacortex-connector-matrix", version: "1.0.0" });
  await client.connect(transport);
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

function text(result) {
  return (result.content ?? []).map((item) => item.text ?? "").join("\n");
}

async function main() {
  const sdk = await loadSdk();
  const provider = new MemoryProvider();
  let step = "discovery";
  try {
    // 1. Connect without a token: 401, then the SDK discovers, registers and asks
    //    the application to open the authorization URL.
    const transport = new sdk.StreamableHTTPClientTransport(new URL(serverUrl), {
      authProvider: provider,
    });
    const client = new sdk.Client({ name: "metacortex-connector-matrix", version: "1.0.0" });
    try {
      await client.connect(transport);
      throw new Error("connected without authorization");
    } catch (error) {
      if (!(error instanceof sdk.UnauthorizedError)) throw error;
    }
    emit("registered", { client_id: provider.data.client?.client_id ?? null });

    // 2. The browser comes back to the redirect URI; the SDK exchanges the code.
    step = "token";
    const { value: callback } = await lines.next();
    const landed = new URL(callback.trim());
    const code = landed.searchParams.get("code");
    if (!code) throw new Error(`no code in the redirect: ${landed.search}`);
    if (landed.searchParams.get("state") !== provider.data.oauthState) {
      throw new Error("the redirect carried another state");
    }
    if (flavour === "v2") await transport.finishAuth(code, landed.searchParams.get("iss") ?? undefined);
    else await transport.finishAuth(code);
    emit("token", summary(provider.tokens()));

    // 3. tools/list and tool calls on a fresh connection with the access token.
    step = "tools";
    await session(sdk, provider, async (mcp) => {
      const { tools } = await mcp.listTools();
      emit("tools", { names: tools.map((tool) => tool.name) });
      const saved = await mcp.callTool({
        name: "save_context",
        arguments: { content: `The ${flavour} TypeScript SDK connected through OAuth.` },
      });
      emit("save", { is_error: Boolean(saved.isError), text: text(saved) });
      const found = await mcp.callTool({
        name: "search_context",
        arguments: { query: "TypeScript SDK connected" },
      });
      emit("search", { is_error: Boolean(found.isError), text: text(found) });
    });

    // 4. The access token stops working (expired, revoked by age): the transport gets
    //    401 and the SDK refreshes, then retries.
    step = "refresh";
    const before = provider.tokens();
    provider.data.tokens = { ...before, access_token: "expired-access-token" };
    await session(sdk, provider, async (mcp) => {
      const found = await mcp.callTool({
        name: "search_context",
        arguments: { query: "TypeScript SDK" },
      });
      emit("refresh", {
        is_error: Boolean(found.isError),
        refreshed: provider.tokens()?.access_token !== before.access_token,
        rotated: provider.tokens()?.refresh_token !== before.refresh_token,
        ...summary(provider.tokens()),
      });
    });

    // 5. Two refreshes race with one refresh token (two windows, two workers): each
    //    copy of the connector runs the SDK's auth(), then uses what it got.
    step = "race";
    const copies = [new MemoryProvider(provider.data), new MemoryProvider(provider.data)];
    const outcomes = await Promise.allSettled(
      copies.map((copy) => sdk.auth(copy, { serverUrl: new URL(serverUrl) })),
    );
    emit("race", {
      outcomes: outcomes.map((o) =>
        o.status === "fulfilled" ? { result: o.value } : { error: failure(o.reason) },
      ),
    });
    for (const [index, copy] of copies.entries()) {
      try {
        await session(sdk, copy, async (mcp) => {
          const found = await mcp.callTool({
            name: "search_context",
            arguments: { query: "TypeScript SDK" },
          });
          emit("after_race", { copy: index, is_error: Boolean(found.isError) });
        });
        const again = await sdk.auth(copy, { serverUrl: new URL(serverUrl) });
        emit("refresh_after_race", { copy: index, result: again });
      } catch (error) {
        emit("after_race", { copy: index, error: failure(error) });
      }
    }
    emit("done");
  } catch (error) {
    emit("error", { step, ...failure(error) });
    process.exitCode = 1;
  } finally {
    process.stdin.destroy();
  }
}

await main();
