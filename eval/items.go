package eval

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ndbg/ndbg/data/cruxeval"
	"github.com/ndbg/ndbg/dataset"
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
	// Generated marks ndbg's own programs (Generated, from progen), which
	// may share an interpreter when traced; every other item gets one of
	// its own (trace.Worker). Never read from a file.
	Generated bool `json:"-"`
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
			Source: p.Source, Entry: p.Entry, Call: p.Call, Generated: true})
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
