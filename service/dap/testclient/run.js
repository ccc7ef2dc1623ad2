// Drives `ndbg dap` with VS Code's DAP test client (DebugClient from
// @vscode/debugadapter-testsupport) through scripts of launches,
// breakpoints, steps, step-backs and variable reads on several programs:
//
//   - real backend: every stop's line, event and locals exactly;
//   - neural and compare backends: what must hold of a prediction
//     (well-formed responses and events, stops at code lines);
//   - over TCP (ndbg dap --listen) once;
//   - debugpy (Debian's python3-debugpy), when --debugpy names its
//     adapter: the same breakpoint-and-step script on the same programs
//     must stop at the same lines with the same locals as ndbg's real
//     backend.
//
// Usage: node run.js --ndbg PATH [--debugpy ADAPTER_DIR] [--python PYTHON] [--only ndbg|debugpy]
//        node run.js --ndbg PATH --only extra --name NAME [--debugpy ...]: one program's real
//        script (and its debugpy comparison), or one named check ("pause", ...)
// Exit status 0 when every check passed; failures are printed.
'use strict';

const assert = require('assert');
const cp = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { DebugClient } = require('@vscode/debugadapter-testsupport');

const args = {};
for (let i = 2; i < process.argv.length; i += 2) {
	args[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
}
if (!args.ndbg) {
	console.error('usage: node run.js --ndbg PATH [--debugpy ADAPTER_DIR] [--python PYTHON]');
	process.exit(2);
}
const here = __dirname;
const repo = path.resolve(here, '..', '..', '..');
const TIMEOUT = 60000; // a prediction on two busy cores may take seconds

// The programs and their scripts. `steps` is what every backend runs;
// `want` (real backend) is each step's stop: [line, event, locals], or
// 'end' for the program's end, or {error: substring}. `compare` is the
// script run on both ndbg's real backend and debugpy; it uses only what
// both debuggers mean the same way (breakpoints, continue, next inside a
// function body), see docs/editors.md.
const programs = [
	{
		file: path.join(repo, 'examples', 'mean.py'),
		call: 'f([3, None, 4])',
		stopOnEntry: true,
		steps: [
			['entry', [8, 'call', { data: '[3, None, 4]' }]],
			['next', [9, 'line', { data: '[3, None, 4]' }]],
			['next', [10, 'line', { data: '[3, None, 4]', clean: '[3, 4]' }]],
			['stepIn', [1, 'call', { xs: '[3, 4]' }]],
			[{ bp: [4] }],
			['continue', [4, 'line', { xs: '[3, 4]', total: '0', x: '3' }]],
			['continue', [4, 'line', { xs: '[3, 4]', total: '3', x: '4' }]],
			['stepBack', [3, 'line', { xs: '[3, 4]', total: '3', x: '3' }]],
			['reverseContinue', [4, 'line', { xs: '[3, 4]', total: '0', x: '3' }]],
			[{ bp: [] }],
			['stepOut', [5, 'return', { xs: '[3, 4]', total: '7', x: '4', __return__: '3.5' }]],
			['next', [11, 'line', { data: '[3, None, 4]', clean: '[3, 4]', m: '3.5' }]],
			[{ evaluate: 'm', want: '3.5' }],
			[{ evaluate: 'm * 2 + clean[0]', want: '10.0' }],
			['continue', 'end'],
		],
		compare: [{ bp: [4, 11] }, 'continue', 'next', 'continue', 'continue', 'continue'],
		// Conditional and hit-count breakpoints, as both read them (not
		// both on one breakpoint: debugpy then stops where the condition
		// is false; ndbg counts the hits where it holds, as pdb's ignore).
		compareMore: [
			[{ bp: [{ line: 4, condition: 'x > 3' }, 11] }, 'continue', 'continue', 'continue'],
			[{ bp: [{ line: 4, hitCondition: '2' }] }, 'continue', 'continue'],
			[{ bp: [{ line: 4, hitCondition: '>= 2' }, { line: 11, condition: 'm > 100' }] }, 'continue', 'continue'],
		],
		// Stepping into a call, pdb (and ndbg) stops at the call event, on
		// the def line, showing the arguments; debugpy at the body's first
		// line. Stepping out, pdb stops at the return event (the value is
		// __return__); debugpy in the caller, at the call's line.
		differs: [
			{ script: [{ bp: [10] }, 'stepIn'], ndbg: { line: 1, event: 'call' }, debugpy: { line: 2 } },
			{ script: [{ bp: [2] }, 'stepOut'], ndbg: { line: 5, event: 'return' }, debugpy: { line: 10 } },
		],
	},
	{
		file: path.join(here, 'programs', 'fact.py'),
		call: 'fact(3)',
		stopOnEntry: false,
		steps: [
			[{ bp: [3] }],
			['entry', [3, 'line', { n: '1' }]],
			[{ frames: 3 }],
			['stepOut', [3, 'return', { n: '1', __return__: '1' }]],
			['next', [4, 'return', { n: '2', __return__: '2' }]],
			['stepBack', [3, 'line', { n: '1' }]], // the breakpoint, passed on the way back
			['stepBack', [2, 'line', { n: '1' }]],
			['reverseContinue', [1, 'call', { n: '3' }]],
			['stepBack', { error: 'first state' }],
			['continue', [3, 'line', { n: '1' }]],
			['continue', 'end'],
		],
		compare: [{ bp: [3, 4] }, 'continue', 'continue', 'continue'],
	},
	{
		file: path.join(here, 'programs', 'count.py'),
		call: "count(['a', 'b', 'a'])",
		stopOnEntry: false,
		steps: [
			[{ bp: [5] }],
			['entry', [5, 'line', { words: "['a', 'b', 'a']", seen: "{'a': 1, 'b': 1}", w: "'a'" }]],
			['next', [3, 'line', { words: "['a', 'b', 'a']", seen: "{'a': 2, 'b': 1}", w: "'a'" }]],
			['next', [8, 'line', { words: "['a', 'b', 'a']", seen: "{'a': 2, 'b': 1}", w: "'a'" }]],
			[{ evaluate: 'seen', want: "{'a': 2, 'b': 1}" }],
			[{ evaluate: "sorted(seen, key=seen.get)[-1] * seen['a']", want: "'aa'" }],
			['next', [8, 'return', { words: "['a', 'b', 'a']", seen: "{'a': 2, 'b': 1}", w: "'a'", __return__: "{'a': 2, 'b': 1}" }]],
			['next', 'end'],
		],
		compare: [{ bp: [5, 7] }, 'continue', 'continue', 'next', 'continue', 'next', 'next'],
		// `next` over the entry's return: pdb (and ndbg) stops at the
		// return event; debugpy runs on to the program's end (the module
		// code its copy of the program appends calls count last).
		differs: [{ script: [{ bp: [8] }, 'next'], ndbg: { line: 8, event: 'return' }, debugpy: 'end' }],
	},
	{
		// A whole script (no call): real backend only (runScript skips the
		// others); debugpy runs it as it is.
		file: path.join(here, 'programs', 'script.py'),
		stopOnEntry: false,
		steps: [
			[{ bp: [5] }],
			['entry', [5, 'line', { x: '8' }]],
			[{ output: [] }],
			[{ evaluate: 'x * 3 + 1', want: '25' }],
			['stepOut', [6, 'return', { x: '8', __return__: '4.0' }]],
			[{ output: ['stdout: half of 8\n'] }],
			['next', [11, 'line', { sys: "<module 'sys' (built-in)>", half: '<function half at 0x...>', total: '4.0', v: '8' }]],
			[{ evaluate: 'total + v', want: '12.0' }],
			['continue', [5, 'line', { x: '2' }]],
			[{ output: ['stdout: half of 8\n'] }],
			[{ bp: [] }],
			['continue', 'end'],
			// One action's output: its stdout, then its stderr.
			[{ output: ['stdout: half of 8\n', 'stdout: half of 2\ndone\n', 'stderr: total 5.0\n'] }],
		],
		compare: [{ bp: [5, 6] }, 'continue', 'continue', 'continue', 'continue', 'continue'],
	},
	{
		file: path.join(here, 'programs', 'parse.py'),
		call: "parse(['1', 'x'])",
		stopOnEntry: false,
		steps: [
			[{ bp: [4] }],
			['entry', [4, 'line', { items: "['1', 'x']", out: '[]', s: "'1'" }]],
			['continue', [4, 'line', { items: "['1', 'x']", out: '[1]', s: "'x'" }]],
			['next', [4, 'exception', { items: "['1', 'x']", out: '[1]', s: "'x'", __exception__: /ValueError/ }]],
			['next', [4, 'return', { items: "['1', 'x']", out: '[1]', s: "'x'", __return__: 'None' }]],
			['next', 'end'],
		],
		compare: [{ bp: [3, 4] }, 'continue', 'continue', 'continue', 'continue'],
		// pdb, and so ndbg, stops at the exception event of the line that
		// raises; debugpy, with no exception breakpoints set, does not.
		differs: [{
			script: [{ bp: [4] }, 'continue', 'next'],
			ndbg: { line: 4, event: 'exception' },
			debugpy: 'end',
		}],
	},
	{
		// A generator consumed by a for loop: next at its yield goes on to
		// its next line when it is resumed, as pdb and debugpy do (bdb's
		// stopframe rules), not to the yield's return event.
		file: path.join(here, 'programs', 'gen.py'),
		call: 'total(3)',
		stopOnEntry: false,
		steps: [
			[{ bp: [3] }],
			['entry', [3, 'line', { n: '3', i: '0' }]],
			['next', [4, 'line', { n: '3', i: '0', sq: '0' }]],
			['next', [2, 'line', { n: '3', i: '0', sq: '0' }]],
			['next', [3, 'line', { n: '3', i: '1', sq: '0' }]],
			[{ bp: [] }],
			['next', [4, 'line', { n: '3', i: '1', sq: '1' }]],
			['stepIn', [4, 'return', { n: '3', i: '1', sq: '1', __return__: '1' }]],
			['next', [11, 'line', { n: '3', acc: '0', v: '1' }]],
			['continue', 'end'],
		],
		compare: [{ bp: [3] }, 'next', 'next', 'next', 'next', 'next', 'next', 'next'],
	},
];

let failures = 0;
function fail(what, err) {
	failures++;
	console.log(`FAIL ${what}: ${err && err.stack ? err.stack : err}`);
}

// nextStop resolves with the next stopped or terminated event.
function nextStop(dc) {
	return new Promise((resolve, reject) => {
		const timer = setTimeout(() => { off(); reject(new Error('no stopped or terminated event')); }, TIMEOUT);
		const onStop = (e) => { off(); resolve(e); };
		const onEnd = (e) => { off(); resolve(e); };
		function off() {
			clearTimeout(timer);
			dc.removeListener('stopped', onStop);
			dc.removeListener('terminated', onEnd);
		}
		dc.on('stopped', onStop);
		dc.on('terminated', onEnd);
		nextStop.cancel = off;
	});
}

// record reads where the debugger stopped: the top frame's line, the
// stopped event's text (ndbg: the event), the frames and the locals of
// the top frame's first scope (debugpy's groups of special variables
// left out).
async function record(dc, ev) {
	// ndbg stops at the end (reason 'end') before it terminates, so that
	// the user can still step back; either is the end.
	if (ev.event === 'terminated' || (ev.body && ev.body.reason === 'end')) return 'end';
	const st = await dc.stackTraceRequest({ threadId: ev.body.threadId || 1 });
	const frames = st.body.stackFrames;
	assert.ok(frames.length > 0, 'a stop has frames');
	const scopes = await dc.scopesRequest({ frameId: frames[0].id });
	const locals = {};
	const types = {};
	if (scopes.body.scopes.length > 0) {
		const vars = await dc.variablesRequest({ variablesReference: scopes.body.scopes[0].variablesReference });
		for (const v of vars.body.variables) {
			assert.strictEqual(typeof v.name, 'string');
			assert.strictEqual(typeof v.value, 'string');
			if (/ variables$/.test(v.name) || v.name.startsWith('(return)')) continue; // debugpy's groups
			locals[v.name] = v.value;
			types[v.name] = v.type;
		}
	}
	return { line: frames[0].line, event: ev.body.text, reason: ev.body.reason, description: ev.body.description, frames: frames.length, scopes: scopes.body.scopes.map((s) => s.name), locals, types };
}

// checkConfidence: a stop on a neural backend says how sure the model was
// of a predicted state (docs/editors.md), in the scope's name, each
// variable's type and the description, or nothing where it was not
// predicted (the entry, an edited state).
function checkConfidence(what, got) {
	const scope = /^Locals \((predicted, (\d+|<1)% sure|predicted, uncertain|real: verified)\)$/;
	const type = /^(predicted, ((\d+|<1)% sure|uncertain: .+)|real \(verified\))$/;
	const predicted = got.scopes[0] !== 'Locals';
	assert.ok(!predicted || scope.test(got.scopes[0]), `${what}: the scope says how sure the model was: ${got.scopes[0]}`);
	assert.strictEqual(predicted, / \| (predicted|verified)/.test(got.description), `${what}: the description and the scope agree: ${got.description}`);
	for (const [name, t] of Object.entries(got.types)) {
		if (predicted) assert.ok(type.test(t), `${what}: ${name}'s type says how sure: ${t}`);
		else assert.ok(!t, `${what}: ${name} was not predicted: ${t}`);
	}
	if (got.scopes[0] === 'Locals (real: verified)') assert.ok(/verified: the model was/.test(got.description), `${what}: verified`);
}

// act sends a step request and returns where it stopped, or {error}.
async function act(dc, req) {
	const stop = nextStop(dc);
	stop.catch(() => {});
	try {
		await dc[req + 'Request']({ threadId: 1 });
	} catch (err) {
		nextStop.cancel();
		return { error: err.message };
	}
	return record(dc, await stop);
}

async function setBreakpoints(dc, file, lines) {
	// A breakpoint is a line, or {line, condition, hitCondition}.
	const r = await dc.setBreakpointsRequest({ source: { path: file }, breakpoints: lines.map((b) => (typeof b === 'object' ? b : { line: b })) });
	return r.body.breakpoints;
}

// launch starts a session: initialize, launch and the configuration
// sequence (the breakpoints, configurationDone), returning the first stop.
async function launch(dc, launchArgs, file, bps) {
	dc.defaultTimeout = TIMEOUT;
	const first = nextStop(dc);
	first.catch(() => {});
	await Promise.all([
		dc.waitForEvent('initialized', TIMEOUT).then(() => setBreakpoints(dc, file, bps)).then(() => dc.configurationDoneRequest()),
		dc.launch(launchArgs),
	]);
	return record(dc, await first);
}

function ndbgClient() {
	return new DebugClient(args.ndbg, 'dap', 'ndbg', { cwd: repo });
}

// codeLines are the lines of file that can be stops: not blank, not
// comments.
function codeLines(file) {
	const lines = fs.readFileSync(file, 'utf8').split('\n');
	return new Set(lines.map((l, i) => (l.trim() && !l.trim().startsWith('#') ? i + 1 : 0)).filter((n) => n));
}

function checkStop(what, got, want) {
	if (want === 'end' || want.error) {
		if (want === 'end') assert.strictEqual(got, 'end', `${what}: want the end, got ${JSON.stringify(got)}`);
		else assert.ok(got.error && got.error.includes(want.error), `${what}: want an error with "${want.error}", got ${JSON.stringify(got)}`);
		return;
	}
	const [line, event, locals] = want;
	assert.ok(got !== 'end' && !got.error, `${what}: want line ${line}, got ${JSON.stringify(got)}`);
	assert.strictEqual(got.line, line, `${what}: line`);
	assert.strictEqual(got.event, event, `${what}: event`);
	assert.deepStrictEqual(Object.keys(got.locals).sort(), Object.keys(locals).sort(), `${what}: local names`);
	for (const [k, v] of Object.entries(locals)) {
		if (v instanceof RegExp) assert.match(got.locals[k], v, `${what}: ${k}`);
		else assert.strictEqual(got.locals[k], v, `${what}: ${k}`);
	}
}

// runScript runs a program's steps on one ndbg backend. On the real
// backend every stop is checked exactly; on the others, what must hold.
async function runScript(dc, prog, backend) {
	const name = `${path.basename(prog.file)} ${backend}`;
	const code = codeLines(prog.file);
	const firstBps = prog.steps[0][0].bp || [];
	let finished = false;
	if (!prog.call && backend !== 'real') { // a whole script needs the real backend
		await assert.rejects(dc.launch({ program: prog.file, backend }), /whole script .*no module-level frames/);
		return `${name}: refused, as it should be`;
	}
	const output = [];
	dc.on('output', (e) => { if (e.body.category !== 'console') output.push(`${e.body.category}: ${e.body.output}`); });
	for (const [i, [step, want]] of prog.steps.entries()) {
		const what = `${name} step ${i} (${JSON.stringify(step)})`;
		let got;
		if (step === 'entry') {
			got = await launch(dc, { program: prog.file, call: prog.call, backend, stopOnEntry: prog.stopOnEntry }, prog.file, firstBps);
		} else if (step.bp) {
			if (i === 0) continue; // set in the configuration sequence
			const bps = await setBreakpoints(dc, prog.file, step.bp);
			bps.forEach((b) => assert.ok(b.verified, `${what}: breakpoint at ${b.line} verified`));
			continue;
		} else if (step.output) {
			if (backend === 'real') assert.deepStrictEqual(output, step.output, `${what}: the program's output events`);
			else assert.deepStrictEqual(output, [], `${what}: a prediction has no output`);
			continue;
		} else if (step.evaluate) {
			if (finished) continue;
			try {
				const r = await dc.evaluateRequest({ expression: step.evaluate, context: 'hover' });
				if (backend === 'real') {
					assert.strictEqual(r.body.result, step.want, `${what}: value`);
					assert.ok(!r.body.type, `${what}: a real value is not marked as derived`);
				} else {
					assert.strictEqual(typeof r.body.result, 'string');
					// An expression (not a local's name) over predicted locals says so.
					if (!/^\w+$/.test(step.evaluate)) assert.match(r.body.type || '', /derived from a prediction|^$/, `${what}: type`);
				}
			} catch (err) {
				assert.ok(backend !== 'real', `${what}: ${err.message}`);
				assert.ok(err.message.length > 0);
			}
			continue;
		} else if (step.frames) {
			if (backend === 'real') {
				const st = await dc.stackTraceRequest({ threadId: 1 });
				assert.strictEqual(st.body.stackFrames.length, step.frames, `${what}: frames`);
			}
			continue;
		} else {
			if (finished && backend !== 'real') break; // a prediction may end sooner
			got = await act(dc, step);
		}
		if (backend === 'real') {
			checkStop(what, got, want);
		} else if (got === 'end') {
			finished = true;
		} else if (got.error) {
			assert.ok(got.error.length > 0, `${what}: an error says why`);
		} else {
			assert.ok(code.has(got.line), `${what}: line ${got.line} is a code line of ${prog.file}`);
			assert.ok(['call', 'line', 'return', 'exception'].includes(got.event), `${what}: event ${got.event}`);
			assert.ok(got.description && got.description.length > 0, `${what}: a description`);
			assert.ok(got.scopes.length >= 1, `${what}: scopes`);
			if (got.scopes.includes('Real')) {
				assert.ok(/real: /.test(got.description), `${what}: the real state in the description`);
			}
			if (backend === 'compare' && i === 0) assert.ok(got.scopes.includes('Real'), `${what}: the Real scope`);
			checkConfidence(what, got);
		}
		if (got === 'end') finished = true;
	}
	return name;
}

// neuralEdit: on the neural backend, edit a local at the entry and go on
// predicting from the edited state.
async function neuralEdit() {
	const dc = ndbgClient();
	await dc.start();
	try {
		const file = path.join(repo, 'examples', 'mean.py');
		const first = await launch(dc, { program: file, call: 'f([3, None, 4])', backend: 'neural', stopOnEntry: true }, file, []);
		assert.strictEqual(first.line, 8);
		await dc.setVariableRequest({ variablesReference: 1, name: 'data', value: '[1, 2]' });
		const r = await dc.evaluateRequest({ expression: 'data' });
		assert.strictEqual(r.body.result, '[1, 2]');
		const next = await act(dc, 'next');
		assert.ok(next === 'end' || next.error || codeLines(file).has(next.line), `after the edit: ${JSON.stringify(next)}`);
		await assert.rejects(dc.setVariableRequest({ variablesReference: 1, name: 'nope', value: '1' }), /no local "nope"/);
		await assert.rejects(dc.launchRequest({ program: file, call: 'f([1])' }), /already launched/);
	} finally {
		await dc.stop();
	}
}

// overTCP runs mean.py's script on the real backend through `ndbg dap
// --listen 127.0.0.1:0`.
async function overTCP() {
	const srv = cp.spawn(args.ndbg, ['dap', '--listen', '127.0.0.1:0'], { cwd: repo, stdio: ['ignore', 'ignore', 'pipe'] });
	try {
		const port = await new Promise((resolve, reject) => {
			let text = '';
			const timer = setTimeout(() => reject(new Error('ndbg dap --listen said no address: ' + text)), TIMEOUT);
			srv.stderr.on('data', (d) => {
				text += d;
				const m = /listening on 127\.0\.0\.1:(\d+)/.exec(text);
				if (m) { clearTimeout(timer); resolve(Number(m[1])); }
			});
		});
		const dc = ndbgClient();
		await dc.start(port);
		try {
			await runScript(dc, programs[0], 'real');
		} finally {
			await dc.stop();
		}
	} finally {
		srv.kill('SIGINT');
	}
}

// editorConfigs launches each configuration of docs/editors/launch.json as
// VS Code would (${workspaceFolder} is the repository) through the VS Code
// extension's adapter script (docs/editors/vscode-ndbg/adapter.sh), stops
// at the entry, steps, reads the locals and runs to the end.
async function editorConfigs() {
	const editors = path.join(repo, 'docs', 'editors');
	const launchJSON = JSON.parse(fs.readFileSync(path.join(editors, 'launch.json'), 'utf8'));
	assert.ok(launchJSON.configurations.length >= 3);
	for (const conf of launchJSON.configurations) {
		const c = JSON.parse(JSON.stringify(conf).replaceAll('${workspaceFolder}', repo));
		assert.strictEqual(c.type, 'ndbg');
		const dc = new DebugClient('/bin/sh', path.join(editors, 'vscode-ndbg', 'adapter.sh'), 'ndbg', { cwd: repo, env: { ...process.env, NDBG: args.ndbg } });
		await dc.start();
		try {
			const first = await launch(dc, c, c.program, []);
			assert.strictEqual(first.line, 8, `${c.name}: the entry's call`);
			assert.deepStrictEqual(first.locals, { data: '[3, None, 4]' }, `${c.name}: the arguments`);
			const next = await act(dc, 'next');
			if (c.backend === 'real') assert.strictEqual(next.line, 9, `${c.name}: next`);
			else assert.ok(next === 'end' || next.error || codeLines(c.program).has(next.line), `${c.name}: next: ${JSON.stringify(next)}`);
			if (c.backend !== 'real' && next !== 'end' && !next.error) checkConfidence(`${c.name}: next`, next);
			let last = next;
			for (let i = 0; i < 50 && last !== 'end' && !last.error; i++) last = await act(dc, 'continue');
			assert.ok(last === 'end' || (c.backend !== 'real' && last.error), `${c.name}: runs to the end: ${JSON.stringify(last)}`);
		} finally {
			await dc.stop();
		}
	}
}

// functionBreakpoints: a function breakpoint (setFunctionBreakpoints in
// the configuration sequence) stops at the function's first body line at
// every call, as pdb's break FUNCTION; cleared, the program runs on.
async function functionBreakpoints() {
	const dc = ndbgClient();
	await dc.start();
	try {
		const file = path.join(here, 'programs', 'fact.py');
		dc.defaultTimeout = TIMEOUT;
		const first = nextStop(dc);
		first.catch(() => {});
		let bps;
		await Promise.all([
			dc.waitForEvent('initialized', TIMEOUT)
				.then(() => dc.setFunctionBreakpointsRequest({ breakpoints: [{ name: 'fact' }, { name: 'nosuch' }] }))
				.then((r) => { bps = r.body.breakpoints; })
				.then(() => dc.configurationDoneRequest()),
			dc.launch({ program: file, call: 'fact(3)', backend: 'real', stopOnEntry: false }),
		]);
		assert.deepStrictEqual(bps.map((b) => b.verified), [true, false], 'fact is a function of the program, nosuch is not');
		checkStop('function breakpoint, first stop', await record(dc, await first), [2, 'line', { n: '3' }]);
		checkStop('function breakpoint, the recursive call', await act(dc, 'continue'), [2, 'line', { n: '2' }]);
		checkStop('function breakpoint, its next line', await act(dc, 'next'), [4, 'line', { n: '2' }]);
		checkStop('function breakpoint, stepped back to', await act(dc, 'stepBack'), [2, 'line', { n: '2' }]);
		await dc.setFunctionBreakpointsRequest({ breakpoints: [] });
		checkStop('function breakpoint cleared', await act(dc, 'continue'), 'end');
	} finally {
		await dc.stop();
	}
}

// pauseLoop: pause stops an endless loop where it is running (reason
// "pause"), its locals readable there; the session goes on from there.
async function pauseLoop() {
	const dc = ndbgClient();
	await dc.start();
	try {
		const file = path.join(here, 'programs', 'spin.py');
		dc.defaultTimeout = TIMEOUT;
		await Promise.all([
			dc.waitForEvent('initialized', TIMEOUT).then(() => dc.configurationDoneRequest()),
			dc.launch({ program: file, call: 'spin()', backend: 'real', stopOnEntry: false }),
		]);
		await new Promise((r) => setTimeout(r, 500)); // it runs
		const stop = nextStop(dc);
		stop.catch(() => {});
		await dc.pauseRequest({ threadId: 1 });
		const got = await record(dc, await stop);
		assert.strictEqual(got.reason, 'pause', `paused: ${JSON.stringify(got)}`);
		assert.ok([3, 4].includes(got.line), `paused in the loop: ${JSON.stringify(got)}`);
		const i = Number(got.locals.i);
		assert.ok(i > 0, `the loop ran: i = ${got.locals.i}`);
		const r = await dc.evaluateRequest({ expression: 'i * 2', context: 'repl' });
		assert.strictEqual(r.body.result, String(i * 2), 'an expression in the paused frame');
		const next = await act(dc, 'next');
		assert.ok([3, 4].includes(next.line), `a step from the pause: ${JSON.stringify(next)}`);
	} finally {
		await dc.stop();
	}
}

// endStop: the program's end is a stop (reason "end"), not the session's
// end: a step back from it reaches the entry's return, and a continue
// from the end ends the session (terminated).
async function endStop() {
	const dc = ndbgClient();
	await dc.start();
	try {
		const file = path.join(repo, 'examples', 'mean.py');
		dc.defaultTimeout = TIMEOUT;
		const first = nextStop(dc);
		first.catch(() => {});
		await Promise.all([
			dc.waitForEvent('initialized', TIMEOUT).then(() => dc.configurationDoneRequest()),
			dc.launch({ program: file, call: 'f([3, None, 4])', backend: 'real', stopOnEntry: false }),
		]);
		const ev = await first;
		assert.strictEqual(ev.event, 'stopped', `no breakpoint: the program stops at its end, not terminated: ${JSON.stringify(ev)}`);
		assert.strictEqual(ev.body.reason, 'end', `the end: ${JSON.stringify(ev.body)}`);
		checkStop('a step back from the end', await act(dc, 'stepBack'), [11, 'return', { data: '[3, None, 4]', clean: '[3, 4]', m: '3.5', __return__: '3.5' }]);
		assert.strictEqual(await act(dc, 'continue'), 'end', 'continue runs to the end again');
		const done = dc.waitForEvent('terminated', TIMEOUT);
		await dc.continueRequest({ threadId: 1 });
		await done;
	} finally {
		await dc.stop();
	}
}

// debugpyCopy writes prog with its call appended as module code, for
// debugpy, which runs whole scripts: the program's lines keep their numbers.
// A whole script (no call) is copied as it is.
function debugpyCopy(prog, dir) {
	const file = path.join(dir, path.basename(prog.file));
	fs.writeFileSync(file, fs.readFileSync(prog.file, 'utf8') + (prog.call ? '\n\n' + prog.call + '\n' : ''));
	return file;
}

function debugpyClient(dir) {
	return new DebugClient(args.python || '/usr/bin/python3', args.debugpy, 'python', { cwd: dir });
}

function debugpyLaunch(file) {
	return { type: 'python', request: 'launch', program: file, console: 'internalConsole', justMyCode: true, python: args.python || '/usr/bin/python3' };
}

// runStops runs a script (its breakpoints, then steps) on one adapter and
// returns every stop.
async function runStops(dc, launchArgs, file, script) {
	const stops = [await launch(dc, launchArgs, file, script[0].bp)];
	for (const step of script.slice(1)) {
		if (stops[stops.length - 1] === 'end') break;
		stops.push(await act(dc, step));
	}
	return stops;
}

// runCompare runs prog's compare script and returns the stops' lines and
// locals, what both debuggers show.
async function runCompare(dc, launchArgs, file, script) {
	const stops = await runStops(dc, launchArgs, file, script);
	return stops.map((s) => (s === 'end' || s.error ? s : { line: s.line, locals: s.locals }));
}

async function compareDebugpy(prog, script, dir) {
	const copy = debugpyCopy(prog, dir);
	const nd = ndbgClient();
	await nd.start();
	let ours;
	try {
		ours = await runCompare(nd, { program: prog.file, call: prog.call, backend: 'real' }, prog.file, script);
	} finally {
		await nd.stop();
	}
	const dp = debugpyClient(dir);
	await dp.start();
	let theirs;
	try {
		theirs = await runCompare(dp, debugpyLaunch(copy), copy, script);
	} finally {
		await dp.stop();
	}
	assert.deepStrictEqual(ours, theirs, `${path.basename(prog.file)}: ndbg's real backend and debugpy stop differently:\nndbg:    ${JSON.stringify(ours)}\ndebugpy: ${JSON.stringify(theirs)}`);
	return ours;
}

// checkDifference runs one documented difference (docs/editors.md) on
// both debuggers: each must stop where the document says.
async function checkDifference(prog, d, dir) {
	const copy = debugpyCopy(prog, dir);
	const nd = ndbgClient();
	await nd.start();
	try {
		const ours = await runStops(nd, { program: prog.file, call: prog.call, backend: 'real' }, prog.file, d.script);
		assertLast('ndbg', ours, d.ndbg);
	} finally {
		await nd.stop();
	}
	const dp = debugpyClient(dir);
	await dp.start();
	try {
		assertLast('debugpy', await runStops(dp, debugpyLaunch(copy), copy, d.script), d.debugpy);
	} finally {
		await dp.stop();
	}
}

// assertLast checks the last stop against want: 'end', or the fields given.
function assertLast(who, stops, want) {
	const last = stops[stops.length - 1];
	const msg = `${who}: want ${JSON.stringify(want)}, got ${JSON.stringify(last)}`;
	if (want === 'end') {
		assert.strictEqual(last, 'end', msg);
		return;
	}
	assert.ok(last !== 'end' && !last.error, msg);
	for (const [k, v] of Object.entries(want)) assert.strictEqual(last[k], v, msg);
}

async function main() {
	if (args.only === 'extra') { // the checks of one program or function, by name (--name)
		await extraChecks();
	} else {
		if (args.only !== 'debugpy') await ndbgChecks();
		if (args.only !== 'ndbg' && args.debugpy) await debugpyChecks();
	}
	console.log(failures === 0 ? 'PASS' : `${failures} failed`);
	process.exit(failures === 0 ? 0 : 1);
}

// extraChecks runs a part, for development: the real backend's script of
// the program named by --name (a file name in programs/ or examples/), its
// debugpy comparison with --debugpy, or the check named by --name.
async function extraChecks() {
	const checks = { 'function breakpoints': functionBreakpoints, pause: pauseLoop, 'the end stop': endStop };
	if (checks[args.name]) {
		try {
			await checks[args.name]();
			console.log(`ok ${args.name}`);
		} catch (err) {
			fail(args.name, err);
		}
		return;
	}
	const prog = programs.find((p) => path.basename(p.file) === args.name);
	if (!prog) throw new Error(`no program or check named ${args.name}`);
	const dc = ndbgClient();
	try {
		await dc.start();
		console.log(`ok ${await runScript(dc, prog, 'real')}`);
	} catch (err) {
		fail(`${args.name} real`, err);
	} finally {
		await dc.stop().catch(() => {});
	}
	if (!args.debugpy) return;
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ndbg-debugpy-'));
	try {
		const stops = await compareDebugpy(prog, prog.compare, dir);
		console.log(`ok debugpy agrees on ${args.name}: ${stops.length} stops`);
	} catch (err) {
		fail(`debugpy ${args.name}`, err);
	}
	fs.rmSync(dir, { recursive: true, force: true });
}

// ndbgChecks runs every program's script on each backend, the edit on the
// neural backend, and a script over TCP.
async function ndbgChecks() {
	for (const backend of ['real', 'neural', 'compare']) {
		for (const prog of programs) {
			const dc = ndbgClient();
			try {
				await dc.start();
				console.log(`ok ${await runScript(dc, prog, backend)}`);
			} catch (err) {
				fail(`${path.basename(prog.file)} ${backend}`, err);
			} finally {
				await dc.stop().catch(() => {});
			}
		}
	}
	for (const [name, fn] of [['neural setVariable', neuralEdit], ['tcp', overTCP], ['docs/editors', editorConfigs],
		['function breakpoints', functionBreakpoints], ['pause', pauseLoop], ['the end stop', endStop]]) {
		try {
			await fn();
			console.log(`ok ${name}`);
		} catch (err) {
			fail(name, err);
		}
	}
}

// debugpyChecks runs each program's compare script on ndbg's real backend
// and on debugpy, and each documented difference.
async function debugpyChecks() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ndbg-debugpy-'));
	for (const prog of programs) {
		for (const script of [prog.compare, ...(prog.compareMore || [])]) {
			try {
				const stops = await compareDebugpy(prog, script, dir);
				console.log(`ok debugpy agrees on ${path.basename(prog.file)} (${JSON.stringify(script[0].bp)}): ${stops.length} stops`);
			} catch (err) {
				fail(`debugpy ${path.basename(prog.file)} (${JSON.stringify(script[0].bp)})`, err);
			}
		}
		for (const d of prog.differs || []) {
			const what = `the documented difference on ${path.basename(prog.file)} (${JSON.stringify(d.script)})`;
			try {
				await checkDifference(prog, d, dir);
				console.log(`ok ${what}`);
			} catch (err) {
				fail(what, err);
			}
		}
	}
	fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((err) => {
	console.log(`FAIL ${err.stack}`);
	process.exit(1);
});
