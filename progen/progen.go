// Package progen generates random but meaningful Python programs, with an
// input for each, in the style of CRUXEval: a top-level function f (maybe
// with helpers) over strings, lists, dicts and numbers, using the methods,
// builtins and control flow such code uses. Programs are well-typed by
// construction (the generator tracks each variable's type), terminate
// quickly (loops are bounded, inputs small) and raise only where the
// generator says so (Program.Raises). The same seed gives the same program,
// byte for byte.
//
// The code, by job: progen.go assembles a program (Generate, f, its return
// and inputs); families.go defines the families and their weights; gen.go
// holds the generator's state and scope, types.go the types, literal.go the
// literals and input.go the inputs. Expressions: expr.go chooses among
// candidates, cands.go lists them, one function per result type.
// Statements: stmt.go dispatches and makes the plain ones, control.go
// if/for/while, mutate.go in-place mutations, accum.go accumulator loops,
// raise.go try/except and raise, alias.go keeps values from aliasing.
// Helpers and recursion (families helpers and recursion, and every family
// that calls helpers) live in helpers.go and recursion.go.
package progen

import (
	"fmt"
	"slices"
	"strings"
)

// Program is one generated program and the call to trace.
type Program struct {
	Family string
	Seed   uint64
	Source string // Python source defining Entry and its helpers
	Entry  string // "f"
	Call   string // the entry call, e.g. "f('abc', [3, 1, 2])"
	// Raises lists the exception classes the call may raise uncaught;
	// empty means it always returns.
	Raises []string
	// Constructs are the distinct constructs used (for diversity stats).
	Constructs []string
}

// Families returns the names of all program families, in a fixed order.
func Families() []string {
	var out []string
	for _, f := range families() {
		out = append(out, f.name)
	}
	return out
}

// FamilyDoc returns a one-line description of a family.
func FamilyDoc(name string) string {
	for _, f := range families() {
		if f.name == name {
			return f.doc
		}
	}
	return ""
}

// Generate returns the program for seed, from one of the named families,
// chosen by the seed: a family named twice is drawn twice as often. With no
// names it draws from every family but those marked named-only (long),
// whose programs are for training the model's long context and must not
// change the default mix that evaluation sets were drawn from.
func Generate(seed uint64, names []string) (p *Program, err error) {
	defer func() {
		// The generator has no known failure; should one appear, it is
		// an error for this seed, not a crash of the caller.
		if r := recover(); r != nil {
			p, err = nil, fmt.Errorf("progen: internal error at seed %d: %v", seed, r)
		}
	}()
	all := families()
	var fams []*family
	for _, f := range all {
		if !f.named {
			fams = append(fams, f)
		}
	}
	if len(names) > 0 {
		fams = nil
		for _, n := range names {
			i := slices.IndexFunc(all, func(f *family) bool { return f.name == n })
			if i < 0 {
				return nil, fmt.Errorf("progen: unknown family %q (have %s)", n, strings.Join(Families(), ", "))
			}
			fams = append(fams, all[i])
		}
	}
	// The family is picked by a hash of the seed, independent of the
	// program's own random stream.
	fam := fams[splitmix(seed)%uint64(len(fams))]
	return sized(seed, fam), nil
}

// maxRedraws bounds sized's redraws; past it, the last program is kept.
const maxRedraws = 64

// sized is generate, redrawn from derived seeds (the same ones for the same
// seed) until the source's length is within the family's srcBytes, when
// the family sets them.
func sized(seed uint64, fam *family) *Program {
	p := generate(seed, fam)
	lo, hi := fam.srcBytes[0], fam.srcBytes[1]
	for try := uint64(1); hi > 0 && try <= maxRedraws && (len(p.Source) < lo || len(p.Source) > hi); try++ {
		p = generate(splitmix(seed^try*0x2545f4914f6cdd1d), fam)
		p.Seed = seed
	}
	return p
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func generate(seed uint64, fam *family) *Program {
	g := newGen(seed, fam)
	g.maxDepth = 2

	if fam.recursive && g.chance(0.2) {
		p := g.recursiveEntry()
		p.Seed = seed
		return p
	}

	// f's parameter types come first, so that helpers can take the same
	// types and f can pass its own values to them.
	np := g.between(fam.nparams[0], fam.nparams[1])
	ptypes := make([]string, np)
	for i := range ptypes {
		ptypes[i] = pickWeighted(g, fam.params)
	}
	g.ptypes = ptypes

	var forced []*sig
	if fam.recursive {
		forced = append(forced, g.recursive())
	}
	nh := 0
	if fam.helpers[1] > 0 {
		nh = g.between(fam.helpers[0], fam.helpers[1])
	}
	for i := range nh {
		raises := g.chance(fam.raising)
		forced = append(forced, g.helper(helperName(g, i), raises))
	}

	// f itself.
	names := make([]string, np)
	for i := range ptypes {
		names[i] = g.paramName(ptypes[i])
		g.bind(names[i], ptypes[i])
	}
	g.retT = pickWeighted(g, fam.rets)
	g.emit("def f(%s):", strings.Join(names, ", "))
	g.block(func() {
		g.budget = g.between(fam.nstmts[0], fam.nstmts[1]) + 2*len(forced)
		before := g.intn(2)
		g.stmts(before)
		for _, s := range forced {
			g.forcedCall(s)
			g.stmts(1)
		}
		g.stmts(g.budget)
		g.emit("return %s", g.returnExpr())
	})

	call := make([]string, np)
	for i, t := range ptypes {
		call[i] = g.input(t)
	}
	raises := make([]string, 0, len(g.raises))
	for k := range g.raises {
		raises = append(raises, k)
	}
	slices.Sort(raises)
	return &Program{
		Family:     fam.name,
		Seed:       seed,
		Source:     strings.Join(g.lines, "\n") + "\n",
		Entry:      "f",
		Call:       "f(" + strings.Join(call, ", ") + ")",
		Raises:     raises,
		Constructs: g.constructs(),
	}
}

// returnExpr prefers returning a variable of the return type, as most such
// functions do.
func (g *gen) returnExpr() string {
	e := g.expr(g.retT, 2)
	for try := 0; try < 3 && !g.usesVar(e); try++ {
		e = g.expr(g.retT, 2)
	}
	if vs := g.varsOf(g.retT); len(vs) > 0 && g.chance(0.6) {
		// The most recently bound variable is most often the result.
		e = vs[len(vs)-1].name
		if !g.chance(0.6) {
			e = pick(g, vs).name
		}
	}
	return g.retValue(e)
}

// retValue makes a helper return a copy of a parameter, never its
// caller's object (which the caller might be iterating).
func (g *gen) retValue(e string) string {
	if v := g.varNamed(e); v != nil && v.noMut && mutable(v.t) {
		if isList(v.t) {
			return e + "[:]"
		}
		return e + ".copy()"
	}
	return e
}

func (g *gen) paramName(t string) string {
	pools := map[string][]string{
		tStr:   {"text", "s", "word", "string", "line", "name", "sentence", "st"},
		tInt:   {"n", "k", "num", "count", "x", "size", "start", "m", "limit", "target"},
		tFloat: {"value", "rate", "factor", "amount"},
		tLI:    {"nums", "arr", "values", "lst", "numbers", "data", "items", "xs"},
		tLS:    {"words", "names", "strings", "items", "parts", "tokens"},
		tDSI:   {"d", "counts", "mapping", "dic", "scores", "inventory"},
		tDIS:   {"d", "names_by_id", "mapping", "table"},
		tDSS:   {"d", "mapping", "replacements", "pairs"},
		tLLI:   {"matrix", "rows", "grid", "vectors"},
	}
	pool := pools[t]
	if len(pool) == 0 {
		return g.fresh(t)
	}
	start := g.intn(len(pool))
	for i := range pool {
		n := pool[(start+i)%len(pool)]
		if !g.inScope(n) {
			return n
		}
	}
	return g.fresh(t)
}
