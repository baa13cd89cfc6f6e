// The official TypeScript SDK client (@modelcontextprotocol/sdk) against hostd, for tests/test_ts_client.py.
//
//   node ts_sdk_client.cjs stdio COMMAND ARG...   spawn `hostd serve` and talk over stdio
//   node ts_sdk_client.cjs http URL               Streamable HTTP (token from HOSTD_TEST_TOKEN)
//
// Writes records with the tools (the SDK checks each structuredContent against the tool's output
// schema), then lists, reads and completes resources and lists and gets prompts, and prints what it
// saw as one JSON line. Last, it subscribes to a memory and a task (resources/subscribe) and
// records the notifications/resources/updated that tool calls bring, or the server's refusal (a
// stateless server has no connection to send them on). The SDK resolves from NODE_PATH (the
// shared npm test cache).
"use strict";

const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { SUPPORTED_PROTOCOL_VERSIONS, ResourceUpdatedNotificationSchema } = require("@modelcontextprotocol/sdk/types.js");

function transportFor(kind, target, rest) {
  if (kind === "stdio") {
    return new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
  }
  const headers = { Authorization: `Bearer ${process.env.HOSTD_TEST_TOKEN}` };
  return new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
}

async function errorOf(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return { code: error.code, message: String(error.message) };
  }
}

// Subscribe to a memory and a task, change them and an unrelated task, then unsubscribe from the
// memory and change both again: which updates arrived, in order (the last task update is the
// marker that everything sent before it has arrived).
async function subscriptions(client) {
  const updates = [];
  let arrived = () => {};
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    updates.push(notification.params.uri);
    arrived();
  });
  const until = (count) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${JSON.stringify(updates)} in 30 s`)), 30000);
      const check = () => {
        if (updates.length >= count) {
          clearTimeout(timer);
          resolve();
        }
      };
      arrived = check;
      check();
    });
  const refused = await errorOf(client.subscribeResource({ uri: "memory://ops/deploy/steps" }));
  if (refused) return { refused, updates };
  await client.subscribeResource({ uri: "task://ts-1" });
  const change = async (name, args) => {
    const result = await client.callTool({ name, arguments: args });
    if (result.isError) throw new Error(JSON.stringify(result.structuredContent));
  };
  await change("update_task", { task_id: "ts-2", title: "Write the release notes" }); // not subscribed
  await change("update_memory", { uri: "ops://deploy/steps", content: "Run the playbook twice." });
  await change("update_task", { task_id: "ts-1", title: "Ship the release today" });
  await until(2);
  const subscribed = updates.splice(0);
  await client.unsubscribeResource({ uri: "memory://ops/deploy/steps" });
  await change("update_memory", { uri: "ops://deploy/steps", content: "Run the playbook once." });
  await change("update_task", { task_id: "ts-1", title: "Ship the release now" });
  await until(1);
  return { refused: null, subscribed, afterUnsubscribe: updates };
}

async function main() {
  const [kind, target, ...rest] = process.argv.slice(2);
  const transport = transportFor(kind, target, rest);
  let negotiated = null;
  const setVersion = transport.setProtocolVersion;
  transport.setProtocolVersion = (version) => {
    negotiated = version;
    if (setVersion) setVersion.call(transport, version);
  };
  const client = new Client({ name: "hostd-ts-sdk-test", version: "1.0.0" });
  await client.connect(transport);
  const out = {
    sdkProtocolVersions: SUPPORTED_PROTOCOL_VERSIONS,
    protocolVersion: negotiated,
    server: client.getServerVersion(),
    capabilities: client.getServerCapabilities(),
  };

  const calls = [
    ["create_memory", { uri: "ops://deploy/steps", content: "Run the playbook.", tags: ["ops"] }],
    ["create_task", { title: "Ship the release", task_id: "ts-1" }],
    ["create_task", { title: "Write the notes", task_id: "ts-2" }],
    [
      "sequential_thinking",
      { session_id: "ts-plan", thought: "Ship first.", thoughtNumber: 1, totalThoughts: 1, nextThoughtNeeded: false },
    ],
  ];
  out.calls = [];
  for (const [name, args] of calls) {
    const result = await client.callTool({ name, arguments: args });
    out.calls.push({ name, isError: result.isError, status: result.structuredContent.status, content: result.content });
  }

  out.resources = [];
  out.pages = 0;
  let cursor;
  do {
    const page = await client.listResources(cursor ? { cursor } : {});
    out.resources.push(...page.resources);
    out.pages += 1;
    cursor = page.nextCursor;
  } while (cursor);
  out.templates = (await client.listResourceTemplates()).resourceTemplates;
  out.reads = {};
  for (const uri of ["memory://ops/deploy/steps", "task://ts-1", "thinking://ts-plan", "test://static-binary"]) {
    out.reads[uri] = (await client.readResource({ uri })).contents;
  }
  out.missing = await errorOf(client.readResource({ uri: "task://no-such-task" }));

  const complete = async (ref, name, value) => (await client.complete({ ref, argument: { name, value } })).completion;
  out.completions = {
    task_id: await complete({ type: "ref/resource", uri: "task://{task_id}" }, "task_id", "ts"),
    memory: await complete({ type: "ref/resource", uri: "memory://{domain}/{+path}" }, "domain", "o"),
    session_id: await complete({ type: "ref/prompt", name: "think_problem_solving" }, "session_id", "ts"),
    arg1: await complete({ type: "ref/prompt", name: "test_prompt_with_arguments" }, "arg1", "par"),
  };

  out.prompts = (await client.listPrompts()).prompts;
  out.gotPrompts = {
    think: await client.getPrompt({ name: "think_problem_solving", arguments: { topic: "Slow deploys", session_id: "ts-plan" } }),
    image: await client.getPrompt({ name: "test_prompt_with_image" }),
    embedded: await client.getPrompt({ name: "test_prompt_with_embedded_resource", arguments: { resourceUri: "test://static-text" } }),
  };
  out.unknownPrompt = await errorOf(client.getPrompt({ name: "no_such_prompt" }));

  out.subscriptions = await subscriptions(client);

  await client.close();
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((error) => {
  process.stderr.write(`${error && error.stack ? error.stack : error}\n`);
  process.exit(1);
});
