// run.js drives a built `ndbg mcp` with the TypeScript MCP SDK's client
// (@modelcontextprotocol/sdk, npm): an implementation of MCP independent of
// the Go SDK the server is built on. Over stdio and over streamable HTTP
// it plays an agent's errand (issue 28's done-when): from a program and a
// failing call, start a session, step, set a breakpoint, evaluate, run to
// the failure, step back to the inputs of the function that failed, and
// end; then every other tool, bad arguments (tool errors, never a dead
// server), concurrent sessions and a cancelled call. The real backend's
// answers are exact, so they are checked exactly; the neural backend's
// (the model embedded in ndbg) only for their form: marked predicted, with
// a confidence per field in [0, 1].
//
// usage: node run.js --ndbg PATH [--only stdio|http]
// It exits 0 when every check passed, 1 with the failed check otherwise.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import assert from "node:assert/strict";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

// MEAN is the tests' shared program (internal/testsupport/testmodel.MeanProgram):
// f([None]) cleans its list to [] and mean divides by its length, 0.
const MEAN = `def mean(xs):
    total = 0
    for x in xs:
        total += x
    return total / len(xs)

def f(data):
    clean = [d for d in data if d is not None]
    m = mean(clean)
    return round(m, 2)
`;

// SLEEPY's module code sleeps: a real start of it runs until stopped.
const SLEEPY = "import time\ntime.sleep(3600)\n\ndef f():\n    return 1\n";

const TOOLS = ["debug_breakpoints", "debug_end", "debug_evaluate", "debug_fork", "debug_history",
  "debug_set", "debug_start", "debug_step", "predict"];

function args() {
  const a = { only: "" };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--ndbg") a.ndbg = argv[++i];
    else if (argv[i] === "--only") a.only = argv[++i];
    else throw new Error(`run.js: unknown argument ${argv[i]}`);
  }
  if (!a.ndbg) throw new Error("run.js: --ndbg PATH is required");
  return a;
}

// SERVER_ARGS: the real backend is the default (exact answers); neural is
// offered for the checks of a prediction's form.
const SERVER_ARGS = ["mcp", "--backends", "real,neural", "--max-sessions", "8"];

let checks = 0;
function log(msg) { console.log(msg); }

// call calls a tool and returns its structured result, failing on a tool
// error.
async function call(c, name, args) {
  const r = await c.callTool({ name, arguments: args });
  if (r.isError) throw new Error(`${name} ${JSON.stringify(args)}: tool error: ${text(r)}`);
  assert.ok(r.structuredContent, `${name}: a structured result`);
  // The text content is the same JSON, for clients that read only text.
  assert.deepEqual(JSON.parse(text(r)), r.structuredContent, `${name}: text and structured content agree`);
  checks++;
  return r.structuredContent;
}

function text(r) { return (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n"); }

// toolError calls a tool that must refuse: a tool error (isError) or a
// JSON-RPC invalid-params error, whose message must match want; the
// server must answer the next call.
async function toolError(c, name, args, want) {
  let msg;
  try {
    const r = await c.callTool({ name, arguments: args });
    assert.ok(r.isError, `${name} ${JSON.stringify(args)}: want an error, got ${text(r)}`);
    msg = text(r);
  } catch (e) {
    assert.ok(e.code === -32602, `${name} ${JSON.stringify(args)}: want a tool error or invalid params, got ${e}`);
    msg = e.message;
  }
  assert.match(msg, want, `${name} ${JSON.stringify(args)}: the error says what is wrong`);
  checks++;
}

function locals(state) { return Object.fromEntries((state.locals || []).map((l) => [l.name, l.repr])); }

// errand is the agent's errand of issue 28 on the real backend.
async function errand(c) {
  let v = await call(c, "debug_start", { program: MEAN, call: "f([None])" });
  const id = v.session;
  assert.equal(v.backend, "real");
  assert.equal(v.state.event, "call");
  assert.equal(v.state.line, 7);
  assert.equal(v.state.source, "def f(data):");
  assert.deepEqual(locals(v.state), { data: "[None]" });
  assert.equal(v.state.predicted, false);
  assert.equal(v.state.confidence, undefined, "a real state has no confidence");

  v = await call(c, "debug_step", { session: id, action: "step_into" });
  assert.equal(v.state.event, "line");
  assert.equal(v.state.line, 8);
  v = await call(c, "debug_step", { session: id, action: "step_over" });
  assert.equal(v.state.line, 9, "over the comprehension to mean's call");
  assert.deepEqual(locals(v.state), { data: "[None]", clean: "[]" });

  v = await call(c, "debug_breakpoints", { session: id, set: [{ line: 5 }] });
  assert.deepEqual(v.breakpoints, [{ line: 5 }]);
  v = await call(c, "debug_step", { session: id, action: "continue" });
  assert.equal(v.state.line, 5);
  assert.deepEqual(locals(v.state), { xs: "[]", total: "0" });
  assert.equal(v.stack.length, 2, "f, then mean");

  const ev = await call(c, "debug_evaluate", { session: id, expression: "len(xs)" });
  assert.equal(ev.value, "0");
  assert.equal(ev.derived_from_prediction, false);

  // On to the failure: the exception escapes the program.
  await call(c, "debug_breakpoints", { session: id, clear_all: true });
  v = await call(c, "debug_step", { session: id, action: "continue" });
  assert.equal(v.finished, true);
  assert.deepEqual(v.escaped, { type: "ZeroDivisionError", message: "division by zero", line: 5 });

  // Back to where it was raised, then to mean's inputs: called with [].
  for (let i = 0; !(v.state.event === "exception" && v.state.line === 5); i++) {
    assert.ok(i < 10, "no exception at line 5 stepping back");
    v = await call(c, "debug_step", { session: id, action: "inv_step_into" });
  }
  assert.equal(v.state.exception, "ZeroDivisionError('division by zero')");
  v = await call(c, "debug_step", { session: id, action: "inv_step_return" });
  assert.equal(v.state.event, "call");
  assert.equal(v.state.line, 1);
  assert.deepEqual(locals(v.state), { xs: "[]" });
  // And once more: f's call, its input.
  v = await call(c, "debug_step", { session: id, action: "inv_step_return" });
  assert.equal(v.state.line, 7);
  assert.deepEqual(locals(v.state), { data: "[None]" });

  const h = await call(c, "debug_history", { session: id });
  assert.equal(h.start.line, 7);
  assert.equal(h.steps.length, v.steps);
  assert.deepEqual(h.steps.map((s) => s.action).slice(0, 3), ["step_into", "step_over", "continue:5"]);

  // fork and set: a fork edited goes its own way.
  await call(c, "debug_step", { session: id, action: "step_over", count: 2 });
  const f = await call(c, "debug_fork", { session: id });
  assert.notEqual(f.session, id);
  v = await call(c, "debug_set", { session: f.session, name: "clean", repr: "[2, 6]" });
  assert.deepEqual(locals(v.state), { data: "[None]", clean: "[2, 6]" });
  v = await call(c, "debug_step", { session: f.session, action: "step_return" });
  assert.equal(v.state.event, "return");
  assert.equal(v.state.return_value, "4.0");
  v = await call(c, "debug_step", { session: id, action: "continue" });
  assert.equal(v.escaped?.type, "ZeroDivisionError", "the original still fails");

  for (const s of [id, f.session]) assert.deepEqual(await call(c, "debug_end", { session: s }), { session: s, ended: true });
  await toolError(c, "debug_step", { session: id, action: "step_into" }, /no session/);
  log("  errand: start, step, breakpoint, evaluate, failure, back to the inputs, fork, set, history, end");
}

// neural checks a predicted session's form and the predict tool.
async function neural(c) {
  let v = await call(c, "debug_start", { program: MEAN, call: "f([1, None, 4])", backend: "neural" });
  v = await call(c, "debug_step", { session: v.session, action: "step_into" });
  assert.equal(v.backend, "neural");
  assert.equal(v.state.predicted, true);
  for (const k of ["state", "event", "line", "value"]) {
    const p = v.state.confidence[k];
    assert.ok(typeof p === "number" && p >= 0 && p <= 1, `confidence.${k} = ${p}`);
  }
  for (const l of v.state.locals || []) assert.ok(l.confidence >= 0 && l.confidence <= 1, `local ${l.name}'s confidence`);
  if ((v.state.locals || []).length > 0) {
    const ev = await call(c, "debug_evaluate", { session: v.session, expression: v.state.locals[0].name });
    assert.equal(ev.derived_from_prediction, true);
    assert.match(ev.note, /derived from a prediction/);
  }
  await call(c, "debug_end", { session: v.session });

  const p = await call(c, "predict", { program: MEAN, call: "f([1, None, 4])", actions: ["step_over"], action: "step_over", backend: "neural", real: true });
  assert.equal(p.predicted.predicted, true);
  assert.equal(p.real.event, "line");
  assert.equal(p.real.line, 9);
  assert.deepEqual(locals(p.real), { data: "[1, None, 4]", clean: "[1, 4]" });
  assert.equal(typeof p.match.all, "boolean");
  const r = await call(c, "predict", { program: MEAN, call: "f([1, None, 4])", action: "step_return", backend: "real" });
  assert.equal(r.predicted.return_value, "2.5");
  assert.equal(r.predicted.predicted, false);
  log("  neural: predicted states with confidence per field; predict with the real state beside");
}

// bad: bad arguments are tool errors that say what is wrong.
async function bad(c) {
  await toolError(c, "debug_start", { call: "f(1)" }, /program/);
  await toolError(c, "debug_start", { program: MEAN, call: "f([1])", backend: "telepathy" }, /backend/);
  await toolError(c, "debug_start", { program: "def f(:\n", call: "f()" }, /syntax|invalid/i);
  await toolError(c, "debug_start", { program: MEAN, call: "f([1])", verify_below: 2 }, /verify_below/);
  await toolError(c, "debug_start", { program: MEAN, path: "/nonexistent/x.py", call: "f(1)" }, /not both|program/);
  const v = await call(c, "debug_start", { program: MEAN, call: "f([1])" });
  await toolError(c, "debug_step", { session: v.session, action: "fly" }, /fly/);
  await toolError(c, "debug_step", { session: v.session }, /action/);
  await toolError(c, "debug_step", { session: v.session, action: "step_into", count: 0 }, /count/);
  await toolError(c, "debug_step", { session: v.session, actoin: "step_into" }, /actoin|action/);
  await toolError(c, "debug_evaluate", { session: v.session, expression: "1 +" }, /./);
  await toolError(c, "debug_set", { session: v.session, name: "nope", repr: "1" }, /nope/);
  await toolError(c, "debug_breakpoints", { session: v.session, clear: [0] }, /line/);
  await toolError(c, "debug_end", { session: "no-such-session" }, /no session/);
  await toolError(c, "predict", { program: MEAN }, /call/);
  await toolError(c, "no_such_tool", {}, /no_such_tool|unknown|not found/i);
  await call(c, "debug_end", { session: v.session });
  // Still serving.
  assert.deepEqual((await c.listTools()).tools.map((t) => t.name).sort(), TOOLS);
  log("  bad arguments: tool errors that say what is wrong; the server goes on");
}

// concurrent runs sessions side by side, each on its own input.
async function concurrent(c) {
  const inputs = [[[1, 2], "1.5"], [[3, null, 4], "3.5"], [[10], "10.0"], [[1, 2, 3, 4], "2.5"]];
  await Promise.all(inputs.map(async ([xs, want]) => {
    const py = JSON.stringify(xs).replaceAll("null", "None").replaceAll(",", ", ");
    const s = await call(c, "debug_start", { program: MEAN, call: `f(${py})` });
    await call(c, "debug_breakpoints", { session: s.session, set: [{ line: 5 }] });
    let v = await call(c, "debug_step", { session: s.session, action: "continue" });
    assert.equal(v.state.line, 5);
    v = await call(c, "debug_step", { session: s.session, action: "step_return" });
    assert.equal(v.state.return_value, want, `mean of ${py}`);
    await call(c, "debug_end", { session: s.session });
  }));
  log(`  concurrent: ${inputs.length} sessions at once, each its own answer`);
}

// cancel cancels a call in flight (notifications/cancelled): the client's
// call ends, and the server answers the next one.
async function cancel(c) {
  const ac = new AbortController();
  const pending = c.callTool({ name: "debug_start", arguments: { program: SLEEPY, call: "f()" } }, undefined, { signal: ac.signal, timeout: 600000 });
  setTimeout(() => ac.abort("the agent changed its mind"), 500);
  await assert.rejects(pending, (e) => /abort|changed its mind|cancel/i.test(String(e)), "the cancelled call ends");
  const v = await call(c, "debug_start", { program: MEAN, call: "f([1])" });
  await call(c, "debug_end", { session: v.session });
  checks++;
  log("  cancellation: the cancelled call ends; the server answers the next");
}

async function scenario(c, what) {
  const tools = (await c.listTools()).tools;
  assert.deepEqual(tools.map((t) => t.name).sort(), TOOLS);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, "object", `${t.name}'s input schema`);
    assert.equal(t.outputSchema?.type, "object", `${t.name}'s output schema`);
    assert.ok(t.description.length > 20, `${t.name}'s description`);
  }
  log(`${what}: ${tools.length} tools with input and output schemas`);
  await errand(c);
  await neural(c);
  await bad(c);
  await concurrent(c);
  await cancel(c);
}

async function overStdio(ndbg) {
  const t = new StdioClientTransport({ command: ndbg, args: SERVER_ARGS, stderr: "inherit" });
  const c = new Client({ name: "ndbg-mcp-testclient", version: "1.0.0" });
  await c.connect(t);
  assert.equal(c.getServerVersion().name, "ndbg");
  try {
    await scenario(c, "stdio");
  } finally {
    await c.close();
  }
}

async function overHTTP(ndbg) {
  const dir = mkdtempSync(join(tmpdir(), "ndbg-mcp-"));
  const tokenFile = join(dir, "token");
  const srv = spawn(ndbg, [...SERVER_ARGS, "--listen", "127.0.0.1:0", "--token-file", tokenFile], { stdio: ["ignore", "pipe", "inherit"] });
  const exited = new Promise((resolve) => srv.on("exit", (code, sig) => resolve({ code, sig })));
  try {
    const url = await new Promise((resolve, reject) => {
      let out = "";
      srv.stdout.on("data", (d) => {
        out += d;
        const m = out.match(/listening on (http:\/\/\S+)/);
        if (m) resolve(m[1]);
      });
      srv.on("exit", (code) => reject(new Error(`ndbg mcp --listen exited (${code}) before listening: ${out}`)));
    });
    const token = readFileSync(tokenFile, "utf8").trim();
    // Without the token: refused.
    const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    assert.equal(res.status, 401, "a request without the token");
    checks++;
    const clients = [];
    for (let i = 0; i < 2; i++) {
      const c = new Client({ name: `ndbg-mcp-testclient-${i}`, version: "1.0.0" });
      await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
      clients.push(c);
    }
    // Two clients (two MCP sessions) at once on one server.
    await Promise.all([scenario(clients[0], "http, client 1"), concurrent(clients[1])]);
    for (const c of clients) await c.close();
    srv.kill("SIGTERM");
    const { code } = await exited;
    assert.equal(code, 0, "ndbg mcp --listen exits 0 at SIGTERM");
    checks++;
    log("http: shut down at SIGTERM, exit 0");
  } finally {
    srv.kill("SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
}

const a = args();
try {
  if (a.only !== "http") await overStdio(a.ndbg);
  if (a.only !== "stdio") await overHTTP(a.ndbg);
  log(`ok: ${checks} checks`);
  process.exit(0);
} catch (e) {
  console.error(`FAIL after ${checks} checks: ${e.stack || e}`);
  process.exit(1);
}
