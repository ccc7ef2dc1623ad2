package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ndbg/ndbg/eval"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/sample"
)

// runCRUXEval is the CRUXEval mode: on one item (JSON with code, input and
// output, as in CRUXEval's files), predict the output of f(input)
// (--cruxeval-o, with the step_return, breakpoint or steps strategy) or an
// input that gives the output (--cruxeval-i: back from the return to the
// call), score it the official way (executing the assert in a fresh
// python3), and print both as JSON.
//
//	ndbg-infer --cruxeval-o --item ITEM.json [--strategy step_return] [--model DIR]
//	ndbg-infer --cruxeval-i --item ITEM.json [--model DIR]
func runCRUXEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("cruxeval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	outMode := fs.Bool("cruxeval-o", false, "predict the output of f(input)")
	inMode := fs.Bool("cruxeval-i", false, "predict an input of f that gives the output")
	itemPath := fs.String("item", "", "the item: a JSON file with code, input and output (- reads stdin)")
	strategy := fs.String("strategy", eval.StepReturn, "for -O: step_return, breakpoint or steps")
	var bf cli.BackendFlags
	bf.Register(fs, cli.Neural, cli.Real)
	cli.SetUsage(fs, "ndbg-infer --cruxeval-o|--cruxeval-i --item ITEM.json [--strategy S] [--model DIR | --backend real]",
		"Predicts the item's output (-o) or an input (-i), scores it by running the item's assert, and prints both as JSON.")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *outMode == *inMode || *itemPath == "" || fs.NArg() > 0 {
		fs.Usage()
		return cli.Usagef("need exactly one of --cruxeval-o and --cruxeval-i, and --item")
	}
	if err := bf.Check(); err != nil {
		return err
	}
	if _, err := cli.List("strategy", *strategy, eval.Strategies()); err != nil {
		return err
	}
	data, err := cli.ReadFile(ctx, "the item", *itemPath)
	if err != nil {
		return err
	}
	var raw struct {
		ID     string `json:"id"`
		Code   string `json:"code"`
		Input  string `json:"input"`
		Output string `json:"output"`
	}
	if err := json.Unmarshal([]byte(data), &raw); err != nil {
		return fmt.Errorf("--item %s: %w", *itemPath, err)
	}
	if raw.Code == "" || raw.Input == "" || raw.Output == "" {
		return fmt.Errorf("--item %s needs code, input and output", *itemPath)
	}
	strat := *strategy
	if *inMode {
		strat = eval.Inverse
	} else if strat == eval.Inverse {
		return errors.New("--strategy inverse is --cruxeval-i")
	}
	m, err := bf.OpenModel(ctx)
	if err != nil {
		return err
	}
	b := eval.Real(bf.Limits)
	if m != nil {
		defer m.Close()
		b = eval.Neural(m, sample.Params{})
	}
	item := eval.Item{ID: raw.ID, Family: "items", Source: raw.Code, Entry: "f",
		Call: "f(" + raw.Input + ")", Input: raw.Input, Output: raw.Output}
	res, err := eval.CRUXEval(ctx, eval.CruxConfig{Items: []eval.Item{item}, Backend: b,
		Scorer: &eval.Scorer{Unsandboxed: bf.Limits.Unsandboxed}, Strategies: []string{strat}, Workers: 1})
	if err != nil {
		return err
	}
	p := res.PerItem[0].Predictions[strat][0]
	out := map[string]any{"strategy": strat, "reference": raw.Output, "pass": p.Pass}
	if *inMode {
		// CRUXEval's form of an input is the arguments alone ("[]", "'a', 3"):
		// take them out of the call eval.Call wrote, f(...).
		out["input"] = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(p.Answer), item.Entry+"("), ")")
	} else {
		out["output"] = p.Answer
	}
	if p.Error != "" {
		out["error"] = p.Error
	}
	enc := json.NewEncoder(stdout)
	return enc.Encode(out)
}
