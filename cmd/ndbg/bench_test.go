package main

import (
	"bytes"
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBenchMachine: `ndbg bench --machine` prints the machine's table alone
// (train/flops.py reads its FMA peak), one row per thread count.
func TestBenchMachine(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--machine", "--threads", "1"}, &out, &errb)
	require.Equal(t, 0, code, errb.String())
	require.Regexp(t, regexp.MustCompile(`(?m)^\| 1 \| [0-9.]+ \| [0-9.]+ \|$`), out.String())
	require.NotContains(t, out.String(), "| model |")
}
