package dap

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// installHint says how to get what the DAP client tests need.
const installHint = "install Node.js and npm, then: cd service/dap/testclient && npm ci (.ci/run does)"

// TestDebugClient drives a built `ndbg dap` with VS Code's DAP test client
// (testclient/run.js): scripts of launches, breakpoints, steps,
// step-backs and variable reads on several programs, exact on the real
// backend, well-formed on the neural and compare backends, and over TCP.
func TestDebugClient(t *testing.T) {
	runClient(t, "ndbg")
}

// TestDebugpyAgrees runs the same programs on ndbg's real backend and on
// debugpy (Debian's python3-debugpy) through the same client: their stops
// (line, locals) must agree, and where they differ on purpose
// (docs/editors.md) each must stop where the document says.
func TestDebugpyAgrees(t *testing.T) {
	out, err := exec.Command("/usr/bin/python3", "-c", "import debugpy.adapter, os; print(os.path.dirname(debugpy.adapter.__file__))").Output()
	if err != nil {
		t.Skip("debugpy is not installed for /usr/bin/python3: apt-get install -y python3-debugpy (.ci/run does)")
	}
	runClient(t, "debugpy", "--debugpy", strings.TrimSpace(string(out)), "--python", "/usr/bin/python3")
}

// runClient builds ndbg and runs testclient/run.js with --only only and
// the extra arguments; it skips, saying how to install, without node or
// the client's node_modules.
func runClient(t *testing.T, only string, extra ...string) {
	if testing.Short() {
		t.Skip("-short: the DAP client tests build ndbg and run node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not on PATH: " + installHint)
	}
	if _, err := os.Stat(filepath.Join("testclient", "node_modules", "@vscode", "debugadapter-testsupport")); err != nil {
		t.Skip("testclient/node_modules is missing: " + installHint)
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
	args := append([]string{"run.js", "--ndbg", bin, "--only", only}, extra...)
	cmd := exec.Command(node, args...)
	cmd.Dir = "testclient"
	out, err := cmd.CombinedOutput()
	t.Logf("node %s:\n%s", strings.Join(args, " "), out)
	require.NoError(t, err, "the DAP client script failed (output above)")
}
