package cli

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// --threads and --device are parsed once, here, for every command: bad
// values are usage errors (exit status 2) that name the flag.
func TestComputeFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		msg  string // "" for none
	}{
		{nil, ""},
		{[]string{"--device", "cpu", "--threads", "3"}, ""},
		{[]string{"--device", "cuda"}, ""}, // a name it knows; whether it is built in shows when opened
		{[]string{"--device", "tpu"}, `--device "tpu": want cpu, cuda, auto`},
		{[]string{"--threads", "-1"}, "--threads -1 cannot be negative"},
	} {
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		var comp Compute
		comp.Register(fs)
		require.NoError(t, Parse(fs, c.args))
		err := comp.Check()
		if c.msg == "" {
			require.NoError(t, err, "%v", c.args)
			continue
		}
		require.ErrorContains(t, err, c.msg, "%v", c.args)
		code, print := ExitStatus(err)
		require.Equal(t, 2, code)
		require.True(t, print)
	}
	var comp Compute
	comp.Register(flag.NewFlagSet("x", flag.ContinueOnError))
	require.Equal(t, "auto", comp.Device, "the default")
}
