package eval

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ndbg/ndbg/data/cruxeval"
	"github.com/ndbg/ndbg/dataset"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/progen"
)

// Item is one program to evaluate: a source, its entry function and the
// call to run. CRUXEval items also carry their input and reference output.
type Item struct {
	ID     string `json:"id"`
	Family string `json:"family"` // a progen family, or "items" for a JSONL file
	Source string `json:"-"`
	Entry  string `json:"-"`
	Call   string `json:"-"`
	Input  string `json:"-"` // CRUXEval: the arguments' text, e.g. "[1, 2], 'a'"
	Output string `json:"-"` // CRUXEval: the reference output, a Python literal
}

// Generated returns n held-out generated programs: program i comes from
// progen with dataset.ProgramSeed(seed, i), as `ndbg data` makes them, so a
// seed never used for training gives programs the model has not seen.
func Generated(seed uint64, n int, families []string) ([]Item, error) {
	items := make([]Item, 0, n)
	for i := range n {
		p, err := progen.Generate(dataset.ProgramSeed(seed, i), families)
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		items = append(items, Item{ID: fmt.Sprintf("gen-%d-%d", seed, i), Family: p.Family,
			Source: p.Source, Entry: p.Entry, Call: p.Call})
	}
	return items, nil
}

// LoadItems reads CRUXEval-style JSONL (fields code, input, output, id):
// the entry is f and the call f(<input>). Items without an output can still
// be used for next-state evaluation.
func LoadItems(path string) ([]Item, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer f.Close()
	return ReadItems(f, path)
}

// ReadItems reads CRUXEval-style JSONL from r as LoadItems does; name (a
// file name) is used in errors and in the ids of items that have none.
func ReadItems(r io.Reader, name string) ([]Item, error) {
	var items []Item
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var rec struct {
			Code, Input, Output, ID string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			return nil, fmt.Errorf("eval: %s:%d: %w", name, n, err)
		}
		if rec.Code == "" {
			return nil, fmt.Errorf("eval: %s:%d: no code", name, n)
		}
		if rec.ID == "" {
			rec.ID = fmt.Sprintf("%s:%d", filepath.Base(name), n)
		}
		items = append(items, Item{ID: rec.ID, Family: "items", Source: rec.Code, Entry: "f",
			Call: "f(" + rec.Input + ")", Input: rec.Input, Output: rec.Output})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", name, err)
	}
	return items, nil
}

// DevItems returns CRUXEval's development split, embedded in the binary
// (package data/cruxeval): what `ndbg eval --items dev` evaluates.
func DevItems() ([]Item, error) {
	return ReadItems(strings.NewReader(cruxeval.DevJSONL()), "dev.jsonl")
}

// returnLines are the lines of prog's entry function that hold a return
// statement, ascending; when it has none, its last code line (where the
// implicit return happens).
func returnLines(prog *dsl.Program) []int {
	entry := prog.EntryLine()
	var out []int
	last := 0
	for n := entry + 1; n <= len(prog.Lines); n++ {
		if prog.FuncOf(n) != entry || !prog.Nameable(n) {
			continue
		}
		last = n
		t := strings.TrimSpace(prog.Text(n))
		if t == "return" || strings.HasPrefix(t, "return ") || strings.HasPrefix(t, "return(") || strings.HasPrefix(t, "return[") ||
			strings.HasPrefix(t, "return{") || strings.HasPrefix(t, "return'") || strings.HasPrefix(t, "return\"") {
			out = append(out, n)
		}
	}
	if len(out) == 0 && last > 0 {
		out = []int{last}
	}
	return out
}

// param is one parameter of the entry function's signature.
type param struct {
	name    string
	kind    ArgKind // Positional (or positional-or-keyword), Star, Keyword (keyword-only), StarStar
	posOnly bool
}

// signature parses the parameters of the entry's def (which may span lines).
func signature(prog *dsl.Program) ([]param, error) {
	entry := prog.EntryLine()
	if entry == 0 {
		return nil, errors.New("eval: no entry function")
	}
	text := strings.Join(prog.Lines[entry-1:], "\n")
	open := strings.IndexByte(text, '(')
	if open < 0 {
		return nil, errors.New("eval: entry def has no parameter list")
	}
	// Split the text inside the outer parentheses at top-level commas,
	// skipping strings, comments and nested brackets.
	var parts []string
	var cur strings.Builder
	depth := 0
	var quote byte
	for i := open + 1; i < len(text); i++ {
		c := text[i]
		if quote != 0 {
			cur.WriteByte(c)
			if c == '\\' && i+1 < len(text) {
				i++
				cur.WriteByte(text[i])
			} else if c == quote {
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			if depth == 0 {
				parts = append(parts, cur.String())
				return params(parts), nil
			}
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, cur.String())
				cur.Reset()
				continue
			}
		case '#':
			for i+1 < len(text) && text[i+1] != '\n' {
				i++
			}
			continue
		}
		cur.WriteByte(c)
	}
	return nil, errors.New("eval: unterminated parameter list")
}

// params classifies parameter texts such as "x", "y=1", "*args", "*",
// "/", "k: int = 2", "**kw".
func params(parts []string) []param {
	var out []param
	kwOnly := false
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if i := strings.IndexAny(p, ":="); i >= 0 {
			p = strings.TrimSpace(p[:i])
		}
		switch {
		case p == "":
		case p == "/":
			for i := range out {
				out[i].posOnly = true
			}
		case p == "*":
			kwOnly = true
		case strings.HasPrefix(p, "**"):
			out = append(out, param{name: strings.TrimSpace(p[2:]), kind: StarStar})
		case strings.HasPrefix(p, "*"):
			out = append(out, param{name: strings.TrimSpace(p[1:]), kind: Star})
			kwOnly = true
		case kwOnly:
			out = append(out, param{name: p, kind: Keyword})
		default:
			out = append(out, param{name: p, kind: Positional})
		}
	}
	return out
}

// callArgs builds the arguments of a call of the entry from the locals of a
// call state: parameters in order, positionally while none is missing,
// then by keyword; *args and **kwargs unpacked. Locals that are not
// parameters are ignored; a missing parameter is left out (its default
// applies, or the call fails, which scores as wrong).
func callArgs(sig []param, locals []dsl.Local) []Arg {
	val := make(map[string]string, len(locals))
	for _, l := range locals {
		val[l.Name] = l.Repr
	}
	var args []Arg
	byKeyword := false
	for _, p := range sig {
		r, ok := val[p.name]
		if !ok {
			if p.kind == Positional {
				byKeyword = true
			}
			continue
		}
		switch {
		case p.kind == Star:
			if byKeyword {
				continue // cannot follow keyword arguments
			}
			args = append(args, Arg{Kind: Star, Name: p.name, Repr: r})
		case p.kind == StarStar:
			args = append(args, Arg{Kind: StarStar, Name: p.name, Repr: r})
		case p.kind == Keyword || byKeyword && !p.posOnly:
			args = append(args, Arg{Kind: Keyword, Name: p.name, Repr: r})
		default:
			args = append(args, Arg{Kind: Positional, Name: p.name, Repr: r})
		}
	}
	return args
}
