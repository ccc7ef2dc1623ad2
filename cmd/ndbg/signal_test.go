package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/cli"
)

// mainEnv makes TestMainProcess run ndbg's main with the arguments after
// "--": the test binary is then the ndbg command, so that a test can send
// a real process real signals.
const mainEnv = "NDBG_TEST_RUN_MAIN"

// TestMainProcess is not a test: it is ndbg's main, run by startMain in a
// child process.
func TestMainProcess(t *testing.T) {
	if os.Getenv(mainEnv) == "" {
		t.Skip("runs only as startMain's child process")
	}
	for i, a := range os.Args {
		if a == "--" {
			os.Args = append([]string{"ndbg"}, os.Args[i+1:]...)
			break
		}
	}
	cli.Main(run)
}

// child is ndbg running in a child process, its stdin a pipe the test
// holds open (a user at the prompt who types nothing).
type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
	stderr *syncBuffer
	exited chan error
}

// startMain runs ndbg with args in a child process.
func startMain(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestMainProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	c := &child{cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout), stderr: &syncBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = c.stderr
	require.NoError(t, cmd.Start())
	go func() { c.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		stdin.Close()
		if cmd.ProcessState == nil {
			cmd.Process.Kill() // only if the test failed before it exited
		}
	})
	return c
}

// waitFor reads the child's stdout up to and including want.
func (c *child) waitFor(t *testing.T, want string) string {
	t.Helper()
	var got strings.Builder
	for !strings.HasSuffix(got.String(), want) {
		b, err := c.stdout.ReadByte()
		require.NoError(t, err, "waiting for %q; read %q; stderr %s", want, got.String(), c.stderr.String())
		got.WriteByte(b)
	}
	return got.String()
}

// signalled sends sig to the child and waits for it to exit: within a
// minute, else the test fails (the defect: only SIGKILL stopped it). It
// returns the exit status.
func (c *child) signalled(t *testing.T, sig syscall.Signal) int {
	t.Helper()
	require.NoError(t, c.cmd.Process.Signal(sig))
	select {
	case err := <-c.exited:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("waiting for ndbg: %v", err)
		}
		require.False(t, c.cmd.ProcessState.Sys().(syscall.WaitStatus).Signaled(), "ndbg died of the signal instead of shutting down")
		return c.cmd.ProcessState.ExitCode()
	case <-time.After(time.Minute):
		t.Fatalf("ndbg still runs a minute after %v; stderr: %s", sig, c.stderr.String())
		return -1
	}
}

// TestPromptStopsOnSignal: `ndbg debug` waiting at its prompt stops at
// SIGTERM (Ctrl-C is pdb's there: it stops a running program, not ndbg),
// and `ndbg dap` and `ndbg mcp` waiting for the next message on stdin stop
// at SIGTERM and at SIGINT (issue 28: they ignored both until SIGKILL).
func TestPromptStopsOnSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs ndbg in child processes")
	}
	file := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(file, []byte(debugProgram), 0o644))
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run("debug/"+sig.String(), func(t *testing.T) {
			if sig == syscall.SIGINT {
				t.Skip("ndbg debug takes Ctrl-C as pdb does: it stops the running program, and does not end ndbg")
			}
			c := startMain(t, "debug", file, "--call", "f([1])", "--backend", "real")
			c.waitFor(t, "(ndbg) ")
			require.Equal(t, 1, c.signalled(t, sig), c.stderr.String())
			require.Contains(t, c.stderr.String(), "signal")
		})
		t.Run("dap/"+sig.String(), func(t *testing.T) {
			c := startMain(t, "dap")
			_, err := io.WriteString(c.stdin, frame(1, "initialize"))
			require.NoError(t, err)
			c.waitFor(t, `"command":"initialize"`)
			require.Equal(t, 1, c.signalled(t, sig), c.stderr.String())
			require.Contains(t, c.stderr.String(), "signal")
		})
		t.Run("mcp/"+sig.String(), func(t *testing.T) {
			c := startMain(t, "mcp", "--backends", "real")
			_, err := io.WriteString(c.stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
			require.NoError(t, err)
			c.waitFor(t, "\n")
			require.Equal(t, 0, c.signalled(t, sig), c.stderr.String())
		})
	}
}

// TestPromptStopsOnCancel is the same in process: the context Main gives
// a command (which the first signal cancels) ends the wait for input.
func TestPromptStopsOnCancel(t *testing.T) {
	file := filepath.Join(t.TempDir(), "prog.py")
	require.NoError(t, os.WriteFile(file, []byte(debugProgram), 0o644))
	for _, cmd := range []string{"debug", "dap"} {
		t.Run(cmd, func(t *testing.T) {
			in, hold := io.Pipe() // nothing is ever typed
			defer hold.Close()
			ctx, cancel := context.WithCancelCause(context.Background())
			out, errOut := &syncBuffer{}, &syncBuffer{}
			done := make(chan error, 1)
			go func() {
				if cmd == "debug" {
					done <- debugSession(ctx, []string{file, "--call", "f([1])", "--backend", "real"}, in, out, errOut)
				} else {
					done <- dapServe(ctx, nil, in, out, errOut)
				}
			}()
			if cmd == "debug" {
				for !strings.Contains(out.String(), "(ndbg) ") {
					select {
					case err := <-done:
						t.Fatalf("debug ended before its prompt: %v; %s", err, errOut.String())
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
			stop := fmt.Errorf("SIGTERM for the test")
			cancel(stop)
			select {
			case err := <-done:
				require.ErrorIs(t, err, stop)
			case <-time.After(time.Minute):
				t.Fatal("still waiting for input a minute after the context ended")
			}
		})
	}
}
