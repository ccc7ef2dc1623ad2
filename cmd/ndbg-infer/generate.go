package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
)

// runGenerate continues a prompt: text through the tokenizer when the model
// has one, or token ids (--tokens) otherwise. Generated text streams to
// stdout as it is decoded; timings go to stderr.
func runGenerate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var e engineFlags
	e.register(fs)
	prompt := fs.String("prompt", "", "prompt text")
	ids := fs.String("tokens", "", "prompt as token ids, comma-separated (instead of --prompt)")
	maxTokens := fs.Int("max-tokens", 128, "tokens to generate at most")
	p := sample.Params{TopP: 1}
	cli.RegisterSampling(fs, &p)
	noStop := fs.Bool("ignore-eos", false, "do not stop at the model's end-of-sequence tokens")
	cli.SetUsage(fs, "ndbg-infer generate --model DIR (--prompt TEXT | --tokens ID,...) [--max-tokens N] [sampling flags]",
		"Streams the continuation of the prompt to stdout and a tokens/s line to stderr.")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if e.model == "" {
		return cli.Usagef("need --model DIR: generate continues a prompt with a checkpoint")
	}
	if (*prompt == "") == (*ids == "") {
		return cli.Usagef("need one of --prompt TEXT and --tokens ID,...")
	}
	if err := cli.AtLeast(cli.Bound{Flag: "max-tokens", Value: *maxTokens, Min: 1}, cli.Bound{Flag: "context", Value: e.context}); err != nil {
		return err
	}
	var input []int
	if *ids != "" {
		for _, f := range strings.Split(*ids, ",") {
			t, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || t < 0 {
				return cli.Usagef("--tokens: %q is not a token id (a non-negative integer)", strings.TrimSpace(f))
			}
			input = append(input, t)
		}
	}
	if err := cli.CheckSampling(p); err != nil {
		return err
	}
	smp, err := sample.New(p)
	if err != nil {
		return err
	}
	m, tok, err := e.load(ctx)
	if err != nil {
		return err
	}
	defer m.Close()

	switch {
	case *ids != "":
	case tok == nil:
		return errors.New("the model has no tokenizer.json: pass --tokenizer or --tokens")
	default:
		input = tok.Encode(*prompt)
	}
	if len(input) == 0 {
		return errors.New("empty prompt")
	}

	out := bufio.NewWriter(stdout)
	defer out.Flush()
	opts := model.GenerateOptions{MaxTokens: *maxTokens}
	if eos := m.EOS(); !*noStop && len(eos) > 0 {
		opts.Stop = func(t int) bool { return slices.Contains(eos, t) }
	}
	if tok != nil {
		dec := tok.NewStreamDecoder()
		opts.OnToken = func(t int) error {
			if opts.Stop != nil && opts.Stop(t) {
				return nil
			}
			if _, err := out.WriteString(dec.Next(t)); err != nil {
				return err
			}
			return out.Flush()
		}
		defer func() { out.WriteString(dec.Flush()) }()
	} else {
		first := true
		opts.OnToken = func(t int) error {
			if !first {
				out.WriteByte(' ')
			}
			first = false
			out.WriteString(strconv.Itoa(t))
			return out.Flush()
		}
	}
	g, err := model.Generate(ctx, m.NewSession(), input, smp, opts)
	if tok == nil {
		out.WriteByte('\n')
	}
	fmt.Fprintf(stderr, "\nprompt %d tokens in %.3fs (%.1f tok/s), generated %d tokens in %.3fs (%.1f tok/s), %s, %d threads\n",
		g.Prompt, g.Prefill.Seconds(), rate(g.Prompt, g.Prefill.Seconds()),
		len(g.Tokens), g.Decode.Seconds(), rate(len(g.Tokens)-1, g.Decode.Seconds()),
		m.Device().Name(), threadsOf(m))
	return err
}

// rate is n per second, 0 when nothing was timed.
func rate(n int, sec float64) float64 {
	if n <= 0 || sec <= 0 {
		return 0
	}
	return float64(n) / sec
}

func threadsOf(m *model.Model) int {
	if c, ok := m.Device().(*model.CPU); ok {
		return c.Threads()
	}
	return 0
}
