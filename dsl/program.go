package dsl

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// StartMarker is CWM's comment on the entry function's def line.
const StartMarker = "  # << START_OF_TRACE"

// Program is a Python source prepared for tracing and prompting: the entry
// function's def line carries StartMarker, and identical code lines are made
// unique (docs/dsl.md, "Naming lines"), so a line's text names it. The
// prepared Source is what the tracer runs, so frames quote it exactly.
//
// Build a Program with NewProgram or ParseProgram; its fields must not be
// changed afterwards.
type Program struct {
	Source string   // the prepared source, ending with "\n"
	Entry  string   // the entry function's name
	Lines  []string // Source split into lines without newlines; Lines[0] is line 1

	ix *lineIndex // derived from Lines; nil in a Program built by hand
}

// lineIndex is what the encoder and parser need to know about the lines,
// computed once per Program.
type lineIndex struct {
	entry  int            // the entry def line (1-based), 0 if unmarked
	texts  []string       // frame text per line: Lines, StartMarker cut from the entry line
	byText map[string]int // frame text -> line, nameable lines only
	funcOf []int32        // innermost enclosing def line per line, 0 at module level
	scope  []int32        // dense scope id per line: 0 module, then one per def
	scopes int            // number of scope ids
	named  []bool         // nameable per line
	filler []bool         // blank or a comment alone, outside any string literal, per line
}

// NewProgram prepares source for debugging the top-level function entry:
// line endings become "\n", each repeated code line gets "  # (k)" appended
// where a comment can legally go, and the last top-level "def entry(" line
// (the definition Python binds) gets StartMarker. The prepared program has
// the same AST as source.
func NewProgram(source, entry string) (*Program, error) {
	lines, info, err := prepare(source)
	if err != nil {
		return nil, err
	}
	entryAt := -1
	for i, l := range lines {
		if info[i].logicalStart && strings.HasPrefix(l, "def "+entry+"(") {
			entryAt = i
		}
	}
	if entryAt < 0 || entry == "" {
		return nil, fmt.Errorf("dsl: no top-level def %s( in program", entry)
	}
	if info[entryAt].open {
		return nil, fmt.Errorf("dsl: cannot mark def %s( on line %d: it ends inside a string literal or with a backslash", entry, entryAt+1)
	}
	uniquify(lines, info)
	lines[entryAt] += StartMarker
	return newProgram(lines, entry), nil
}

// NewScript prepares source for debugging as a whole script, its module
// code run as __main__: as NewProgram, but with no entry function (Entry
// is "") and so no line carrying StartMarker. The model's DSL has no
// script form: such a Program is for the real debugger only.
func NewScript(source string) (*Program, error) {
	lines, info, err := prepare(source)
	if err != nil {
		return nil, err
	}
	uniquify(lines, info)
	return newProgram(lines, ""), nil
}

// prepare checks source and splits it into lines, scanned.
func prepare(source string) ([]string, []lineInfo, error) {
	source = normalizeNewlines(source)
	if strings.TrimSpace(source) == "" {
		return nil, nil, errors.New("dsl: empty program")
	}
	if !utf8.ValidString(source) {
		return nil, nil, errors.New("dsl: program is not valid UTF-8")
	}
	if i := specialIndex(source); i >= 0 {
		return nil, nil, fmt.Errorf("dsl: program contains the special token %s at byte %d", describeAt(source, i), i)
	}
	lines := UserLines(source)
	for i, l := range lines {
		if strings.HasSuffix(l, StartMarker) {
			return nil, nil, fmt.Errorf("dsl: line %d already carries the start marker (use ParseProgram for prepared sources)", i+1)
		}
	}
	return lines, scanPython(lines), nil
}

// UserLines splits source into lines as NewProgram reads it (line endings
// normalized): line n of the program NewProgram prepares from source is
// UserLines(source)[n-1] as the user wrote it, without StartMarker and the
// comment that makes a repeated line unique. Tools show these lines; frames
// and breakpoints quote Program.Text.
func UserLines(source string) []string {
	return strings.Split(strings.TrimSuffix(normalizeNewlines(source), "\n"), "\n")
}

func normalizeNewlines(source string) string {
	source = strings.ReplaceAll(source, "\r\n", "\n")
	return strings.ReplaceAll(source, "\r", "\n")
}

// uniquify appends "  # (k)" to the k-th occurrence (k >= 2) of an
// identical code line, bumping k until the text is new, unless the line
// ends inside a string literal or with a backslash.
func uniquify(lines []string, info []lineInfo) {
	taken := make(map[string]bool, len(lines))
	for _, l := range lines {
		taken[l] = true
	}
	count := make(map[string]int, len(lines))
	for i, l := range lines {
		if info[i].kind != codeLine {
			continue
		}
		count[l]++
		k := count[l]
		if k == 1 || info[i].open {
			continue
		}
		for {
			cand := l + "  # (" + strconv.Itoa(k) + ")"
			if !taken[cand] {
				lines[i] = cand
				taken[cand] = true
				break
			}
			k++
		}
	}
}

// ParseProgram reads a prepared source, as it appears in a prompt: it must
// end with "\n", and exactly one line, a top-level def, carries StartMarker,
// which names the entry function.
func ParseProgram(source string) (*Program, error) {
	if !strings.HasSuffix(source, "\n") {
		return nil, errors.New("dsl: prepared program does not end with a newline")
	}
	if strings.ContainsRune(source, '\r') {
		return nil, errors.New("dsl: prepared program contains a carriage return")
	}
	if !utf8.ValidString(source) {
		return nil, errors.New("dsl: program is not valid UTF-8")
	}
	if i := specialIndex(source); i >= 0 {
		return nil, fmt.Errorf("dsl: program contains the special token %s at byte %d", describeAt(source, i), i)
	}
	lines := strings.Split(source[:len(source)-1], "\n")
	info := scanPython(lines)
	entry := ""
	for i, l := range lines {
		if !strings.HasSuffix(l, StartMarker) {
			continue
		}
		if entry != "" {
			return nil, fmt.Errorf("dsl: second start marker on line %d", i+1)
		}
		name, ok := defName(l)
		if !ok || !info[i].logicalStart {
			return nil, fmt.Errorf("dsl: start marker on line %d is not on a top-level def", i+1)
		}
		entry = name
	}
	if entry == "" {
		return nil, errors.New("dsl: no line carries the start marker")
	}
	return newProgram(lines, entry), nil
}

// DefName returns the name a def line defines: NAME for "def NAME(...",
// indented or not, async or not; false for any other line.
func DefName(line string) (string, bool) {
	return defName(strings.TrimPrefix(strings.TrimSpace(line), "async "))
}

// defName returns NAME for a line "def NAME(...".
func defName(l string) (string, bool) {
	rest, ok := strings.CutPrefix(l, "def ")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "(")
	if !ok || name == "" || strings.ContainsAny(name, " \t#:)") {
		return "", false
	}
	return name, true
}

// newProgram assembles a Program from prepared lines.
func newProgram(lines []string, entry string) *Program {
	return &Program{
		Source: strings.Join(lines, "\n") + "\n",
		Entry:  entry,
		Lines:  lines,
		ix:     buildIndex(lines),
	}
}

// buildIndex derives the line index from the prepared lines alone, so a
// Program from NewProgram and one from ParseProgram of its Source agree.
func buildIndex(lines []string) *lineIndex {
	info := scanPython(lines)
	ix := &lineIndex{
		texts:  make([]string, len(lines)),
		byText: make(map[string]int, len(lines)),
		named:  make([]bool, len(lines)),
		filler: make([]bool, len(lines)),
		funcOf: funcLines(lines, info),
		scope:  make([]int32, len(lines)),
	}
	for i, l := range lines {
		ix.filler[i] = info[i].kind == blankLine || info[i].kind == commentLine
		t, marked := strings.CutSuffix(l, StartMarker)
		if marked && ix.entry == 0 && info[i].logicalStart {
			ix.entry = i + 1
		} else {
			t = l
		}
		ix.texts[i] = t
	}
	dup := make(map[string]bool)
	for i, t := range ix.texts {
		if info[i].kind != codeLine {
			continue
		}
		if _, seen := ix.byText[t]; seen {
			dup[t] = true
		}
		ix.byText[t] = i + 1
	}
	for t := range dup {
		delete(ix.byText, t)
	}
	for _, n := range ix.byText {
		ix.named[n-1] = true
	}
	// Dense scope ids: 0 for module level, then the defs in line order.
	ids := map[int32]int32{0: 0}
	for i, f := range ix.funcOf {
		id, ok := ids[f]
		if !ok {
			id = int32(len(ids))
			ids[f] = id
		}
		ix.scope[i] = id
	}
	ix.scopes = len(ids)
	return ix
}

// index returns the line index, building a fresh one for a Program that
// was assembled by hand.
func (p *Program) index() *lineIndex {
	switch {
	case p == nil:
		return buildIndex(nil)
	case p.ix != nil:
		return p.ix
	}
	return buildIndex(p.Lines)
}

// LineOf returns the 1-based number of the line whose text is text, where
// text is the line as frames write it (Text). It is exact for nameable
// lines and fails for any other.
func (p *Program) LineOf(text string) (int, bool) {
	n, ok := p.index().byText[text]
	return n, ok
}

// Text returns line n (1-based) as frames and breakpoints write it, without
// its newline: the prepared line, with StartMarker cut from the entry def
// line as in CWM's traces. It returns "" for a line out of range.
func (p *Program) Text(n int) string {
	ix := p.index()
	if n < 1 || n > len(ix.texts) {
		return ""
	}
	return ix.texts[n-1]
}

// Nameable reports whether line n can appear in a frame or a breakpoint: it
// is a code line (not blank, not a comment alone, not wholly inside a
// string literal) whose Text is unique among code lines.
// After NewProgram every code line is, except repeated lines that end
// inside a string literal or with a backslash continuation.
func (p *Program) Nameable(n int) bool {
	ix := p.index()
	return n >= 1 && n <= len(ix.named) && ix.named[n-1]
}

// Filler reports whether line n is blank or a comment alone, outside any
// string literal: a line that leaving out changes nothing of the program's
// code (a shortened prompt drops such lines before it gives up).
func (p *Program) Filler(n int) bool {
	ix := p.index()
	return n >= 1 && n <= len(ix.filler) && ix.filler[n-1]
}

// FuncOf returns the def line of the innermost function enclosing line n by
// indentation, 0 at module level (and for a line out of range). A def line,
// its decorators and its signature belong to the function itself.
func (p *Program) FuncOf(n int) int {
	ix := p.index()
	if n < 1 || n > len(ix.funcOf) {
		return 0
	}
	return int(ix.funcOf[n-1])
}

// EntryLine returns the entry function's def line (the one with
// StartMarker), 0 if there is none.
func (p *Program) EntryLine() int { return p.index().entry }

// LineRange is the lines First through Last of a program, 1-based and
// inclusive.
type LineRange struct{ First, Last int }

// TopLevel splits the program into its top-level statements, in order,
// covering every line: a statement holds its decorators, its body (nested
// defs and classes included) and the blank and comment lines after it up to
// the next top-level statement; lines before the first statement belong to
// the first range. Shortened prompts show or leave out whole statements,
// so what a model reads is still Python that the program's lines quote.
func (p *Program) TopLevel() []LineRange {
	info := scanPython(p.Lines)
	var out []LineRange
	decorated := false // the previous top-level logical line was a decorator
	for i, l := range p.Lines {
		li := info[i]
		if !li.logicalStart || li.kind != codeLine || li.indent != 0 {
			continue
		}
		switch {
		case len(out) == 0:
			out = append(out, LineRange{First: 1})
		case !decorated:
			out[len(out)-1].Last = i
			out = append(out, LineRange{First: i + 1})
		}
		decorated = strings.HasPrefix(l, "@")
	}
	if len(out) == 0 {
		out = append(out, LineRange{First: 1})
	}
	out[len(out)-1].Last = len(p.Lines)
	return out
}
