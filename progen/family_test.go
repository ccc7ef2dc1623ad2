package progen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFamiliesMakeWhatTheyDescribe checks, family by family, the trait its
// doc promises, over 60 programs each: the digest pins say that the
// programs did not change, this says what they are. A new family needs a
// case here.
func TestFamiliesMakeWhatTheyDescribe(t *testing.T) {
	const n = 60
	// uses reports whether p used a construct whose tag starts with one of
	// prefixes ("str." matches "str.join").
	uses := func(p *Program, prefixes ...string) bool {
		for _, c := range p.Constructs {
			for _, pre := range prefixes {
				if strings.HasPrefix(c, pre) {
					return true
				}
			}
		}
		return false
	}
	defs := func(p *Program) int { return strings.Count("\n"+p.Source, "\ndef ") }
	noHelpers := func(p *Program) bool { return defs(p) == 1 }
	cases := map[string][]struct {
		what string
		min  int // programs out of n that must have it
		has  func(p *Program) bool
	}{
		"strings": {
			{"f alone", n, noHelpers},
			{"string methods", n / 2, func(p *Program) bool { return uses(p, "str.") }},
		},
		"lists": {
			{"f alone", n, noHelpers},
			{"list methods, sorting or comprehensions", n / 2, func(p *Program) bool { return uses(p, "list.", "sorted", "listcomp") }},
		},
		"dicts": {
			{"f alone", n, noHelpers},
			{"dict methods or comprehensions", n / 2, func(p *Program) bool { return uses(p, "dict.", "dictcomp") }},
		},
		"numeric": {
			{"f alone", n, noHelpers},
			{"arithmetic", n / 2, func(p *Program) bool { return uses(p, "arith", "floordiv_mod", "div", "augassign") }},
		},
		"helpers": {
			{"a helper f calls", n, func(p *Program) bool { return defs(p) >= 2 && uses(p, "helper") && uses(p, "call_helper") }},
		},
		"recursion": {
			{"a bounded recursion", n, func(p *Program) bool { return uses(p, "recursion") }},
		},
		"exceptions": {
			{"an uncaught exception declared", n / 3, func(p *Program) bool { return len(p.Raises) > 0 }},
			{"try/except", n / 4, func(p *Program) bool { return uses(p, "try") && strings.Contains(p.Source, "except ") }},
		},
		"long": {
			{"six or more helpers", n, func(p *Program) bool { return defs(p) >= 7 }},
		},
		"mixed": {
			{"strings and collections", n / 2, func(p *Program) bool { return uses(p, "str.") && uses(p, "list.", "dict.", "set", "tuple") }},
		},
	}
	for _, fam := range Families() {
		checks, ok := cases[fam]
		require.True(t, ok, "family %s has no case in TestFamiliesMakeWhatTheyDescribe", fam)
		got := make([]int, len(checks))
		for i := range n {
			p, err := Generate(uint64(i)+100, []string{fam})
			require.NoError(t, err)
			for j, c := range checks {
				if c.has(p) {
					got[j]++
				}
			}
		}
		for j, c := range checks {
			assert.GreaterOrEqual(t, got[j], c.min, "%s: %s in %d of %d programs", fam, c.what, got[j], n)
		}
	}
}
