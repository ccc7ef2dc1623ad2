package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPredictIsNdbgInfer: `ndbg predict ARGS` and `ndbg-infer ARGS` (the
// command the README starts with, built here from its source) print the
// same output and exit with the same status, for a neural prediction
// compared with the real run, a real backend's, and a usage error.
func TestPredictIsNdbgInfer(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build ndbg-infer with")
	}
	infer := filepath.Join(t.TempDir(), "ndbg-infer")
	out, err := exec.Command(gobin, "build", "-o", infer, "../ndbg-infer").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--program", "../../examples/mean.py", "--call", "f([3, None, 4])", "--action", "step_return", "--compare"}, 0},
		{[]string{"--program", "../../examples/mean.py", "--call", "f([3, 4])", "--actions", "step_over step_over", "--action", "breakpoint:4", "--backend", "real"}, 0},
		{[]string{"--program", "../../examples/mean.py", "--action", "step_into"}, 2}, // no --call
	} {
		args := c.args
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), append([]string{"predict"}, args...), &stdout, &stderr)
		cmd := exec.Command(infer, args...)
		var istdout bytes.Buffer
		cmd.Stdout = &istdout
		err := cmd.Run()
		icode := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			icode = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		require.Equal(t, c.code, code, "%q: ndbg predict's exit status (stderr: %s)", args, stderr.String())
		require.Equal(t, c.code, icode, "%q: ndbg-infer's exit status", args)
		require.Equal(t, istdout.String(), stdout.String(), "%q", args)
		if code == 0 {
			require.NotEmpty(t, stdout.String())
		}
	}
}
