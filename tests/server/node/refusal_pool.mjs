// Refused requests, then valid ones, through the TypeScript MCP SDK on Node's own fetch
// (undici: one global connection pool per origin), as an application meets them: its
// first request has no token, an expired token is a wrong one.
//
//   node refusal_pool.mjs <mcp url> <valid token> <refusals> <valid every> <kinds>
//
// <kinds> is JSON, [[token or null, characters], ...], taken in turn: characters 0 is
// `connect` (initialize, a small body), otherwise a `tools/call` whose argument has that
// many characters, sent through the SDK's transport. After every <valid every> refusals
// a client connected once with the valid token lists the prompts (a light request).
// The SDK reads each refusal's body into its error: a 401 counts as whole when that body
// is the server's JSON refusal. Anything else a request ends with (a reset is `fetch
// failed` caused by ECONNRESET or UND_ERR_SOCKET, or a body cut short) is counted by its
// code. Prints one JSON line with the counts.

import dc from "node:diagnostics_channel";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [serverUrl, validToken, refusals, validEvery, kindsJson] = process.argv.slice(2);
const url = new URL(serverUrl);
const kinds = JSON.parse(kindsJson);
const counts = {
  refused: 0,
  whole401: 0,
  valid: 0,
  validOk: 0,
  connections: 0, // opened by undici's pool, as its diagnostics channel reports them
  failures: {},
  examples: [],
};
dc.subscribe("undici:client:connected", () => {
  counts.connections += 1;
});

function transport(token) {
  const headers = token === null ? {} : { authorization: `Bearer ${token}` };
  return new StreamableHTTPClientTransport(url, { requestInit: { headers } });
}

function failed(error) {
  const cause = error?.cause;
  const name = cause?.code ?? cause?.name ?? error?.code ?? error?.name ?? String(error);
  counts.failures[name] = (counts.failures[name] ?? 0) + 1;
  if (counts.examples.length < 5) {
    counts.examples.push(`${error?.message ?? error} (${cause?.message ?? "no cause"})`);
  }
}

function isWhole401(error) {
  return error?.code === 401 && /"code":\s*"unauthorized"/.test(error.message);
}

async function refused([token, characters], id) {
  const channel = transport(token);
  try {
    if (characters > 0) {
      await channel.start();
      await channel.send({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "save_context", arguments: { content: "x".repeat(characters) } },
      });
    } else {
      await new Client({ name: "refusal-pool", version: "1.0.0" }).connect(channel);
    }
    failed(new Error("the refused request was accepted"));
  } catch (error) {
    if (isWhole401(error)) counts.whole401 += 1;
    else failed(error);
  } finally {
    await channel.close().catch(() => {});
  }
}

const started = performance.now();
const valid = new Client({ name: "refusal-pool", version: "1.0.0" });
await valid.connect(transport(validToken));
for (let n = 0; n < Number(refusals); n += 1) {
  counts.refused += 1;
  await refused(kinds[n % kinds.length], n + 1);
  if (n % Number(validEvery) === Number(validEvery) - 1) {
    counts.valid += 1;
    try {
      const listed = await valid.listPrompts();
      if (listed.prompts.length > 0) counts.validOk += 1;
      else failed(new Error("no prompts listed"));
    } catch (error) {
      failed(error);
    }
  }
}
await valid.close();
counts.seconds = Math.round((performance.now() - started) / 100) / 10;
process.stdout.write(JSON.stringify(counts) + "\n");
