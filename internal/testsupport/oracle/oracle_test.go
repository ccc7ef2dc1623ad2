package oracle

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMissing runs this test binary again with and without RequireEnv: a
// missing oracle skips with its reason, or fails when it is required.
func TestMissing(t *testing.T) {
	if os.Getenv("ORACLE_TEST_CHILD") != "" {
		Missing(t, "no %s", "torch")
		return
	}
	for _, c := range []struct {
		require string
		want    string
		fails   bool
	}{
		{"", "--- SKIP: TestMissing", false},
		{"1", "--- FAIL: TestMissing", true},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissing$", "-test.v")
		cmd.Env = append(os.Environ(), "ORACLE_TEST_CHILD=1", RequireEnv+"="+c.require)
		out, err := cmd.CombinedOutput()
		assert.Equal(t, c.fails, err != nil, "%s", out)
		assert.Contains(t, string(out), c.want)
		assert.True(t, strings.Contains(string(out), "no torch"), "%s", out)
	}
}
