//go:build !cuda

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeviceFlag: every mode takes --device (one parser, internal/cli);
// cuda in a build without it is a clear error, a name that is no device
// a usage error, and cpu and auto run.
func TestDeviceFlag(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "p.py")
	require.NoError(t, os.WriteFile(prog, []byte(sumSource), 0o644))
	gen := []string{"--model", "../../model/testdata/mha_f32", "--tokens", "1,2,3", "--max-tokens", "2"}
	predict := []string{"--program", prog, "--call", "f([1, 2])", "--action", "step_into"}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{append(gen, "--device", "cpu"), 0, ""},
		{append(gen, "--device", "auto"), 0, ""},
		{append(gen, "--device", "cuda"), 1, "-tags cuda"},
		{append(gen, "--device", "tpu"), 2, `--device "tpu": want cpu, cuda, auto`},
		{append(predict, "--device", "cuda"), 1, "-tags cuda"},
		{append(predict, "--device", "tpu"), 2, `--device "tpu"`},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, &out, &errb)
		require.Equal(t, c.code, code, "%v: %s", c.args, errb.String())
		require.Contains(t, errb.String(), c.msg, "%v", c.args)
	}
}
