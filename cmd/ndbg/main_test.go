package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommandLine(t *testing.T) {
	runCmd := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errOut := runCmd()
	require.Equal(t, 2, code, "no command is a usage error")
	require.Empty(t, out)
	require.Contains(t, errOut, "usage: ndbg <command>")

	code, out, _ = runCmd("help")
	require.Equal(t, 0, code)
	require.Contains(t, out, "usage: ndbg <command>")

	code, out, _ = runCmd("help", "debug")
	require.Equal(t, 0, code)
	require.Contains(t, out, "usage: ndbg debug FILE [--call EXPR]", "help CMD is CMD's usage")
	require.NotContains(t, out, "usage: ndbg <command>")

	code, out, _ = runCmd("--version")
	require.Equal(t, 0, code)
	require.Contains(t, out, "ndbg ")
	require.Contains(t, out, "default model: weights/default")

	code, _, errOut = runCmd("nonsense")
	require.Equal(t, 2, code)
	require.Contains(t, errOut, `unknown command "nonsense"`)
}

// TestUsageErrorsExit2: every flag or argument a command cannot run with
// exits 2 (the README's usage error), saying what is wrong, before any
// model is loaded or program run; a missing program file is a failure
// (1) that says so. Each line here exited 1 (or 0, or ran) before.
func TestUsageErrorsExit2(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "f.py")
	require.NoError(t, os.WriteFile(prog, []byte("def f(x):\n    return x\n"), 0o644))
	missing := filepath.Join(t.TempDir(), "nosuch.py")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"data", "--n", "1"}, "need --out DIR"},
		{[]string{"data", "--out", "x", "extra"}, "unexpected arguments"},
		{[]string{"data", "--out", "x", "--n", "0"}, "--n 0: want at least 1"},
		{[]string{"data", "--out", "x", "--families", "nope"}, `--families: unknown "nope"`},
		{[]string{"data", "--out", "x", "--shard", "0"}, "--shard 0"},
		{[]string{"logits"}, "need --model DIR and --tokens"},
		{[]string{"logits", "--model", "m", "--tokens", "1,a"}, `--tokens: "a" is not a token id`},
		{[]string{"eval", "--tasks", "foo"}, `--tasks: unknown "foo"`},
		{[]string{"eval", "--n", "-1"}, "--n -1: want at least 0"},
		{[]string{"eval", "--families", "nope"}, `--families: unknown "nope"`},
		{[]string{"eval", "--strategies", "guess"}, `--strategies: unknown "guess"`},
		{[]string{"eval", "--pairs", "some"}, `--pairs: unknown "some"`},
		{[]string{"eval", "--tasks", "cruxeval"}, "needs --items"},
		{[]string{"eval", "--top-p", "2"}, "top-p"},
		{[]string{"eval", "extra"}, "unexpected arguments"},
		{[]string{"bench", "extra"}, "unexpected arguments"},
		{[]string{"bench", "--threads", "-1"}, `--threads: "-1"`},
		{[]string{"bench", "--models", "huge"}, `--models: unknown "huge"`},
		{[]string{"bench", "--dtypes", "f8"}, `--dtypes: unknown "f8"`},
		{[]string{"tokenize"}, "need --tokenizer, --train, --val and --out"},
		{[]string{"predict", "--program", prog, "--call", "f(1)", "--action", "bogus"}, `--action: `},
		{[]string{"predict", "--program", prog, "--call", "f", "--action", "step_over"}, "--call: "},
		{[]string{"predict", "--program", prog, "--call", "f(1)", "--state", "{"}, "--state: "},
		{[]string{"predict", "--program", prog, "--call", "f(1)", "--top-p", "2"}, "top-p 2"},
		{[]string{"debug", prog, "--call", "f(1)", "--temperature", "-1"}, "temperature -1"},
		{[]string{"trace", prog, "--call", "f"}, "--call: "},
		{[]string{"debug", prog, prog, "--call", "f(1)"}, "need one FILE, got 2"},
		{[]string{"debug", prog, "--backend", "bogus"}, `--backend "bogus"`},
		{[]string{"debug", prog, "--call", "f"}, "--call: "},
		{[]string{"debug", prog}, "debugging a whole script needs --backend real"},
		{[]string{"serve", "--backends", "nope"}, `--backends: unknown "nope"`},
		{[]string{"dap", "extra"}, "dap takes no arguments"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, &out, &errb)
		assert.Equal(t, 2, code, "%q: %s", c.args, errb.String())
		assert.Contains(t, errb.String(), c.want, "%q", c.args)
	}
	// A missing file is no usage error, and says so, whatever else is
	// missing.
	for _, args := range [][]string{{"debug", missing}, {"debug", missing, "--call", "f(1)"}, {"trace", missing, "--call", "f(1)"}} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, &out, &errb)
		assert.Equal(t, 1, code, "%q", args)
		assert.Contains(t, errb.String(), "no such file or directory", "%q", args)
	}
}

// TestEveryHelp: `ndbg help CMD` prints CMD's usage line and its flags,
// each named with a one-word argument (flag's usage text takes a
// back-quoted word as the argument's name: `ndbg data` once made
// "-train ndbg data").
func TestEveryHelp(t *testing.T) {
	flagLine := regexp.MustCompile(`^  -[a-z0-9-]+( [A-Za-z0-9]+)?$`)
	for _, c := range commands() {
		var out, errb bytes.Buffer
		require.Equal(t, 0, run(context.Background(), []string{"help", c.name}, &out, &errb), c.name)
		text := out.String()
		assert.True(t, strings.HasPrefix(text, "usage: ndbg "+c.name), "%s:\n%s", c.name, text)
		n := 0
		for _, l := range strings.Split(text, "\n") {
			if strings.HasPrefix(l, "  -") {
				n++
				assert.Regexp(t, flagLine, l, c.name)
			}
		}
		assert.Positive(t, n, "%s lists its flags", c.name)
	}
}
