package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/model"
)

// runLogits prints the model's logits after every token of a sequence as
// JSON, for checking the engine against another implementation:
//
//	{"vocab": V, "tokens": [t0, ...], "logits": [[row 0], [row 1], ...]}
//
// Row i holds the logits after tokens[0..i] (one batched prefill). Values
// are float32, printed with the shortest representation that reads back
// exactly.
func runLogits(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("logits", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("model", "", "checkpoint directory (config.json + safetensors) or GGUF file")
	list := fs.String("tokens", "", "token ids, comma-separated")
	var comp cli.Compute
	comp.Register(fs)
	cli.SetUsage(fs, "ndbg logits --model DIR --tokens ID,ID,... [--threads N] [--device D]")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *dir == "" || *list == "" {
		return cli.Usagef("need --model DIR and --tokens ID,ID,...")
	}
	var tokens []int
	for _, f := range strings.Split(*list, ",") {
		t, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || t < 0 {
			return cli.Usagef("--tokens: %q is not a token id (a non-negative integer)", strings.TrimSpace(f))
		}
		tokens = append(tokens, t)
	}
	dev, err := comp.OpenDevice()
	if err != nil {
		return err
	}
	m, err := model.Load(ctx, *dir, model.Options{Device: dev, CloseDevice: true, Threads: comp.Threads})
	if err != nil {
		return err
	}
	defer m.Close()
	logits, err := m.NewSession().Forward(ctx, tokens, true)
	if err != nil {
		return err
	}
	V := m.Config().VocabSize
	w := bufio.NewWriterSize(stdout, 1<<16)
	fmt.Fprintf(w, "{\"vocab\": %d, \"tokens\": [", V)
	for i, t := range tokens {
		if i > 0 {
			w.WriteString(", ")
		}
		w.WriteString(strconv.Itoa(t))
	}
	w.WriteString("], \"logits\": [")
	buf := make([]byte, 0, 32)
	for i := range tokens {
		if i > 0 {
			w.WriteString(",")
		}
		w.WriteString("\n  [")
		for j, v := range logits[i*V : (i+1)*V] {
			if j > 0 {
				w.WriteByte(',')
			}
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				w.WriteString("null") // JSON has no NaN or Inf
				continue
			}
			w.Write(strconv.AppendFloat(buf[:0], float64(v), 'g', -1, 32))
		}
		w.WriteString("]")
	}
	w.WriteString("\n]}\n")
	return w.Flush()
}
