package dsl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRealTracesMatchReference traces the CRUXEval dev programs with
// CPython (testdata/trace_ref.py), builds the step_into trajectory of each
// from the raw events, and checks that Encode writes exactly the text the
// Python reference writes with json.dumps, ast and the specification's
// rules; and that the text parses back to the trajectory.
func TestRealTracesMatchReference(t *testing.T) {
	t.Parallel()
	items := cruxevalDev(t)
	var in bytes.Buffer
	var progs []*Program
	for _, it := range items {
		p, err := NewProgram(it.Code, "f")
		require.NoError(t, err)
		progs = append(progs, p)
		line, err := json.Marshal(map[string]string{"source": p.Source, "call": it.Call()})
		require.NoError(t, err)
		in.Write(append(line, '\n'))
	}
	py := python3(t)
	out := runPythonFile(t, py, "testdata/trace_ref.py", in.Bytes())
	results := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Len(t, results, len(progs))
	checked, frames, dots, values := 0, 0, 0, 0
	for k, p := range progs {
		var res struct {
			Skip   string
			Events [][]json.RawMessage
			Text   string
		}
		require.NoError(t, json.Unmarshal([]byte(results[k]), &res))
		if res.Skip != "" {
			continue
		}
		tr := &Trajectory{Program: p}
		for i, ev := range res.Events {
			s := decodeEvent(t, p, ev)
			if i == 0 {
				tr.Start = *s
			} else {
				tr.Steps = append(tr.Steps, Step{Action{Kind: StepInto}, s})
			}
		}
		tr.Steps = append(tr.Steps, Step{Action{Kind: StepInto}, nil})
		text, err := tr.Encode()
		require.NoError(t, err, "program %d", k)
		require.Equal(t, res.Text, text, "program %d:\n%s", k, p.Source)
		back, err := Parse(text)
		require.NoError(t, err)
		require.Equal(t, tr, back)
		checkEncoder(t, tr)
		checked++
		frames += len(res.Events)
		dots += strings.Count(text, `": ".."`)
		values += strings.Count(text, `": "`)
	}
	require.GreaterOrEqual(t, checked, len(progs)*9/10, "most programs trace")
	require.Greater(t, dots, 0)
	t.Logf("%d programs, %d frames, %d values (%d \"..\") match the Python reference", checked, frames, values, dots)
}

// decodeEvent builds a State from [event, line, [[name, repr]...], value].
func decodeEvent(t *testing.T, p *Program, ev []json.RawMessage) *State {
	require.Len(t, ev, 4)
	var name, value string
	var line int
	var locals [][2]string
	require.NoError(t, json.Unmarshal(ev[0], &name))
	require.NoError(t, json.Unmarshal(ev[1], &line))
	require.NoError(t, json.Unmarshal(ev[2], &locals))
	require.NoError(t, json.Unmarshal(ev[3], &value))
	e, err := ParseEvent(name)
	require.NoError(t, err)
	s := &State{Event: e, Line: line, Source: p.Text(line), Value: value}
	for _, l := range locals {
		s.Locals = append(s.Locals, Local{l[0], l[1]})
	}
	return s
}

// runPythonFile runs a Python script file with stdin and returns stdout.
func runPythonFile(t *testing.T, py, file string, stdin []byte) []byte {
	t.Helper()
	return runPython(t, fmt.Sprintf("import runpy; runpy.run_path(%q, run_name='__main__')", file), stdin)
}
