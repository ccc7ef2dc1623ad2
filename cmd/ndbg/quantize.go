package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/internal/quantize"
	"github.com/ndbg/ndbg/model"
)

// runQuantize is `ndbg quantize`: a model (the embedded default, a Hugging
// Face checkpoint directory or a GGUF file; or, with --random, a preset's
// shape with random weights, for benchmarks) written as a GGUF file that
// llama.cpp reads, its matrices quantized as llama.cpp's llama-quantize
// quantizes them (ndbg.Quantize).
func runQuantize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("quantize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("model", "", "model directory or GGUF file (default: the model embedded in the binary)")
	random := fs.String("random", "", "instead of a model, a preset's shape with random weights ("+strings.Join(model.PresetNames(), ", ")+"), for benchmarks: the file has no text tokenizer")
	seed := fs.Uint64("seed", 1, "with --random: the seed of the weights")
	typ := fs.String("type", "", "what the matrices become: "+strings.Join(ndbg.QuantizeTypes, ", ")+" (q4_k_m: llama.cpp's mix of Q4_K and Q6_K)")
	format := fs.String("format", "gguf", "gguf (a file llama.cpp reads) or safetensors (a Hugging Face checkpoint directory: config.json, tokenizer.json, model.safetensors with the quantized rows as U8, marked in its metadata)")
	out := fs.String("out", "", "the GGUF file to write, or with --format safetensors the directory (which must not exist)")
	threads := fs.Int("threads", 0, "threads that quantize (0: one per core)")
	cli.SetUsage(fs, "ndbg quantize --type TYPE --out PATH [--model DIR|FILE | --random PRESET [--seed N]] [--format gguf|safetensors] [--threads N]",
		"the model's matrices quantized, written as a GGUF file for llama.cpp (or a safetensors checkpoint directory)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	switch {
	case *typ == "" || *out == "":
		return cli.Usagef("--type and --out are required")
	case fs.NArg() > 0:
		return cli.Usagef("unexpected arguments %q", fs.Args())
	case *random != "" && *dir != "":
		return cli.Usagef("--random and --model exclude each other")
	case *threads < 0:
		return cli.Usagef("--threads %d cannot be negative", *threads)
	case *format != "gguf" && *format != "safetensors":
		return cli.Usagef("--format %q: want gguf or safetensors", *format)
	case *format == "safetensors" && *random != "":
		return cli.Usagef("--random writes GGUF files only (the benchmarks' files)")
	}
	known := false
	for _, t := range ndbg.QuantizeTypes {
		known = known || strings.EqualFold(t, *typ)
	}
	if !known {
		return cli.Usagef("--type %q: want one of %s", *typ, strings.Join(ndbg.QuantizeTypes, ", "))
	}
	if *format == "safetensors" {
		return quantizeDir(ctx, *dir, *typ, *out, *threads, stdout)
	}
	// Write beside the destination and rename, so that a failed or
	// interrupted run leaves no partial file under the name.
	tmp, err := os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if *random != "" {
		cfg, err := model.Preset(*random)
		if err != nil {
			return cli.Usagef("--random: %v", err)
		}
		err = quantize.Random(ctx, &cfg, "ndbg random "+*random, *typ, *seed, *threads, tmp)
	} else {
		err = ndbg.Quantize(ctx, ndbg.Options{Dir: *dir, Threads: *threads}, *typ, tmp)
	}
	if err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return errors.Join(err, os.Remove(tmp.Name()))
	}
	st, err := os.Stat(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s, %.1f MB)\n", *out, strings.ToLower(*typ), float64(st.Size())/1e6)
	return nil
}

// quantizeDir is `ndbg quantize --format safetensors`: the model as a
// Hugging Face checkpoint directory out, written beside it and renamed, so
// that a failed or interrupted run leaves nothing under the name.
func quantizeDir(ctx context.Context, model, typ, out string, threads int, stdout io.Writer) error {
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("quantize: %s exists: name a new directory", out)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(out), "."+filepath.Base(out)+".*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := ndbg.QuantizeSafetensors(ctx, ndbg.Options{Dir: model, Threads: threads}, typ, tmp); err != nil {
		return err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	st, err := os.Stat(filepath.Join(out, "model.safetensors"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s, model.safetensors %.1f MB)\n", out, strings.ToLower(typ), float64(st.Size())/1e6)
	return nil
}
