package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/tokenizer"
)

// runTokenize is `ndbg tokenize`: it turns `ndbg data` shards into the token
// files train/train.py reads (see train/README.md): per split,
// SPLIT.tokens (uint32 ids, documents back to back), SPLIT.offsets (uint64
// document starts, one more than documents) and SPLIT.prompt (uint32 prompt
// length per document: the program source, which the model reads but is not
// trained to write), plus meta.json.
func runTokenize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tokPath := fs.String("tokenizer", "", "the tokenizer.json `FILE` (required)")
	out := fs.String("out", "", "the output `DIR` (required)")
	train := fs.String("train", "", "the `DIR` of ndbg data's shards for the training split (required)")
	val := fs.String("val", "", "the `DIR` of shards for the held-out split (required)")
	cli.SetUsage(fs, "ndbg tokenize --tokenizer FILE --train DIR --val DIR --out DIR",
		"Writes SPLIT.tokens, SPLIT.offsets, SPLIT.prompt per split and meta.json to --out, for train/train.py.")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if err := cli.NoArgs(fs); err != nil {
		return err
	}
	if *tokPath == "" || *out == "" || *train == "" || *val == "" {
		return cli.Usagef("need --tokenizer, --train, --val and --out")
	}
	tok, err := tokenizer.Load(*tokPath)
	if err != nil {
		return err
	}
	ids := map[string]int{}
	for _, name := range []string{dsl.BeginOfText, dsl.EndOfText, dsl.FrameSep} {
		id, ok := tok.TokenID(name)
		if !ok {
			return fmt.Errorf("tokenizer %s lacks the DSL token %s", *tokPath, name)
		}
		ids[name] = id
	}
	for _, s := range dsl.SpecialTokens() {
		if _, ok := tok.TokenID(s.Text); !ok {
			return fmt.Errorf("tokenizer %s lacks the DSL token %s", *tokPath, s.Text)
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	python := ""
	for _, split := range []struct{ name, dir string }{{"train", *train}, {"val", *val}} {
		n, tokens, py, err := tokenizeSplit(ctx, tok, ids[dsl.FrameSep], split.dir, filepath.Join(*out, split.name))
		if err != nil {
			return fmt.Errorf("%s split: %w", split.name, err)
		}
		if python == "" {
			python = py
		}
		fmt.Fprintf(stdout, "%-5s %d trajectories, %d tokens (%.1f per trajectory)\n", split.name, n, tokens, float64(tokens)/float64(max(n, 1)))
	}
	meta := map[string]any{"vocab_size": tok.VocabSize(), "bos_id": ids[dsl.BeginOfText], "eos_id": ids[dsl.EndOfText],
		"pad_id": ids[dsl.EndOfText], "python": python, "tokenizer": filepath.Base(*tokPath)}
	data, err := json.MarshalIndent(meta, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(*out, "meta.json"), append(data, '\n'), 0o644)
}

// tokenizeSplit encodes every trajectory of dir's shards in file order.
func tokenizeSplit(ctx context.Context, tok *tokenizer.Tokenizer, frameSep int, dir, base string) (docs, tokens int, python string, err error) {
	shards, err := filepath.Glob(filepath.Join(dir, "shard-*.jsonl"))
	if err != nil || len(shards) == 0 {
		return 0, 0, "", fmt.Errorf("no shard-*.jsonl in %s", dir)
	}
	slices.Sort(shards)
	if st, err := os.ReadFile(filepath.Join(dir, "stats.json")); err == nil {
		var s struct{ Python string }
		if json.Unmarshal(st, &s) == nil {
			python, _, _ = strings.Cut(s.Python, " ")
		}
	}
	files := map[string]*bufio.Writer{}
	for _, ext := range []string{"tokens", "offsets", "prompt"} {
		f, err := os.Create(base + "." + ext)
		if err != nil {
			return 0, 0, "", err
		}
		defer f.Close()
		w := bufio.NewWriterSize(f, 1<<20)
		files[ext] = w
	}
	var buf []int
	var offset uint64
	put := func(w *bufio.Writer, v any) {
		if err == nil {
			err = binary.Write(w, binary.LittleEndian, v)
		}
	}
	put(files["offsets"], offset)
	for _, path := range shards {
		f, err := os.Open(path)
		if err != nil {
			return 0, 0, "", err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			if err := ctx.Err(); err != nil {
				f.Close()
				return 0, 0, "", err
			}
			var rec struct{ Text string }
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
				f.Close()
				return 0, 0, "", fmt.Errorf("%s: %w", path, err)
			}
			buf = tok.AppendEncode(buf[:0], rec.Text)
			prompt := slices.Index(buf, frameSep) + 1
			if prompt == 0 {
				f.Close()
				return 0, 0, "", fmt.Errorf("%s: a trajectory without %s", path, dsl.FrameSep)
			}
			ids := make([]uint32, len(buf))
			for i, id := range buf {
				ids[i] = uint32(id)
			}
			put(files["tokens"], ids)
			offset += uint64(len(ids))
			put(files["offsets"], offset)
			put(files["prompt"], uint32(prompt))
			docs++
			tokens += len(ids)
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return 0, 0, "", fmt.Errorf("%s: %w", path, err)
		}
	}
	for _, w := range files {
		if ferr := w.Flush(); err == nil {
			err = ferr
		}
	}
	return docs, tokens, python, err
}
