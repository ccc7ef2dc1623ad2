package progen

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// variable is a name in scope while generating a function body.
type variable struct {
	name   string
	t      string
	frozen int  // >0 while a loop iterates it: no mutation, no reassignment
	ro     bool // loop and comprehension variables: never reassigned
	nonneg bool // an int known to be >= 0
	char   bool // a str known to hold exactly one character
	noMut  bool // a helper's parameter: the caller's object must not change
	// deps are the variables this one's value was computed from, so that
	// a value derived from an accumulator is not fed back into it.
	deps []*variable
}

// safeIndex says container[index + off] cannot raise here: the index comes
// from range(len(container)) (or is a key of the dict) and the container is
// frozen.
type safeIndex struct {
	idx, cont *variable
	off       int
}

// sig is a helper function f may call.
type sig struct {
	name   string
	params []string
	ret    string
	raises string // exception class the helper may raise, "" for none
	// wrap, when set, holds per parameter a format applied to the
	// argument ("min(%s, 6)" bounds a recursion); one without %s is the
	// argument itself (an accumulator's initial value).
	wrap      []string
	recursive bool
}

// arg applies the parameter's wrap to an argument expression.
func (s *sig) arg(i int, a string) string {
	if i >= len(s.wrap) || s.wrap[i] == "" {
		return a
	}
	if !strings.Contains(s.wrap[i], "%s") {
		return s.wrap[i]
	}
	return strings.Replace(s.wrap[i], "%s", a, 1)
}

// gen holds the state of generating one program. It is used by one
// goroutine and discarded.
type gen struct {
	r      *rand.Rand
	fam    *family
	lines  []string
	ind    int
	scope  []*variable
	funcs  []*sig
	cons   map[string]struct{}
	raises map[string]struct{}
	chars  []string // one-character strings the program's literals and inputs draw from
	words  []string // short words made of chars

	loop   int    // loop nesting
	noCont bool   // inside a while loop whose counter is bumped at the end: no continue
	inTry  bool   // inside a try block ...
	caught string // ... whose handler catches this exception class
	safe   []safeIndex
	focus  *variable // comprehension or lambda variable the expression should use
	budget int       // statements left for the current function
	// miss counts subjects that had to be literals (see subVar).
	miss int
	// pendingAcc is an accumulator the next loop's body must update.
	pendingAcc *variable
	retT       string   // return type of the function being generated
	ptypes     []string // f's parameter types, chosen before the helpers
	maxDepth   int      // block nesting limit
	depth      int
}

func newGen(seed uint64, fam *family) *gen {
	g := &gen{
		r:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		fam:    fam,
		cons:   map[string]struct{}{},
		raises: map[string]struct{}{},
	}
	g.pickAlphabet()
	return g
}

// use records that a construct appears in the program (diversity stats).
func (g *gen) use(tag string) { g.cons[tag] = struct{}{} }

func (g *gen) constructs() []string {
	out := make([]string, 0, len(g.cons))
	for k := range g.cons {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (g *gen) chance(p float64) bool { return g.r.Float64() < p }

func (g *gen) intn(n int) int { return g.r.IntN(n) }

func (g *gen) between(lo, hi int) int {
	return lo + g.r.IntN(hi-lo+1)
}

func pick[T any](g *gen, xs []T) T { return xs[g.r.IntN(len(xs))] }

// emit writes one line at the current indentation.
func (g *gen) emit(format string, a ...any) {
	g.lines = append(g.lines, strings.Repeat("    ", g.ind)+fmt.Sprintf(format, a...))
}

// block runs body one indentation level deeper, restoring the scope after:
// names bound inside a block may be unbound after it, so they are dropped.
func (g *gen) block(body func()) {
	n := len(g.scope)
	ns := len(g.safe)
	g.ind++
	g.depth++
	start := len(g.lines)
	body()
	if len(g.lines) == start {
		g.emit("pass")
	}
	g.depth--
	g.ind--
	g.scope = g.scope[:n]
	g.safe = g.safe[:ns]
}

// ---- names ----

var namePools = map[string][]string{
	tInt:   {"count", "total", "n", "k", "acc", "num", "m", "res", "idx", "pos", "diff", "best", "step", "size", "width", "score", "limit", "low", "high", "carry"},
	tFloat: {"avg", "ratio", "value", "rate", "mean", "part", "weight", "price"},
	tBool:  {"flag", "found", "ok", "done", "valid", "seen_all", "is_sorted", "changed"},
	tStr:   {"s", "text", "word", "out", "prefix", "suffix", "line", "name", "chunk", "result", "sep", "key", "label", "tail", "head", "token", "msg"},
	tLI:    {"nums", "xs", "values", "arr", "items", "digits", "stack", "queue", "lengths", "counts", "seq", "data", "ids", "marks"},
	tLS:    {"words", "parts", "names", "tokens", "chars", "lines", "tags", "pieces", "keys", "fields"},
	tLLI:   {"rows", "grid", "chunks", "groups", "batches"},
	tLTIS:  {"pairs", "indexed", "entries"},
	tLTSI:  {"pairs", "ranked", "entries"},
	tDSI:   {"counts", "freq", "d", "mapping", "table", "scores", "index", "seen"},
	tDII:   {"counts", "freq", "d", "mapping", "table", "squares", "memo"},
	tDSS:   {"mapping", "d", "table", "lookup", "renames", "pairs_map"},
	tDIS:   {"mapping", "d", "names_by_id", "table", "lookup"},
	tDSLI:  {"groups", "buckets", "positions", "by_key"},
	tSI:    {"seen", "uniq", "found_set", "visited", "pool"},
	tTII:   {"pair", "bounds", "span", "point"},
	tTSI:   {"entry", "pair", "record"},
	tTIS:   {"entry", "pair", "record"},
	tFn:    {"fn", "transform", "scale", "shift", "op"},
}

var reserved = map[string]bool{"f": true, "i": true, "j": true, "x": true, "y": true, "c": true, "w": true, "k2": true, "v": true, "e": true}

func (g *gen) inScope(name string) bool {
	for _, v := range g.scope {
		if v.name == name {
			return true
		}
	}
	for _, s := range g.funcs {
		if s.name == name {
			return true
		}
	}
	return false
}

// fresh returns an unused name fitting type t.
func (g *gen) fresh(t string) string {
	pool := namePools[t]
	if len(pool) == 0 {
		pool = []string{"tmp"}
	}
	start := g.intn(len(pool))
	for i := range pool {
		n := pool[(start+i)%len(pool)]
		if !g.inScope(n) && !reserved[n] {
			return n
		}
	}
	for k := 2; ; k++ {
		n := fmt.Sprintf("%s%d", pool[start], k)
		if !g.inScope(n) {
			return n
		}
	}
}

// freshLoop returns an unused short name for a loop or comprehension
// variable of type t.
func (g *gen) freshLoop(t string) string {
	var pool []string
	switch t {
	case tInt:
		pool = []string{"x", "n", "v", "num", "val", "item"}
	case tStr:
		pool = []string{"c", "ch", "w", "word", "part", "s2", "letter", "tok"}
	case tLI:
		pool = []string{"row", "r", "vec", "group", "chunk"}
	default:
		pool = []string{"e", "item", "el", "p"}
	}
	for _, n := range pool {
		if !g.inScope(n) {
			return n
		}
	}
	return g.fresh(t)
}

func (g *gen) bind(name, t string) *variable {
	v := &variable{name: name, t: t}
	g.scope = append(g.scope, v)
	return v
}

// vars returns the variables in scope satisfying ok.
func (g *gen) vars(ok func(*variable) bool) []*variable {
	var out []*variable
	for _, v := range g.scope {
		if ok(v) {
			out = append(out, v)
		}
	}
	return out
}

func (g *gen) varsOf(t string) []*variable {
	return g.vars(func(v *variable) bool { return v.t == t })
}

// varNamed is the variable in scope named n, or nil.
func (g *gen) varNamed(n string) *variable {
	for _, v := range g.scope {
		if v.name == n {
			return v
		}
	}
	return nil
}

// someVar picks a variable of type t, preferring the focus variable.
func (g *gen) someVar(t string) *variable {
	if g.focus != nil && g.focus.t == t && g.chance(0.7) {
		return g.focus
	}
	vs := g.varsOf(t)
	if len(vs) == 0 {
		return nil
	}
	return pick(g, vs)
}

// mutableVar picks a variable of type t that may be mutated in place.
func (g *gen) mutableVar(ok func(t string) bool) *variable {
	vs := g.vars(func(v *variable) bool { return ok(v.t) && v.frozen == 0 && !v.ro && !v.noMut })
	if len(vs) == 0 {
		return nil
	}
	return pick(g, vs)
}

// assignable picks a variable that may be rebound.
func (g *gen) assignable(ok func(t string) bool) *variable {
	vs := g.vars(func(v *variable) bool { return ok(v.t) && v.frozen == 0 && !v.ro })
	if len(vs) == 0 {
		return nil
	}
	return pick(g, vs)
}

// ---- alphabet and literals ----

// ---- operands ----
