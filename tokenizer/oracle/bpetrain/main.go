// Command bpetrain trains a byte-level BPE tokenizer with package
// tokenizer's Train and writes a Hugging Face tokenizer.json:
//
//	go run ./tokenizer/oracle/bpetrain -vocab-size 8192 -pattern llama3 \
//	    -special '<|begin_of_text|>,<|end_of_text|>,<|frame_sep|>' -out tokenizer.json FILE...
//
// Each file is one training text (not split into lines).
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/ndbg/ndbg/tokenizer"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "bpetrain:", err)
		os.Exit(1)
	}
}

func run() error {
	vocab := flag.Int("vocab-size", 8192, "tokens in the result: special tokens, 256 bytes, merges")
	special := flag.String("special", "", "comma-separated special tokens, ids 0..k-1")
	pattern := flag.String("pattern", "llama3", "pre-tokenizer: llama3 or gpt2")
	minFreq := flag.Int("min-frequency", 2, "stop when the best pair is seen fewer times")
	out := flag.String("out", "", "tokenizer.json to write")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		flag.Usage()
		return fmt.Errorf("need -out and at least one input file")
	}
	start := time.Now()
	var texts []string
	size := 0
	for _, f := range flag.Args() {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("read corpus: %w", err)
		}
		texts = append(texts, string(data))
		size += len(data)
	}
	var sp []string
	if *special != "" {
		sp = strings.Split(*special, ",")
	}
	data, err := tokenizer.Train(texts, tokenizer.TrainOptions{VocabSize: *vocab, Special: sp, Pattern: *pattern, MinFrequency: *minFreq})
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, data, 0o644); err != nil {
		return fmt.Errorf("write tokenizer: %w", err)
	}
	tk, err := tokenizer.Parse(data)
	if err != nil {
		return fmt.Errorf("check result: %w", err)
	}
	n := 0
	for _, t := range texts {
		n += len(tk.Encode(t))
	}
	fmt.Fprintf(os.Stderr, "bpetrain: %d tokens from %d bytes in %.1fs; %.2f bytes per token on the training text\n",
		tk.VocabSize(), size, time.Since(start).Seconds(), float64(size)/float64(max(n, 1)))
	return nil
}
