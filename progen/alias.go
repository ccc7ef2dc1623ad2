// alias.go: keeping generated values independent: freezing variables an
// expression reads, and tracking which variables depend on or may alias
// which, so that no statement makes a value grow from itself.

package progen

import (
	"regexp"
	"slices"
	"strings"
)

// freeze marks every variable named in expression s as being iterated, and
// returns a function undoing it.
func (g *gen) freeze(s string) func() {
	names := map[string]bool{}
	for _, id := range identifiers(s) {
		names[id] = true
	}
	var fz []*variable
	for _, v := range g.scope {
		if names[v.name] {
			v.frozen++
			fz = append(fz, v)
		}
	}
	return func() {
		for _, v := range fz {
			v.frozen--
		}
	}
}

// identifiers lists the names in Python expression s, skipping string
// literals and attribute names.
func identifiers(s string) []string {
	var out []string
	start := -1
	var q byte
	for i := 0; i <= len(s); i++ {
		var ch byte
		if i < len(s) {
			ch = s[i]
		}
		if q != 0 {
			if ch == q {
				q = 0
			}
			continue
		}
		isID := ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9' && start >= 0)
		if isID {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if i-start > 0 && (start == 0 || s[start-1] != '.') {
				out = append(out, s[start:i])
			}
			start = -1
		}
		if ch == '\'' || ch == '"' {
			q = ch
		}
	}
	return out
}

// elementRef matches a subscript that yields an element object: "rows[i]",
// "rows[0]" (not a slice, which copies).
var elementRef = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*\[[^\]:]*\]$`)

// mayAlias reports whether a mutable-typed expression may evaluate to an
// object some variable already holds (a bare name, a lookup in a dict of
// lists), which a later mutation would change behind a loop's back.
func (g *gen) mayAlias(rhs string) bool {
	if g.varNamed(rhs) != nil || elementRef.MatchString(rhs) {
		return true
	}
	return strings.Contains(rhs, ".get(") && !strings.HasSuffix(rhs, ")")
}

// selfRef reports whether expression e mentions v or a variable computed
// from v.
func (g *gen) selfRef(v *variable, e string) bool {
	for _, id := range identifiers(e) {
		if u := g.varNamed(id); u != nil && dependsOn(u, v, 0) {
			return true
		}
	}
	return false
}

// dependsOn reports whether u was computed, directly or through other
// variables (to a bounded depth), from v.
func dependsOn(u, v *variable, depth int) bool {
	if u == v {
		return true
	}
	if depth > 8 {
		return false
	}
	for _, d := range u.deps {
		if dependsOn(d, v, depth+1) {
			return true
		}
	}
	return false
}

// noteDeps records that u was computed from the variables named in e.
func (g *gen) noteDeps(u *variable, e string) {
	for _, id := range identifiers(e) {
		if w := g.varNamed(id); w != nil && w != u && !slices.Contains(u.deps, w) {
			u.deps = append(u.deps, w)
		}
	}
}

// notFrom builds a value to put into v with gen, avoiding expressions made
// from v itself inside loops ("lines.append(”.join(lines))" doubles each
// iteration); it falls back to a small value of type t.
func (g *gen) notFrom(v *variable, gen func() string, t string) string {
	for range 3 {
		e := gen()
		if g.loop == 0 || !g.selfRef(v, e) {
			return e
		}
	}
	return g.small(t)
}
