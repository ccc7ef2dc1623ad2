package dsl

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewProgramNamesLines(t *testing.T) {
	src := "def g(x):\n" +
		"    return x\n" +
		"\n" +
		"def f(a):\n" +
		"    b = a\n" +
		"    b = a  # (2)\n" +
		"    b = a\n" +
		"    s = '''\n" +
		"    b = a\n" +
		"    '''\n" +
		"    # note\n" +
		"    # note\n" +
		"    c = b + \\\n" +
		"        1\n" +
		"    c = b + \\\n" +
		"        1\n" +
		"    return g(c)\n"
	p, err := NewProgram(src, "f")
	require.NoError(t, err)
	want := []string{
		"def g(x):",
		"    return x",
		"",
		"def f(a):" + StartMarker,
		"    b = a",
		"    b = a  # (2)",
		"    b = a  # (3)", // (2) is taken by line 6
		"    s = '''",
		"    b = a", // wholly inside a string literal: left alone, never named
		"    '''",
		"    # note",
		"    # note",
		"    c = b + \\",
		"        1",
		"    c = b + \\", // ends with a backslash: left alone
		"        1  # (2)",
		"    return g(c)",
	}
	require.Equal(t, want, p.Lines)
	require.Equal(t, strings.Join(want, "\n")+"\n", p.Source)
	require.Equal(t, "f", p.Entry)
	require.Equal(t, 4, p.EntryLine())
	require.Equal(t, "def f(a):", p.Text(4))

	n, ok := p.LineOf("def f(a):")
	require.True(t, ok)
	require.Equal(t, 4, n)
	n, ok = p.LineOf("    b = a  # (3)")
	require.True(t, ok)
	require.Equal(t, 7, n)
	n, ok = p.LineOf("    b = a")
	require.True(t, ok)
	require.Equal(t, 5, n)
	for _, bad := range []string{"    c = b + \\", "", "    # note", "nope"} {
		_, ok := p.LineOf(bad)
		assert.False(t, ok, "%q", bad)
	}
	assert.False(t, p.Nameable(3))  // blank
	assert.False(t, p.Nameable(9))  // inside a string literal
	assert.False(t, p.Nameable(11)) // comment
	assert.False(t, p.Nameable(13)) // repeated, cannot take a comment
	assert.True(t, p.Nameable(14))
	assert.False(t, p.Nameable(0))
	assert.False(t, p.Nameable(18))

	assert.Equal(t, 1, p.FuncOf(1))
	assert.Equal(t, 1, p.FuncOf(2))
	assert.Equal(t, 4, p.FuncOf(4))
	assert.Equal(t, 4, p.FuncOf(17))
	assert.Equal(t, 0, p.FuncOf(99))

	// The user's own lines, for display, are the source's lines (CRLF too).
	user := UserLines(strings.ReplaceAll(src, "\n", "\r\n"))
	require.Len(t, user, len(p.Lines))
	require.Equal(t, "    b = a", user[6])
	require.Equal(t, "def f(a):", user[3])
	require.Equal(t, "        1", user[15])

	q, err := ParseProgram(p.Source)
	require.NoError(t, err)
	require.Equal(t, p, q)
}

func TestNewProgramErrors(t *testing.T) {
	for _, tc := range []struct{ src, entry string }{
		{"", "f"},
		{"def g():\n    pass\n", "f"},
		{"x = '''\ndef f():\n'''\n", "f"}, // inside a string
		{"def f():  # << START_OF_TRACE\n    pass\n", "f"},
		{"def f(a, \\\n      b):\n    pass\n", "f"},
		{"def f():\n    return '<|frame_sep|>'\n", "f"},
		{"def f():\n    return '\xff'\n", "f"},
	} {
		_, err := NewProgram(tc.src, tc.entry)
		assert.Error(t, err, "%q", tc.src)
	}
	p, err := NewProgram("def f():\r\n    pass\r\n", "f")
	require.NoError(t, err)
	require.Equal(t, "def f():"+StartMarker+"\n    pass\n", p.Source)
}

func TestParseProgramErrors(t *testing.T) {
	for _, src := range []string{
		"def f():\n    pass",                        // no final newline
		"def f():\n    pass\n",                      // no marker
		"def f():" + StartMarker + "\r\n    pass\n", // carriage return
		"def f():" + StartMarker + "\ndef g():" + StartMarker + "\n",
		"x = 1" + StartMarker + "\n",
		"    def f():" + StartMarker + "\n",
		"def f():" + StartMarker + "\n    x = '\xff'\n",
	} {
		_, err := ParseProgram(src)
		assert.Error(t, err, "%q", src)
	}
}

// pythonCorpus returns programs with an entry function f: the files in
// testdata/programs, the CRUXEval dev programs, and each of those repeated twice
// (every line then has a twin, so naming is exercised everywhere).
func pythonCorpus(t *testing.T) []string {
	files, err := filepath.Glob("testdata/programs/*.py")
	require.NoError(t, err)
	var srcs []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		srcs = append(srcs, string(b))
	}
	srcs = append(srcs, cruxevalCodes(t)...)
	n := len(srcs)
	for _, s := range srcs[:n] {
		srcs = append(srcs, s+"\n"+s)
	}
	return srcs
}

// pyCheckPrograms gets, for each (original, prepared) pair, whether both
// compile to the same AST, and from CPython's tokenize and ast modules the
// prepared program's lines that end inside a string or with a backslash,
// the starts of logical lines, and the innermost def of every statement
// and decorator.
const pyCheckPrograms = pyReadStrings + `
import ast, io, json, tokenize
ss = read_strings()
for orig, prep in zip(ss[0::2], ss[1::2]):
    res = {}
    try:
        a, b = ast.parse(orig), ast.parse(prep)
        compile(prep, 'p', 'exec')
        res['same'] = ast.dump(a) == ast.dump(b)
    except SyntaxError as e:
        res['error'] = str(e)
        print(json.dumps(res)); continue
    lines = prep.split('\n')
    open_, starts, at_start = set(), set(), True
    comments = {}
    skip = {tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE, tokenize.ENCODING, tokenize.ENDMARKER}
    for tok in tokenize.generate_tokens(io.StringIO(prep).readline):
        if tok.type == tokenize.STRING:
            open_.update(range(tok.start[0], tok.end[0]))
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = True
        if tok.type == tokenize.NEWLINE:
            at_start = True
        elif tok.type not in skip and at_start:
            starts.add(tok.start[0]); at_start = False
    for i, l in enumerate(lines, 1):
        if l.endswith('\\') and i not in open_ and i not in comments:
            open_.add(i)
    func = {}
    def walk(node, cur):
        for child in ast.iter_child_nodes(node):
            c = cur
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                c = child.lineno
                for d in child.decorator_list:
                    func[d.lineno] = c
            if isinstance(child, ast.stmt):
                func[child.lineno] = c
            walk(child, c)
    walk(b, 0)
    res['open'] = sorted(open_)
    res['starts'] = sorted(starts)
    res['func'] = func
    res['top'] = sorted({min([s.lineno] + [d.lineno for d in getattr(s, 'decorator_list', [])]) for s in b.body})
    print(json.dumps(res))
`

// TestPreparedProgramsMatchPython checks NewProgram and the line lexer
// against CPython on the corpus: prepared programs compile to the same AST
// as the originals, repeated code lines become unique wherever a comment is
// legal, and scanPython, FuncOf and TopLevel agree with tokenize and ast.
func TestPreparedProgramsMatchPython(t *testing.T) {
	t.Parallel()
	srcs := pythonCorpus(t)
	require.NotEmpty(t, srcs)
	var pairs []string
	var progs []*Program
	for _, src := range srcs {
		p, err := NewProgram(src, "f")
		require.NoError(t, err, "%s", src)
		pairs = append(pairs, src, p.Source)
		progs = append(progs, p)
	}
	out := runPython(t, pyCheckPrograms, packStrings(pairs))
	results := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, results, len(progs))
	bumped := 0
	for k, p := range progs {
		var res struct {
			Same   bool
			Error  string
			Open   []int
			Starts []int
			Func   map[string]int
			Top    []int
		}
		require.NoError(t, json.Unmarshal([]byte(results[k]), &res))
		require.Empty(t, res.Error, "program %d:\n%s", k, p.Source)
		require.True(t, res.Same, "AST changed:\n%s", p.Source)

		info := scanPython(p.Lines)
		var open, starts []int
		for i, li := range info {
			if li.open {
				open = append(open, i+1)
			}
			if li.logicalStart && li.kind == codeLine {
				starts = append(starts, i+1)
			}
		}
		require.Equal(t, res.Open, nilIfEmpty(open), "open lines of\n%s", p.Source)
		require.Equal(t, res.Starts, starts, "logical line starts of\n%s", p.Source)
		for line, def := range res.Func {
			n, _ := strconv.Atoi(line)
			require.Equal(t, def, p.FuncOf(n), "FuncOf(%d) in\n%s", n, p.Source)
		}

		var tops []int
		rs := p.TopLevel()
		for i, r := range rs {
			last := len(p.Lines)
			if i+1 < len(rs) {
				last = rs[i+1].First - 1
			}
			require.Equal(t, last, r.Last, "TopLevel of\n%s", p.Source)
			tops = append(tops, r.First)
		}
		res.Top[0] = 1 // lines before the first statement belong to it
		require.Equal(t, res.Top, tops, "top-level statements of\n%s", p.Source)

		checkNaming(t, p)
		bumped += strings.Count(p.Source, "  # (")
	}
	require.Greater(t, bumped, 200, "the corpus exercises naming")
}

func nilIfEmpty(s []int) []int {
	if len(s) == 0 {
		return []int{}
	}
	return s
}

// FuzzParseProgram: ParseProgram never panics, and a program it accepts
// reads back equal from its Source.
func FuzzParseProgram(f *testing.F) {
	f.Add("def f(x):" + StartMarker + "\n    return x\n")
	f.Add("def f(x):" + StartMarker + "\n    s = '''\n    '''\n    return s  # (2)\n")
	f.Fuzz(func(t *testing.T, src string) {
		p, err := ParseProgram(src)
		if err != nil {
			return
		}
		require.Equal(t, src, p.Source)
		q, err := ParseProgram(p.Source)
		require.NoError(t, err)
		require.Equal(t, p, q)
		for n := range len(p.Lines) + 2 {
			if p.Nameable(n) {
				m, ok := p.LineOf(p.Text(n))
				require.True(t, ok)
				require.Equal(t, n, m)
			}
			_ = p.FuncOf(n)
		}
	})
}

// FuzzNewProgram: NewProgram never panics, and what it prepares parses
// back to the same Program.
func FuzzNewProgram(f *testing.F) {
	f.Add("def f(x):\n    return x\n    return x\n")
	f.Add("def f(x):\n    s = '''\n    '''\n    '''\n")
	f.Fuzz(func(t *testing.T, src string) {
		p, err := NewProgram(src, "f")
		if err != nil {
			return
		}
		q, err := ParseProgram(p.Source)
		require.NoError(t, err)
		require.Equal(t, p, q)
		checkNaming(t, p)
	})
}

// checkNaming checks NewProgram's promise: a code line that cannot be named
// shares its text with a line that could not take a comment.
func checkNaming(t *testing.T, p *Program) {
	info := scanPython(p.Lines)
	open := map[string]bool{}
	for i, li := range info {
		if li.kind == codeLine && li.open {
			open[p.Text(i+1)] = true
		}
	}
	for i, li := range info {
		n := i + 1
		if li.kind != codeLine {
			require.False(t, p.Nameable(n))
			continue
		}
		if p.Nameable(n) {
			m, ok := p.LineOf(p.Text(n))
			require.True(t, ok)
			require.Equal(t, n, m)
			continue
		}
		require.True(t, open[p.Text(n)], "line %d %q cannot be named in\n%s", n, p.Lines[i], p.Source)
	}
	require.Equal(t, p.Lines[p.EntryLine()-1], p.Text(p.EntryLine())+StartMarker)
}

func TestFuncOf(t *testing.T) {
	src := "import functools\n" + //  1
		"@functools.lru_cache(\n" + //  2
		"    maxsize=None)\n" + //  3
		"def f(a,\n" + //  4
		"      b):\n" + //  5
		"    class K:\n" + //  6
		"        v = [i for i in a]\n" + //  7
		"        def m(self):\n" + //  8
		"            return 1\n" + //  9
		"        w = 2\n" + // 10
		"    # comment\n" + // 11
		"    return K\n" + // 12
		"x = f(1, 2)\n" // 13
	p, err := NewProgram(src, "f")
	require.NoError(t, err)
	want := []int{0, 4, 4, 4, 4, 4, 4, 8, 8, 4, 4, 4, 0}
	for n, w := range want {
		assert.Equal(t, w, p.FuncOf(n+1), "line %d", n+1)
	}
}

func TestNilProgram(t *testing.T) {
	var p *Program
	_, ok := p.LineOf("x")
	require.False(t, ok)
	require.False(t, p.Nameable(1))
	require.Equal(t, 0, p.FuncOf(1))
	require.Equal(t, "", p.Text(1))
	require.Equal(t, 0, p.EntryLine())
}

// TestFiller: blank lines and comments alone are filler; code, lines
// inside a string literal (blank or looking like comments) and code with a
// comment are not.
func TestFiller(t *testing.T) {
	src := "# header\n\ndef f(x):\n    # why\n    s = '''\n\n# not a comment\n'''\n    return x  # done\n   \n"
	p, err := NewProgram(src, "f")
	require.NoError(t, err)
	var got []int
	for n := 0; n <= len(p.Lines)+1; n++ {
		if p.Filler(n) {
			got = append(got, n)
		}
	}
	require.Equal(t, []int{1, 2, 4, 10}, got)
}
