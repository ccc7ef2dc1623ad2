// Command ndbg is the neural debugger's toolbox: real traces, datasets,
// logits for checking the engine, benchmarks, the interactive debugger and
// the evaluation harness. Run `ndbg help` for the subcommands.
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/internal/predict"
)

// command is one subcommand: it parses its own flags from args.
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		// Each subcommand lives in its own file, named after it (predict, in
		// internal/predict, is shared with ndbg-infer).
		{"logits", "print a model's logits at every position of a token sequence (JSON)", runLogits},
		{"bench", "measure prefill/decode throughput against bandwidth and FMA peak", runBench},
		{"quantize", "write a model as a GGUF file for llama.cpp, quantized as llama-quantize does (Q8_0, Q4_K_M, ...)", runQuantize},
		{"predict", "predict the debugger state after an action (JSON; the job of ndbg-infer --program)", predict.Run},
		{"trace", "print the real debugger states of one call (JSON or DSL)", runTrace},
		{"data", "generate programs, trace them and write DSL trajectory shards", runData},
		{"tokenize", "turn data shards into token files for train/train.py", runTokenize},
		{"eval", "next-state exact match and CRUXEval-O/-I pass@1 of a model (or of the real debugger)", runEval},
		{"debug", "an interactive debugger (pdb-like) that predicts states", runDebug},
		{"dap", "a Debug Adapter Protocol server for editors (stdio, or --listen ADDR)", runDap},
		{"serve", "the debugger over HTTP/JSON for agents (GET /openapi.json)", runServe},
		{"mcp", "the debugger as an MCP server for coding agents (stdio, or --listen ADDR)", runMCP},
	}
}

func main() { cli.Main(run) }

// run runs the command args name and returns the exit status: 0, 1 when
// the command failed, 2 for a usage error (no or an unknown command, bad
// flags).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if code, done := cli.Meta("ndbg", args, stdout, stderr, func(w io.Writer) { usage(w, cmds) }); done {
		return code
	}
	if args[0] == "help" {
		if len(args) == 1 {
			usage(stdout, cmds)
			return 0
		}
		// help CMD is CMD -h, its usage on stdout.
		args, stderr = []string{args[1], "-h"}, stdout
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return cli.Finish(stderr, "ndbg", c.name, c.run(ctx, args[1:], stdout, stderr))
		}
	}
	fmt.Fprintf(stderr, "ndbg: unknown command %q\n", args[0])
	usage(stderr, cmds)
	return 2
}

func usage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "usage: ndbg <command> [flags]   (ndbg help <command>: its flags; ndbg --version)\n\ncommands:")
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}
