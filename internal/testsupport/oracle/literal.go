package oracle

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"testing"
)

// LiteralEvalErrors asks CPython which texts are Python literals: for each
// text, the name of the exception ast.literal_eval raises on it, "" when it
// is a literal. The reference for the constrained decoder's literal grammar
// and for CRUXEval answers; python3 must be on PATH (it fails the test
// otherwise: every test machine has it).
func LiteralEvalErrors(tb testing.TB, texts []string) []string {
	tb.Helper()
	in, err := json.Marshal(texts)
	if err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("python3", "-I", "-S", "-c", `import ast, json, sys, warnings
warnings.simplefilter("ignore")
def err(s):
    try:
        ast.literal_eval(s)
        return ""
    except Exception as e:
        return type(e).__name__
print(json.dumps([err(s) for s in json.load(sys.stdin)]))`)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("python3's ast.literal_eval: %v", err)
	}
	var res []string
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(texts) {
		tb.Fatalf("python3's ast.literal_eval answered %q (%v) for %d texts", out, err, len(texts))
	}
	return res
}
