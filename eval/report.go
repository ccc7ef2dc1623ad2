package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/ndbg/ndbg/dsl"
)

// Summary is everything one `ndbg eval` run measured: its JSON output and
// the input of its report.
type Summary struct {
	Model   string      `json:"model"`
	Backend string      `json:"backend"`
	Python  string      `json:"python,omitempty"`
	Args    []string    `json:"args,omitempty"` // the command line, for the record
	Next    *NextResult `json:"next_state,omitempty"`
	Crux    *CruxResult `json:"cruxeval,omitempty"`
}

// JSON renders the summary, indented.
func (s *Summary) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	return append(b, '\n'), nil
}

// actionOrder lists action kinds in DSL order.
func actionOrder() []string {
	var out []string
	for k := dsl.StepInto; k <= dsl.InvContinue; k++ {
		out = append(out, k.String())
	}
	return out
}

// bucketCmp orders horizon buckets "0", "1", "2-3", ... numerically.
func bucketCmp(a, b string) int {
	lo := func(s string) int {
		var v int
		fmt.Sscanf(s, "%d", &v)
		return v
	}
	return lo(a) - lo(b)
}

// Charts returns the report's charts by file name.
func (s *Summary) Charts() map[string]*Chart {
	out := map[string]*Chart{}
	if n := s.Next; n != nil && n.All.N > 0 {
		buckets := map[string]bool{}
		for _, h := range n.ByHorizon {
			for b := range h {
				buckets[b] = true
			}
		}
		xs := sortedKeys(buckets, bucketCmp)
		for _, part := range []struct {
			file, title string
			inverse     bool
		}{{"horizon-forward.png", "forward", false}, {"horizon-inverse.png", "inverse", true}} {
			hor := &Chart{Title: "Next-state exact match by horizon: " + part.title + " actions", XLabel: "horizon (states skipped)", YLabel: "exact match %", X: xs}
			for k := dsl.StepInto; k <= dsl.InvContinue; k++ {
				h := n.ByHorizon[k.String()]
				if h == nil || k.Inverse() != part.inverse {
					continue
				}
				ser := Series{Name: k.String()}
				for _, b := range xs {
					v := math.NaN()
					if t := h[b]; t != nil {
						v = pct(t.State, t.N)
					}
					ser.Values = append(ser.Values, v)
				}
				hor.Series = append(hor.Series, ser)
			}
			if len(hor.Series) > 0 {
				out[part.file] = hor
			}
		}

		var groups []string
		var tallies []*Tally
		for _, a := range actionOrder() {
			if t := n.ByAction[a]; t != nil {
				groups = append(groups, a)
				tallies = append(tallies, t)
			}
		}
		groups = append(groups, "forward", "inverse")
		tallies = append(tallies, &n.Forward, &n.Inverse)
		act := &Chart{Title: "Next-state exact match by action and component", XLabel: "action", YLabel: "exact match %", X: groups, Bars: true}
		comps := []struct {
			name string
			f    func(t *Tally) float64
		}{
			{"state", func(t *Tally) float64 { return pct(t.State, t.N) }},
			{"event", func(t *Tally) float64 { return pct(t.Event, t.N) }},
			{"line", func(t *Tally) float64 { return pct(t.Line, t.N) }},
			{"locals", func(t *Tally) float64 { return pct(t.Locals, t.LocalN) }},
			{"value", func(t *Tally) float64 { return pct(t.Value, t.ValueN) }},
		}
		for _, c := range comps {
			ser := Series{Name: c.name}
			for _, t := range tallies {
				ser.Values = append(ser.Values, c.f(t))
			}
			act.Series = append(act.Series, ser)
		}
		out["actions.png"] = act
		if n.Calibration != nil {
			out["reliability.png"] = n.Calibration.chart()
		}
	}
	if c := s.Crux; c != nil && len(c.Scores) > 0 {
		ch := &Chart{Title: "CRUXEval pass@1", XLabel: "strategy (O: step_return, breakpoint, steps; I: inverse)", YLabel: "pass@1 %", Bars: true}
		ser := Series{Name: "pass@1"}
		for _, st := range Strategies() {
			if p := c.Scores[st]; p != nil {
				ch.X = append(ch.X, st)
				ser.Values = append(ser.Values, p.Pass1)
			}
		}
		ch.Series = []Series{ser}
		out["cruxeval.png"] = ch
	}
	return out
}

// WriteReport writes dir/report.md and its PNG charts.
func (s *Summary) WriteReport(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	charts := s.Charts()
	for name, ch := range charts {
		b, err := ch.PNG()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("eval: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(s.Markdown(charts)), 0o644); err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	return nil
}

// f1 formats a percentage with one decimal, "-" when undefined.
func f1(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}

// cell is "pct (a/b)".
func cell(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%s (%d/%d)", f1(pct(a, b)), a, b)
}

// Markdown renders the report; charts are the files it links.
func (s *Summary) Markdown(charts map[string]*Chart) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# ndbg evaluation\n\n- model: `%s`\n- backend: %s\n", s.Model, s.Backend)
	if s.Python != "" {
		fmt.Fprintf(&b, "- python: %s\n", strings.Fields(s.Python)[0])
	}
	if len(s.Args) > 0 {
		fmt.Fprintf(&b, "- command: `ndbg eval %s`\n", strings.Join(s.Args, " "))
	}
	if n := s.Next; n != nil {
		fmt.Fprintf(&b, "\n## Next-state exact match\n\nSetting: %s. Pairs: %s.\n", n.Setting, pairsDoc(n.Mode))
		fmt.Fprintf(&b, "Locals are compared as a set of (name, repr) and memory addresses (` at 0x...`) in reprs are ignored.\n")
		fmt.Fprintf(&b, "A component is counted only where the real next state has it (locals at call/line, value at return/exception); ")
		fmt.Fprintf(&b, "running past the end counts as an event of its own. Backend errors count as wrong.\n\n")
		fmt.Fprintf(&b, "%d items, %d evaluated", n.Items, n.Programs)
		if len(n.Skipped) > 0 {
			fmt.Fprintf(&b, " (skipped: %s)", mapText(n.Skipped))
		}
		fmt.Fprintf(&b, ", %d predictions in %.0f s.\n\n", n.All.N, n.ElapsedSec)
		b.WriteString("| action | n | state | event | line | locals | value | errors |\n|---|---|---|---|---|---|---|---|\n")
		row := func(name string, t *Tally) {
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %d |\n", name, t.N, cell(t.State, t.N), cell(t.Event, t.N),
				cell(t.Line, t.N), cell(t.Locals, t.LocalN), cell(t.Value, t.ValueN), t.Errors)
		}
		for _, a := range actionOrder() {
			if t := n.ByAction[a]; t != nil {
				row(a, t)
			}
		}
		row("**forward**", &n.Forward)
		row("**inverse**", &n.Inverse)
		row("**all**", &n.All)
		if len(n.ByFamily) > 1 {
			b.WriteString("\n| family | n | state | event | line | locals | value | errors |\n|---|---|---|---|---|---|---|---|\n")
			for _, f := range sortedKeys(n.ByFamily, strings.Compare) {
				row(f, n.ByFamily[f])
			}
		}
		if charts["actions.png"] != nil {
			b.WriteString("\n![exact match by action and component](actions.png)\n")
		}
		b.WriteString("\n### By horizon (states skipped): whole-state exact match\n\n")
		buckets := map[string]bool{}
		for _, h := range n.ByHorizon {
			for k := range h {
				buckets[k] = true
			}
		}
		xs := sortedKeys(buckets, bucketCmp)
		b.WriteString("| action |")
		for _, x := range xs {
			fmt.Fprintf(&b, " %s |", x)
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(xs)) + "\n")
		for _, a := range actionOrder() {
			h := n.ByHorizon[a]
			if h == nil {
				continue
			}
			fmt.Fprintf(&b, "| %s |", a)
			for _, x := range xs {
				if t := h[x]; t != nil {
					fmt.Fprintf(&b, " %s |", cell(t.State, t.N))
				} else {
					b.WriteString(" |")
				}
			}
			b.WriteString("\n")
		}
		for _, f := range []string{"horizon-forward.png", "horizon-inverse.png"} {
			if charts[f] != nil {
				fmt.Fprintf(&b, "\n![exact match by horizon](%s)\n", f)
			}
		}
		if n.Calibration != nil {
			b.WriteString(n.Calibration.markdown(charts["reliability.png"] != nil))
		}
		if len(n.Misses) > 0 {
			b.WriteString("\n### Examples of wrong predictions\n\n| item | action | horizon | from | want | got |\n|---|---|---|---|---|---|\n")
			for _, m := range n.Misses {
				fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s |\n", m.Item, mdCode(m.Action), m.Horizon, mdCode(m.From), mdCode(m.Want), mdCode(m.Got))
			}
		}
	}
	if c := s.Crux; c != nil {
		fmt.Fprintf(&b, "\n## CRUXEval\n\n%d items, %d sample(s) per item and strategy (pass@1: %s), scored the official way ", c.Items, c.Samples, samplesDoc(c.Samples))
		b.WriteString("(the item's code, then `assert <output> == <prediction>` for -O or `assert f(<input>) == <output>` for -I, in a fresh sandboxed python3 with a 3 s limit).\n\n")
		b.WriteString("| task | strategy | pass@1 | correct / predictions | no answer | backend errors |\n|---|---|---|---|---|---|\n")
		for _, st := range Strategies() {
			p := c.Scores[st]
			if p == nil {
				continue
			}
			task := "O"
			if st == Inverse {
				task = "I"
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %d / %d | %d | %d |\n", task, st, f1(p.Pass1), p.Correct, p.Samples, p.NoAnswer, p.Errors)
		}
		b.WriteString("\nStrategies: `step_return` from the call state; `breakpoint`: run to f's return line(s) (breakpoint, or continue with one breakpoint per return line), then step_over to the return event; ")
		b.WriteString("`steps`: step_over until f returns; `inverse`: start at a return state of f (its last return line, the reference output as value), inv_step_return to the call, call f with the call state's locals.\n")
		if charts["cruxeval.png"] != nil {
			b.WriteString("\n![CRUXEval pass@1](cruxeval.png)\n")
		}
	}
	return b.String()
}

func pairsDoc(mode string) string {
	if mode == "every" {
		return "every state with each of step_into, step_over, step_return and their inverses (capped per program, evenly spread)"
	}
	return "the steps of trajectories sampled with the training data's policy (statetree.DefaultParams), capped per program"
}

func samplesDoc(n int) string {
	if n <= 1 {
		return "greedy decoding, one sample"
	}
	return "the unbiased estimator, mean over items of correct/samples"
}

// mdCode quotes s as inline code in a table cell.
func mdCode(s string) string {
	if r := []rune(s); len(r) > 120 {
		s = string(r[:117]) + "..."
	}
	s = strings.NewReplacer("|", `\|`, "`", "'", "\n", " ").Replace(s)
	return "`" + s + "`"
}

func mapText(m map[string]int) string {
	var parts []string
	for _, k := range sortedKeys(m, strings.Compare) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
