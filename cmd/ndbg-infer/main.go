// Command ndbg-infer runs ndbg's neural debugger and its engine.
//
//	ndbg-infer [predict] --program FILE --call EXPR --action ACTION [--compare] [--model DIR]
//	ndbg-infer --cruxeval-o|--cruxeval-i --item ITEM.json [--strategy S] [--model DIR]
//	ndbg-infer [generate] --model DIR --prompt TEXT [--max-tokens N]
//	           [--temperature T --top-k K --top-p P --seed S] [--threads N]
//
// predict is `ndbg predict` (package internal/predict, one implementation
// for both commands). predict and cruxeval use the default model embedded in the binary unless
// --model names another. generate (the mode without --program or
// --cruxeval-o/-i) streams the continuation of a prompt by a checkpoint
// (--model is required there) to stdout and a tokens/s line to stderr. Each
// mode, registered in modes(), parses its own flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/internal/predict"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/tokenizer"
)

// mode is one way of running the engine.
type mode struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func modes() []mode {
	return []mode{
		{"generate", "continue a prompt (default mode without --program)", runGenerate},
		{"predict", "predict the debugger state after an action (default mode with --program)", predict.Run},
		{"cruxeval", "predict a CRUXEval item's output or input, scored by execution (default with --cruxeval-o/-i)", runCRUXEval},
	}
}

func main() { cli.Main(run) }

// run picks the mode and runs it; it returns the exit status: 0, 1 when
// the mode failed, 2 for a usage error.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ms := modes()
	if code, done := cli.Meta("ndbg-infer", args, stdout, stderr, func(w io.Writer) { usage(w, ms) }); done {
		return code
	}
	if args[0] == "help" {
		usage(stdout, ms)
		return 0
	}
	m := ms[0] // generate
	for _, a := range args {
		switch strings.TrimLeft(strings.SplitN(a, "=", 2)[0], "-") {
		case "program":
			m = ms[1] // predict
		case "cruxeval-o", "cruxeval-i":
			m = ms[2] // cruxeval
		}
	}
	named := false
	for _, c := range ms {
		if c.name == args[0] {
			m, args, named = c, args[1:], true
			break
		}
	}
	if !named && !strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "ndbg-infer: unknown mode %q\n", args[0])
		usage(stderr, ms)
		return 2
	}
	return cli.Finish(stderr, "ndbg-infer", m.name, m.run(ctx, args, stdout, stderr))
}

func usage(w io.Writer, ms []mode) {
	fmt.Fprintln(w, `usage: ndbg-infer [mode] [flags]

  ndbg-infer --program FILE --call EXPR --action ACTION [--compare | --no-exec]   predict (the embedded model unless --model DIR)
  ndbg-infer --cruxeval-o|--cruxeval-i --item ITEM.json             one CRUXEval item, scored
  ndbg-infer generate --model DIR --prompt TEXT                      continue a prompt with a checkpoint
  ndbg-infer --version

modes:`)
	for _, m := range ms {
		fmt.Fprintf(w, "  %-10s %s\n", m.name, m.summary)
	}
	fmt.Fprintln(w, "\nRun ndbg-infer <mode> -h for a mode's flags.")
}

// engineFlags are the flags every mode shares: where the model is and how
// to run it.
type engineFlags struct {
	model, tokenizer string
	context          int
	fastBF16         bool
	cli.Compute      // --threads, --device
}

func (e *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&e.model, "model", "", "checkpoint directory (config.json + safetensors)")
	fs.StringVar(&e.tokenizer, "tokenizer", "", "tokenizer.json (default: DIR/tokenizer.json)")
	e.Compute.Register(fs)
	fs.IntVar(&e.context, "context", 0, "cap the context length (0: the model's)")
	fs.BoolVar(&e.fastBF16, "fast-bf16", false, "round activations to BF16 in BF16 matrix products on the CPU (faster prefill)")
}

// load opens the model and, when one is found, its tokenizer (nil
// otherwise: modes then read and write token ids).
func (e *engineFlags) load(ctx context.Context) (*model.Model, *tokenizer.Tokenizer, error) {
	if e.model == "" {
		return nil, nil, cli.Usagef("need --model DIR")
	}
	dev, err := e.OpenDevice()
	if err != nil {
		return nil, nil, err
	}
	m, err := model.Load(ctx, e.model, model.Options{Device: dev, CloseDevice: true, Threads: e.Threads,
		Context: e.context, FastBF16: e.fastBF16})
	if err != nil {
		return nil, nil, err
	}
	path := e.tokenizer
	if path == "" {
		path = filepath.Join(e.model, "tokenizer.json")
		if _, err := os.Stat(path); err != nil {
			return m, nil, nil
		}
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("tokenizer: %w", err)
	}
	cfg := m.Config()
	if err := tok.CheckModel(cfg.VocabSize, cfg.BOSTokenID, cfg.EOSTokenIDs); err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, tok, nil
}
