package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ndbg/ndbg/internal/victim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDebugEvalSandboxed: p evaluates in the sandbox every program runs in
// (docs/security.md, package pyeval), on the neural backend too: an
// expression that runs a shell, writes or deletes outside the scratch
// space does nothing to the host.
func TestDebugEvalSandboxed(t *testing.T) {
	dir, file := victim.Dir(t)
	out := typeInto(t, []string{"--call", "f([1, None, 4])", "--threads", "1"},
		fmt.Sprintf("p __import__('os').system('touch %s/system; rm -f %s')", dir, file),
		fmt.Sprintf("p open(%q, 'w').write('pwned')", file),
		"p __import__('socket').gethostname(), __import__('os').getcwd()",
		"q")
	a := answers(out)
	require.Len(t, a, 5, out)
	assert.NotEqual(t, "0\n"+fromPrediction, a[1], "no shell starts")
	assert.Regexp(t, `^\*\*\* (OSError|FileNotFoundError|PermissionError): `, a[2], "the host folder is out of the sandbox's reach")
	assert.Equal(t, "('ndbg', '/tmp')\n"+fromPrediction, a[3])
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "keep", string(data))
	assert.NoFileExists(t, filepath.Join(dir, "system"))
}
