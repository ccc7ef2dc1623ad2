package progen

// wt is a weighted choice of type.
type wt struct {
	t string
	w int
}

func pickWeighted(g *gen, ws []wt) string {
	total := 0
	for _, x := range ws {
		total += x.w
	}
	n := g.intn(total)
	for _, x := range ws {
		if n < x.w {
			return x.t
		}
		n -= x.w
	}
	return ws[0].t
}

// family is one kind of program. Families differ in the types they work on,
// the statements they favour and their structure, so that evaluation can
// hold one out.
type family struct {
	name, doc string
	params    []wt // types of f's parameters
	nparams   [2]int
	rets      []wt // f's return type
	locals    []wt // types of new local variables
	stmts     stmtWeights
	nstmts    [2]int // f's top-level statements
	helpers   [2]int // plain helpers f calls
	raising   float64
	recursive bool // one bounded recursive helper
	// helperStmts is the range of a plain helper's body statements, and
	// helperDepth its block nesting limit; zero values mean [1,2] and 1
	// (straight-line helpers), as every family but long has them.
	helperStmts [2]int
	helperDepth int
	// named: drawn only when asked for by name, never in the default mix
	// (Generate with no names), so that adding it changed no existing
	// data set nor the frozen evaluation sets.
	named bool
	// srcBytes, when set, bounds the source's length in bytes: a program
	// outside it is drawn again from a seed derived from the first.
	srcBytes [2]int
}

func (f *family) pickLocal(g *gen) string { return pickWeighted(g, f.locals) }

var baseStmts = stmtWeights{decl: 5, assign: 2, aug: 2, listMut: 3, dictMut: 2, setMut: 1, ifs: 4, fors: 7, whiles: 2, tries: 0, lambda: 0, raise: 0}

// families returns the program families, in a fixed order. A fresh slice
// each call: there is no package-level mutable state.
func families() []*family {
	strs := baseStmts
	strs.dictMut, strs.setMut = 1, 0
	lists := baseStmts
	lists.listMut, lists.setMut, lists.whiles = 6, 2, 2
	dicts := baseStmts
	dicts.dictMut, dicts.listMut = 6, 2
	nums := baseStmts
	nums.aug, nums.whiles, nums.listMut, nums.dictMut, nums.lambda = 5, 4, 2, 1, 1
	mixed := baseStmts
	mixed.whiles, mixed.lambda, mixed.tries, mixed.raise = 2, 1, 1, 0
	exc := baseStmts
	exc.tries, exc.raise = 6, 2
	return []*family{
		{
			name: "strings", doc: "string methods, slicing, joins and f-strings over text inputs",
			params: []wt{{tStr, 8}, {tInt, 2}, {tLS, 2}}, nparams: [2]int{1, 2},
			rets:   []wt{{tStr, 6}, {tInt, 2}, {tBool, 2}, {tLS, 2}},
			locals: []wt{{tStr, 8}, {tInt, 3}, {tLS, 3}, {tBool, 1}, {tDSI, 1}},
			stmts:  strs, nstmts: [2]int{2, 5},
		},
		{
			name: "lists", doc: "list methods, sorting, comprehensions and aggregates over number lists",
			params: []wt{{tLI, 8}, {tInt, 3}, {tLS, 1}, {tLLI, 1}}, nparams: [2]int{1, 2},
			rets:   []wt{{tLI, 6}, {tInt, 3}, {tBool, 1}, {tTII, 1}, {tLS, 1}, {tLLI, 1}},
			locals: []wt{{tLI, 6}, {tInt, 5}, {tSI, 1}, {tBool, 1}, {tLS, 1}, {tDII, 1}, {tLLI, 1}},
			stmts:  lists, nstmts: [2]int{2, 5},
		},
		{
			name: "dicts", doc: "counting, grouping and lookups with dicts and sets",
			params: []wt{{tLS, 3}, {tStr, 3}, {tDSI, 3}, {tLI, 2}, {tDIS, 1}, {tDSS, 1}}, nparams: [2]int{1, 2},
			rets:   []wt{{tDSI, 4}, {tDII, 2}, {tLS, 2}, {tInt, 2}, {tLTSI, 2}, {tDSLI, 1}, {tDSS, 1}},
			locals: []wt{{tDSI, 5}, {tDII, 2}, {tDSLI, 1}, {tSI, 2}, {tInt, 3}, {tLS, 2}, {tStr, 1}, {tLTSI, 1}},
			stmts:  dicts, nstmts: [2]int{2, 5},
		},
		{
			name: "numeric", doc: "integer and float arithmetic, digit loops and while loops",
			params: []wt{{tInt, 8}, {tFloat, 1}, {tLI, 3}}, nparams: [2]int{1, 3},
			rets:   []wt{{tInt, 6}, {tFloat, 2}, {tBool, 1}, {tTII, 2}, {tLI, 2}},
			locals: []wt{{tInt, 8}, {tFloat, 2}, {tLI, 2}, {tBool, 1}},
			stmts:  nums, nstmts: [2]int{2, 5},
		},
		{
			name: "helpers", doc: "f calls one or two helper functions",
			params: []wt{{tStr, 3}, {tLI, 3}, {tInt, 3}, {tLS, 2}}, nparams: [2]int{1, 2},
			rets:   []wt{{tStr, 3}, {tLI, 3}, {tInt, 3}, {tBool, 1}, {tTIS, 1}},
			locals: []wt{{tStr, 3}, {tLI, 3}, {tInt, 4}, {tLS, 2}, {tDSI, 1}},
			stmts:  baseStmts, nstmts: [2]int{1, 3}, helpers: [2]int{1, 2},
		},
		{
			name: "recursion", doc: "bounded recursion: a recursive helper f calls, or f itself",
			params: []wt{{tStr, 3}, {tLI, 3}, {tInt, 4}}, nparams: [2]int{1, 2},
			rets:   []wt{{tInt, 4}, {tStr, 2}, {tLI, 2}, {tBool, 1}},
			locals: []wt{{tInt, 4}, {tStr, 2}, {tLI, 2}},
			stmts:  baseStmts, nstmts: [2]int{1, 3}, recursive: true,
		},
		{
			name: "exceptions", doc: "try/except around operations that may fail, raising helpers, uncaught errors",
			params: []wt{{tStr, 3}, {tLI, 3}, {tInt, 3}, {tDSI, 2}}, nparams: [2]int{1, 3},
			rets:   []wt{{tInt, 4}, {tStr, 2}, {tLI, 2}, {tBool, 1}},
			locals: []wt{{tInt, 4}, {tStr, 2}, {tLI, 2}, {tDSI, 1}},
			stmts:  exc, nstmts: [2]int{2, 5}, helpers: [2]int{0, 1}, raising: 0.6,
		},
		{
			name: "long", doc: "long programs, drawn only by name: f calls six to eight helpers with loops of their own, 4.4-5.1 KB of source",
			params: []wt{{tStr, 3}, {tLI, 3}, {tInt, 2}, {tLS, 2}, {tDSI, 1}}, nparams: [2]int{2, 3},
			rets:   []wt{{tStr, 3}, {tLI, 3}, {tInt, 3}, {tBool, 1}, {tDSI, 1}, {tTIS, 1}},
			locals: []wt{{tStr, 3}, {tLI, 3}, {tInt, 4}, {tLS, 2}, {tDSI, 2}, {tBool, 1}},
			stmts:  baseStmts, nstmts: [2]int{24, 30}, helpers: [2]int{6, 8}, raising: 0.1,
			helperStmts: [2]int{5, 8}, helperDepth: 2, named: true, srcBytes: [2]int{4400, 5100},
		},
		{
			name: "mixed", doc: "all types and statements together",
			params: []wt{{tStr, 3}, {tLI, 3}, {tInt, 3}, {tLS, 2}, {tDSI, 1}, {tFloat, 1}}, nparams: [2]int{1, 3},
			rets:   []wt{{tStr, 3}, {tLI, 3}, {tInt, 3}, {tBool, 1}, {tDSI, 1}, {tTII, 1}, {tLTIS, 1}, {tSI, 1}},
			locals: []wt{{tStr, 3}, {tLI, 3}, {tInt, 4}, {tLS, 2}, {tDSI, 1}, {tSI, 1}, {tDII, 1}, {tFloat, 1}, {tLTIS, 1}, {tTII, 1}},
			stmts:  mixed, nstmts: [2]int{2, 5}, helpers: [2]int{0, 1},
		},
	}
}
