// Package cruxeval holds CRUXEval's development split (100 of the 800
// items, see NOTICE; MIT, see LICENSE) embedded in the binary, so that tests
// in every package and `ndbg eval --items dev` use it from a bare clone.
//
// The other 700 items are a held-out split and deliberately not here:
// nothing is tuned to CRUXEval.
package cruxeval

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"
)

//go:embed dev.jsonl
var devJSONL string

// Item is one CRUXEval problem: a function f (Code), the text of its
// arguments (Input, e.g. "[1, 2], 'a'"), the repr of f(Input) (Output),
// and an id such as "sample_8".
type Item struct {
	Code   string `json:"code"`
	Input  string `json:"input"`
	Output string `json:"output"`
	ID     string `json:"id"`
}

// Call is the call expression CRUXEval evaluates: f(<Input>).
func (it Item) Call() string { return "f(" + it.Input + ")" }

// DevJSONL returns the development split as JSON lines, as stored (one
// object with code, input, output and id per line).
func DevJSONL() string { return devJSONL }

// Dev returns the development split's items in file order.
func Dev() ([]Item, error) {
	var items []Item
	for n, line := range strings.Split(strings.TrimSpace(devJSONL), "\n") {
		var it Item
		if err := json.Unmarshal([]byte(line), &it); err != nil {
			return nil, fmt.Errorf("cruxeval: dev.jsonl:%d: %w", n+1, err)
		}
		items = append(items, it)
	}
	return items, nil
}
