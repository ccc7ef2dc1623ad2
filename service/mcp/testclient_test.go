package mcp

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/internal/testsupport/oracle"
)

// installHint says how to get what the independent client's test needs.
const installHint = "install Node.js and npm, then: cd service/mcp/testclient && npm ci (.ci/run does)"

// TestTypeScriptClient drives a built `ndbg mcp` with the TypeScript MCP
// SDK's client (testclient/run.js, @modelcontextprotocol/sdk from npm), an
// implementation of MCP independent of the Go SDK the server is built on,
// over stdio and over streamable HTTP: the agent's errand of issue 28 (from
// a failing call: start, step, breakpoint, evaluate, back to the inputs,
// end), every tool, bad arguments, concurrent sessions and clients, and a
// cancelled call. Without node or the client's node_modules it skips,
// saying how to install (and fails under NDBG_REQUIRE_ORACLES=1).
func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the MCP client test builds ndbg and runs node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		oracle.Missing(t, "node is not on PATH: %s", installHint)
	}
	if _, err := os.Stat(filepath.Join("testclient", "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		oracle.Missing(t, "testclient/node_modules is missing: %s", installHint)
	}
	gocmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH: the test builds the ndbg command")
	}
	bin := filepath.Join(t.TempDir(), "ndbg")
	build := exec.Command(gocmd, "build", "-o", bin, "../../cmd/ndbg")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building ndbg: %v\n%s", err, out)
	}
	for _, only := range []string{"stdio", "http"} {
		t.Run(only, func(t *testing.T) {
			args := []string{"run.js", "--ndbg", bin, "--only", only}
			cmd := exec.Command(node, args...)
			cmd.Dir = "testclient"
			out, err := cmd.CombinedOutput()
			t.Logf("node %s:\n%s", strings.Join(args, " "), out)
			require.NoError(t, err, "the MCP client script failed (output above)")
			require.Contains(t, string(out), "ok: ")
		})
	}
}
