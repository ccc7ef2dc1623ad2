package main

import (
	"bytes"
	"context"
	"testing"

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
