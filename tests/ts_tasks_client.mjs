// The official TypeScript client (@modelcontextprotocol/client 2.x, pinned to the 2026-07-28
// revision) with the official tasks extension requester (@modelcontextprotocol/ext-tasks) against
// two stateless hostd replicas. Run by test_call_tasks_ts.py, which reads the JSON printed last.
//
// ext-tasks needs, for a 2026-07-28 server, a "raw dispatch" of the host's own (the SDK's wire
// codec does not carry the task shapes): here a POST per request, alternating between the two
// replicas, so a task made on one is polled and cancelled on the other.
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.NODE_PATH;
const load = (file) => import(pathToFileURL(path.join(modules, file)).href);
const { Client, StreamableHTTPClientTransport } = await load("@modelcontextprotocol/client/dist/index.mjs");
const { createTaskSessionFromClient, resultFromTaskOutcome } = await load(
  "@modelcontextprotocol/ext-tasks/dist/client/index.js",
);

const setup = JSON.parse(process.argv[2]);
const PROTOCOL = "2026-07-28";
const info = { name: "hostd-ts-tasks", version: "1.0.0" };
const report = { steps: [] };

async function connect(token) {
  const client = new Client(info, { versionNegotiation: { mode: { pin: PROTOCOL } } });
  const transport = new StreamableHTTPClientTransport(new URL(setup.urls[0]), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  await client.connect(transport);
  return client;
}

let turn = 0;
let nextId = 1;
function rawDispatchFor(token, replicas) {
  return async (request) => {
    const url = replicas[turn++ % replicas.length];
    const headers = {
      Authorization: `Bearer ${token}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
      "MCP-Protocol-Version": PROTOCOL,
      "Mcp-Method": request.method,
    };
    const params = request.params ?? {};
    if (typeof params.taskId === "string") headers["Mcp-Name"] = params.taskId;
    else if (request.method === "tools/call") headers["Mcp-Name"] = params.name;
    const response = await fetch(url, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: nextId++, ...request }),
    });
    const text = await response.text();
    report.steps.push({ method: request.method, replica: replicas.indexOf(url), status: response.status });
    if (!text.startsWith("{")) {
      const data = text.split("\n").filter((line) => line.startsWith("data:")).pop();
      return JSON.parse(data.slice(5));
    }
    return JSON.parse(text);
  };
}

function sessionOf(client, token) {
  return createTaskSessionFromClient(client, {
    endpointId: `hostd-${token.slice(0, 5)}`,
    rawDispatch: rawDispatchFor(token, setup.urls),
    v2RequestFraming: { protocolVersion: PROTOCOL, clientInfo: info, clientCapabilities: {} },
  });
}

const alice = await connect(setup.alice);
report.era = alice.getProtocolEra();
report.extensions = alice.getServerCapabilities()?.extensions ?? null;
const session = sessionOf(alice, setup.alice);
report.capabilities = session.capabilities;
try {
  // 1. A long call answered as a task, polled to its end: the plain call's result.
  const imported = await session.callTool("import_memories", { data: setup.memories });
  report.importKind = imported.kind;
  const { outcome } = await imported.settle();
  report.importOutcome = outcome.status;
  report.importResult = resultFromTaskOutcome(outcome);
  const again = await session.callTool("import_memories", { data: setup.memories });
  report.againKind = again.kind;
  report.againResult = resultFromTaskOutcome((await again.settle()).outcome);

  // 2. A read that hangs on its second page: progress seen, then cancelled.
  const reading = await session.callTool("read_wechat_articles", setup.readArguments);
  report.readKind = reading.kind;
  report.taskId = reading.handle?.taskId ?? null;
  report.progress = [];
  for await (const event of reading.updates()) {
    const message = event.task?.statusMessage ?? event.task?.raw?.statusMessage;
    if (message) report.progress.push(message);
    if (message && message.startsWith("1/2")) break;
    if (event.type === "outcome") break;
  }
  // Bob is another member: alice's task is unknown to him, on either replica.
  const bobGet = rawDispatchFor(setup.bob, setup.urls);
  report.bobGet = (await bobGet({ method: "tasks/get", params: { taskId: report.taskId, _meta: bobMeta() } })).error;
  report.bobCancel = (await bobGet({ method: "tasks/cancel", params: { taskId: report.taskId, _meta: bobMeta() } }))
    .error;
  const cancelAsked = Date.now();
  await reading.cancel();
  const settled = await reading.settle().catch((error) => ({ outcome: { status: `threw ${error?.name}` } }));
  report.cancelOutcome = settled.outcome.status;
  report.cancelSeconds = (Date.now() - cancelAsked) / 1000;
} finally {
  await session.close();
  await alice.close();
}

// 3. The same client without the extension: today's plain answer.
const plain = await connect(setup.alice);
try {
  report.plainResult = await plain.callTool({ name: "import_memories", arguments: { data: setup.memories } });
} finally {
  await plain.close();
}
console.log(JSON.stringify(report));

function bobMeta() {
  return {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": info,
    "io.modelcontextprotocol/clientCapabilities": { extensions: { "io.modelcontextprotocol/tasks": {} } },
  };
}
