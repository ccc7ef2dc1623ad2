// Package victim gives hostile-program tests a host folder the sandbox must
// not change (since the sandbox shows only what the interpreter needs, it
// does not even see it).
package victim

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Dir makes a directory on the host (not under /tmp, which the sandbox
// replaces with its own) holding one file, "victim", that reads "keep";
// both are removed when the test ends. It lies in the test's package
// folder, or in /var/tmp or the home folder when the repository itself lies
// under /tmp (as CI's copy does).
func Dir(t testing.TB) (dir, file string) {
	t.Helper()
	parents := []string{"."}
	if home, err := os.UserHomeDir(); err == nil {
		parents = append(parents, "/var/tmp", home)
	}
	for _, parent := range parents {
		abs, err := filepath.Abs(parent)
		if err != nil || abs == "/tmp" || strings.HasPrefix(abs, "/tmp/") {
			continue
		}
		if dir, err = os.MkdirTemp(abs, ".ndbg-hostile-"); err == nil {
			break
		}
	}
	if dir == "" {
		t.Fatal("no writable folder outside /tmp for the victim files")
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	file = filepath.Join(dir, "victim")
	if err := os.WriteFile(file, []byte("keep"), 0o644); err != nil {
		t.Fatalf("writing the victim file: %v", err)
	}
	return dir, file
}
