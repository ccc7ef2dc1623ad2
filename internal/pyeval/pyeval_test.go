package pyeval

import (
	"context"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/dsl"
)

// TestEval: values as p and pp print them, pdb's one-line errors, and a
// local whose repr is no literal named as the reason it cannot be read.
func TestEval(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	locals := []dsl.Local{{Name: "xs", Repr: "[3, 4]"}, {Name: "d", Repr: "{'k': 1}"}, {Name: "o", Repr: "<C object at 0x...>"}}
	res, err := Eval(context.Background(), locals, []string{"sum(xs) / len(xs)", "d['k'] + 1", "zz", "o.x", "1/0"}, false)
	require.NoError(t, err)
	require.Equal(t, []Result{
		{Value: "3.5"}, {Value: "2"},
		{Error: "NameError: name 'zz' is not defined"},
		{Error: "the value of o is not a Python literal, so it cannot be rebuilt to evaluate: <C object at 0x...>"},
		{Error: "ZeroDivisionError: division by zero"},
	}, res)
	res, err = Eval(context.Background(), locals, []string{"list(range(30))"}, true)
	require.NoError(t, err)
	require.Contains(t, res[0].Value, "[0,\n 1,\n")
}
