package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeModule writes a throwaway module whose package a has a passing, a
// skipping and (when fail) a failing test, and whose package b does not
// compile when broken.
func writeModule(t *testing.T, fail, broken bool) string {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.22\n",
		"a/a.go": "package a\n",
		"b/b.go": "package b\n\nfunc B() int { return 1 }\n",
		"c/c.go": "package c\n",
		"a/a_test.go": `package a

import "testing"

func TestPass(t *testing.T) {}

func TestSkip(t *testing.T) { t.Skip("no oracle here") }

func TestSub(t *testing.T) {
	t.Run("one", func(t *testing.T) {})
	t.Run("two", func(t *testing.T) { t.Skipf("case %d skipped", 2) })
}
`,
	}
	if fail {
		files["a/fail_test.go"] = "package a\n\nimport \"testing\"\n\nfunc TestFail(t *testing.T) { t.Errorf(\"want %d, got %d\", 1, 2) }\n"
	}
	if broken {
		files["b/b_test.go"] = "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) { var x int = \"s\"; _ = x }\n"
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return dir
}

// TestReport runs real `go test` runs through the report: skips are listed
// with their reasons, failures with their output, build errors shown, the
// closing line counts tests and subtests, and the status follows failure.
func TestReport(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a throwaway module")
	}
	for _, c := range []struct {
		name         string
		fail, broken bool
		status       int
		want         []string
		summary      string
	}{
		{"green", false, false, 0, []string{"ok   example.com/m/a", "SKIP TestSkip: ", "no oracle here",
			"SKIP TestSub/two: ", "case 2 skipped", "?    example.com/m/c [no test files]"}, "3 passed, 0 failed, 2 skipped\n"},
		{"failing", true, false, 1, []string{"FAIL example.com/m/a", "want 1, got 2", "SKIP TestSkip: "}, "3 passed, 1 failed, 2 skipped\n"},
		{"broken", false, true, 1, []string{"FAIL example.com/m/b", `cannot use "s"`}, "3 passed, 0 failed, 2 skipped\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(writeModule(t, c.fail, c.broken))
			var out, errb bytes.Buffer
			status := run([]string{"-count=1", "./..."}, &out, &errb)
			assert.Equal(t, c.status, status, "%s\n%s", out.String(), errb.String())
			for _, w := range c.want {
				assert.Contains(t, out.String(), w)
			}
			assert.Contains(t, out.String(), "\n"+c.summary)
		})
	}
}

// TestReportAllSuites runs a unittest suite (passing, skipping with a
// reason, failing with a traceback and the test's output, a subtest) and
// two go test runs (the second with -tags, labelled) and closes with one
// line over all of them, where make test printed three summaries, the last
// only the tagged run's.
func TestReportAllSuites(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test and python3 on a throwaway module")
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	for _, fail := range []bool{false, true} {
		dir := writeModule(t, false, false)
		test := `import unittest

class T(unittest.TestCase):
    def test_pass(self):
        pass

    @unittest.skip("needs torch")
    def test_skip(self):
        pass

    def test_sub(self):
        for i in range(2):
            with self.subTest(i=i):
                print("checking", i)
                self.assertEqual(i, 0 if FAIL else i)
`
		test = strings.Replace(test, "FAIL", map[bool]string{true: "True", false: "False"}[fail], 1)
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "py"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "py", "test_x.py"), []byte(test), 0o644))
		t.Chdir(dir)
		var out, errb bytes.Buffer
		status := run([]string{"-unittest", "py", "-python=" + py, "-count=1", "./...", "+", "-count=1", "-tags", "special", "./a/..."}, &out, &errb)
		text := out.String()
		assert.Contains(t, text, "SKIP test_x.T.test_skip: needs torch")
		assert.Contains(t, text, "ok   example.com/m/a [special]")
		assert.Len(t, regexp.MustCompile(`(?m)^\d+ passed, \d+ failed, \d+ skipped$`).FindAllString(text, -1), 1, "one closing line:\n%s", text)
		if fail {
			assert.Equal(t, 1, status)
			assert.Contains(t, text, "FAIL py ("+py+" -m unittest)")
			assert.Contains(t, text, "AssertionError: 1 != 0")
			assert.Contains(t, text, "checking 1", "the failed test's output")
			assert.Contains(t, text, "--- FAIL: test_x.T.test_sub (i=1)")
			// test_pass + 3 + 3 go; test_sub's subtest i=1 failed (and so test_sub).
			assert.True(t, strings.HasSuffix(text, "\n7 passed, 1 failed, 5 skipped\n"), text)
		} else {
			assert.Equal(t, 0, status, "%s\n%s", text, errb.String())
			// test_pass, test_sub + 3 + 3 go.
			assert.True(t, strings.HasSuffix(text, "\n8 passed, 0 failed, 5 skipped\n"), text)
		}
	}
}
