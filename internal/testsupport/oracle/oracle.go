// Package oracle decides what a test does when an independent reference it
// compares against (PyTorch, the Hugging Face tokenizers library, the real
// Llama-3 vocabulary) is not installed: it skips, saying why, unless the
// environment variable NDBG_REQUIRE_ORACLES is set to a non-empty value
// (CI sets it after installing every oracle), in which case it fails, so a
// broken install cannot pass as a green run.
package oracle

import (
	"fmt"
	"os"
	"testing"
)

// RequireEnv is the environment variable that makes a missing oracle a
// test failure instead of a skip.
const RequireEnv = "NDBG_REQUIRE_ORACLES"

// Missing ends the test because an oracle is absent: a skip with the
// reason, or a failure when RequireEnv is set.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv(RequireEnv) != "" {
		tb.Fatalf("oracle missing (%s is set): %s", RequireEnv, why)
	}
	tb.Skip("oracle missing: " + why)
}
