// Package testprog holds programs that tests of several packages share and
// that need nothing of the root package (which internal/testsupport/testmodel imports),
// so that the root package's own engines can use them too.
package testprog

import (
	"fmt"
	"strings"
)

// LongProgram is a program of many small functions (7 lines each, funcs of
// them), far longer than the default model's context: f calls the last of
// a chain of helpers, each of which calls the one before it.
func LongProgram(funcs int) (src, call string) {
	var b strings.Builder
	b.WriteString("import math\n\nSCALE = 3\n\n\n")
	b.WriteString("def h0(x):\n    y = x + SCALE\n    return y\n\n\n")
	for i := 1; i < funcs; i++ {
		fmt.Fprintf(&b, "def h%d(x):\n    a = x * %d\n    b = h%d(a %% 7)\n    c = a - b\n    return c + %d\n\n\n", i, i, i-1, i)
	}
	fmt.Fprintf(&b, "def f(n):\n    total = 0\n    for i in range(n):\n        total += h%d(i)\n    return math.floor(total)\n", funcs-1)
	return b.String(), "f(3)"
}

// Runaway is a program whose return value a model tends to write without
// end: on f((1,), (1,), (1, 2)) it returns 'RRRR', and the default model,
// stepping to the return, writes R after R until the grammar's bound (it
// printed such a value to the end of the context before values were cut);
// a random model with a short context runs out of it there.
const Runaway = `def f(a, b, c):
    s = ''
    for x in a + b + c:
        s += 'R' * x
    return s
`
