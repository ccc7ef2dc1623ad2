package dsl

import (
	"fmt"
	"strings"
)

// StartMarker is CWM's comment on the entry function's def line.
const StartMarker = "  # << START_OF_TRACE"

// Program is a Python source prepared for tracing and prompting: the entry
// function's def line carries StartMarker, and identical code lines are made
// unique (docs/dsl.md, "Naming lines"), so a line's text names it. The
// prepared Source is what the tracer runs, so frames quote it exactly.
type Program struct {
	Source string   // the prepared source
	Entry  string   // the entry function's name
	Lines  []string // Source split into lines without newlines; Lines[0] is line 1
}

// NewProgram prepares source for debugging the top-level function entry.
// TODO(dsl): make duplicate code lines unique.
func NewProgram(source, entry string) (*Program, error) {
	lines := strings.Split(strings.TrimSuffix(source, "\n"), "\n")
	found := false
	for i, l := range lines {
		if strings.HasPrefix(l, "def "+entry+"(") {
			lines[i] = l + StartMarker
			found = true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("dsl: no top-level def %s( in program", entry)
	}
	return &Program{Source: strings.Join(lines, "\n") + "\n", Entry: entry, Lines: lines}, nil
}

// LineOf returns the 1-based number of the line whose text is text.
func (p *Program) LineOf(text string) (int, bool) {
	for i, l := range p.Lines {
		if l == text {
			return i + 1, true
		}
	}
	return 0, false
}
