package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/pyeval"
)

// predicted says whether the session's states are predictions (anything
// but the real backend), which every value derived from them must say.
func (d *debugger) predicted() bool { return d.s.Backend().Name() != "real" }

// frames returns the call stack, outermost first; when the backend cannot
// know it, only the current frame; in post-mortem debugging, the frames
// the escaping exception passed through.
func (d *debugger) frames() []ndbg.Frame {
	if fs := d.s.Frames(); fs != nil {
		return fs
	}
	if x := d.escaped(); x != nil && x.Traceback != nil {
		return x.Traceback
	}
	st, ok := d.s.State()
	if !ok {
		return nil
	}
	return []ndbg.Frame{{Def: d.s.Program().FuncOf(st.Line), Line: st.Line, Locals: st.Locals, ID: -1,
		LocalsKnown: st.Event == dsl.Call || st.Event == dsl.Line || st.LocalsKnown}}
}

// selected returns the frame u and d selected (the current one unless moved).
func (d *debugger) selected() (ndbg.Frame, bool) {
	fs := d.frames()
	if d.up >= len(fs) {
		return ndbg.Frame{}, false
	}
	return fs[len(fs)-1-d.up], true
}

// evalCmd is p and pp: an expression in the selected frame (evalIn).
// With no expression, p lists the locals (pdb's p needs one).
func (d *debugger) evalCmd(ctx context.Context, expr string, pretty bool) {
	f, ok := d.selected()
	switch {
	case !ok:
		fmt.Fprintln(d.out, "*** the program finished")
		return
	case !f.LocalsKnown && !d.live():
		fmt.Fprintln(d.out, "*** this frame's locals are unknown (a prediction shows only the current frame's, and none at a return or exception)")
		return
	case expr == "":
		for _, l := range f.Locals {
			fmt.Fprintf(d.out, "%s = %s\n", l.Name, l.Repr)
		}
		return
	}
	mode := ndbg.EvalRepr
	if pretty {
		mode = ndbg.EvalPretty
	}
	if v, ok := d.evalPrint(ctx, f, expr, mode); ok {
		fmt.Fprintln(d.out, v)
		if d.predicted() {
			fmt.Fprintln(d.out, "(derived from a prediction: evaluated on the predicted locals)")
		}
	}
}

// evalPrint evaluates code in the selected frame, writes what it printed,
// and returns its value; an error is written as pdb writes it ("*** ...").
func (d *debugger) evalPrint(ctx context.Context, f ndbg.Frame, code, mode string) (string, bool) {
	res, err := d.evalIn(ctx, d.s, d.up, f, code, mode)
	if err != nil {
		fmt.Fprintf(d.out, "*** %v\n", err)
		return "", false
	}
	_, _ = io.WriteString(d.out, res.Output)
	if res.Error != "" {
		fmt.Fprintf(d.out, "*** %s\n", res.Error)
		return "", false
	}
	return res.Value, res.HasValue
}

// live says whether the session's states are a live program's (the real
// backend), in whose frames code runs with pdb's semantics.
func (d *debugger) live() bool { return !d.predicted() }

// evalIn runs code (mode: ndbg.EvalRepr, ...) in frame level of sess (0:
// the current frame; f is that frame). On the real backend it runs in the
// live program's frame, as pdb: its globals and locals, any object, the
// program's functions (ndbg.Session.Eval). A prediction has no live
// program: expressions (p, pp, conditions) are evaluated over the frame's
// locals rebuilt from their reprs (internal/pyeval); statements, whatis and
// args need the real backend.
func (d *debugger) evalIn(ctx context.Context, sess *ndbg.Session, level int, f ndbg.Frame, code, mode string) (ndbg.EvalResult, error) {
	if sess.Backend().Name() == "real" {
		res, err := sess.Eval(ctx, level, code, mode)
		if !errors.Is(err, ndbg.ErrUnsupported) { // a recorded run has no live program
			return res, err
		}
	}
	if !f.LocalsKnown {
		return ndbg.EvalResult{}, errors.New("this frame's locals are unknown (a prediction shows only the current frame's, and none at a return or exception)")
	}
	switch mode {
	case ndbg.EvalRepr, ndbg.EvalPretty:
	case ndbg.EvalBool:
		code = "bool(" + code + ")"
	default:
		return ndbg.EvalResult{}, fmt.Errorf("running %q needs the real backend: a prediction has no live program to run it in", code)
	}
	res, err := pyeval.Eval(ctx, d.lim, f.Locals, []string{code}, mode == ndbg.EvalPretty)
	if err != nil {
		return ndbg.EvalResult{}, err
	}
	return ndbg.EvalResult{Value: res[0].Value, Error: res[0].Error, HasValue: res[0].Error == ""}, nil
}

// retval is pdb's retval: the value of the return the current state is.
func (d *debugger) retval() {
	st, ok := d.s.State()
	if !ok {
		fmt.Fprintln(d.out, "*** the program finished")
		return
	}
	if d.up != 0 || st.Event != dsl.Return {
		fmt.Fprintln(d.out, "*** Not yet returned!")
		return
	}
	fmt.Fprintln(d.out, st.Value)
	if d.predicted() {
		fmt.Fprintln(d.out, "(predicted)")
	}
}

// shown is one display expression and its last value.
type shown struct{ expr, value string }

// displayValue is an expression's value for display, or pdb's "** raised
// ... **" when it cannot be evaluated.
func (d *debugger) displayValue(ctx context.Context, f ndbg.Frame, expr string) string {
	if !f.LocalsKnown && !d.live() {
		return "** unknown: no locals here **"
	}
	res, err := d.evalIn(ctx, d.s, d.up, f, expr, ndbg.EvalRepr)
	switch {
	case err != nil:
		return fmt.Sprintf("** %v **", err)
	case res.Error != "":
		return "** raised " + res.Error + " **"
	}
	return res.Value
}

// display is pdb's display: with an expression, show its value now and at
// every stop in this frame where it changed; without, list them. A session
// that cannot tell frames apart (a prediction) keeps one list for all.
func (d *debugger) display(ctx context.Context, expr string) {
	f, ok := d.selected()
	if !ok {
		fmt.Fprintln(d.out, "*** the program finished")
		return
	}
	if expr == "" {
		fmt.Fprintln(d.out, "Currently displaying:")
		for _, e := range d.displays[f.ID] {
			fmt.Fprintf(d.out, "%s: %s\n", e.expr, e.value)
		}
		return
	}
	v := d.displayValue(ctx, f, expr)
	list := d.displays[f.ID]
	if i := indexShown(list, expr); i >= 0 {
		list[i].value = v
	} else {
		d.displays[f.ID] = append(list, &shown{expr, v})
	}
	fmt.Fprintf(d.out, "display %s: %s\n", expr, v)
}

func indexShown(list []*shown, expr string) int {
	for i, e := range list {
		if e.expr == expr {
			return i
		}
	}
	return -1
}

// undisplay is pdb's undisplay: one expression, or all in this frame.
func (d *debugger) undisplay(expr string) {
	f, ok := d.selected()
	if !ok {
		return
	}
	if expr == "" {
		delete(d.displays, f.ID)
		return
	}
	list := d.displays[f.ID]
	i := indexShown(list, expr)
	if i < 0 {
		fmt.Fprintln(d.out, "*** not displaying", expr)
		return
	}
	d.displays[f.ID] = append(list[:i], list[i+1:]...)
}

// showDisplays prints, at a stop, each display of the current frame whose
// value changed, as pdb does before its prompt; not where the locals are
// unknown.
func (d *debugger) showDisplays(ctx context.Context) {
	f, ok := d.selected()
	if !ok || !f.LocalsKnown && !d.live() { // a predicted return or exception: nothing to compare
		return
	}
	for _, e := range d.displays[f.ID] {
		if v := d.displayValue(ctx, f, e.expr); v != e.value {
			fmt.Fprintf(d.out, "display %s: %s  [old: %s]\n", e.expr, v, e.value)
			e.value = v
		}
	}
}

// entry is one frame as pdb's where prints it: "FILE(LINE)FUNC()", the
// return value at a return, then "-> " and the line's source.
func (d *debugger) entry(f ndbg.Frame, innermost bool) string {
	name := f.Func
	if name == "" {
		name, _ = dsl.DefName(d.s.UserLine(f.Def))
	}
	if f.Line == 0 {
		return fmt.Sprintf("%s(?)%s()\n-> (its line is unknown: a prediction knows only the current frame's)", d.file, name)
	}
	s := fmt.Sprintf("%s(%d)%s()", d.file, f.Line, name)
	if st, ok := d.s.State(); ok && innermost && st.Event == dsl.Return {
		s += "->" + st.Value
	}
	return s + "\n-> " + strings.TrimSpace(d.s.UserLine(f.Line))
}

// where is pdb's w: every frame, the selected one marked "> ".
func (d *debugger) where() {
	fs := d.frames()
	if fs == nil {
		fmt.Fprintln(d.out, "*** the program finished")
		return
	}
	if d.s.Frames() == nil && !d.postMortem() {
		fmt.Fprintln(d.out, "(the callers are unknown after a jump: the model's text does not say how deep it is)")
	}
	for i, f := range fs {
		mark := "  "
		if i == len(fs)-1-d.up {
			mark = "> "
		}
		fmt.Fprintln(d.out, mark+d.entry(f, i == len(fs)-1))
	}
}

// move is pdb's u (by > 0) and d (by < 0), count frames at a time.
func (d *debugger) move(arg string, by int) {
	if arg != "" {
		n, err := strconv.Atoi(arg)
		if err != nil {
			fmt.Fprintf(d.out, "*** Invalid frame count (%s)\n", arg)
			return
		}
		by *= n
	}
	fs := d.frames()
	switch up := d.up + by; {
	case fs == nil:
		fmt.Fprintln(d.out, "*** the program finished")
	case by > 0 && d.up == len(fs)-1:
		fmt.Fprintln(d.out, "*** Oldest frame")
	case by < 0 && d.up == 0:
		fmt.Fprintln(d.out, "*** Newest frame")
	default:
		d.up, d.listed = min(max(up, 0), len(fs)-1), 0
		fmt.Fprintln(d.out, "> "+d.entry(fs[len(fs)-1-d.up], d.up == 0))
	}
}

// until is pdb's until: on in the selected frame to a line (or an
// exception) at target or past it (without a line: after the selected
// frame's current one, so not back in a loop), stopping at its return, in
// a caller, or at a breakpoint that fires on the way. On the real backend
// it is bdb's own rule (Session.UntilLikePdb: a line that raises before
// target is not a stop, where a next would stop at its exception); on a
// prediction, nexts until the frame reaches such a line or leaves.
func (d *debugger) until(ctx context.Context, arg string) {
	st, ok := d.s.State()
	if !ok {
		d.act(ctx, ndbg.Action{Kind: dsl.StepOver})
		return
	}
	cur := st.Line
	if f, ok := d.selected(); ok && f.Line > 0 {
		cur = f.Line
	}
	target := cur + 1
	if arg != "" {
		n, err := strconv.Atoi(arg)
		switch {
		case err != nil:
			fmt.Fprintf(d.out, "*** Error in argument: '%s'\n", arg)
			return
		case n <= cur:
			fmt.Fprintln(d.out, `*** "until" line number is smaller than current line number`)
			return
		}
		target = n
	}
	d.hit = nil
	stop := d.interruptible()
	_, err := d.s.UntilLikePdb(ctx, target, d.up, func(s ndbg.State) bool { return d.fires(ctx, s) })
	stop()
	if !errors.Is(err, ndbg.ErrUnsupported) {
		d.report(ctx, err)
		d.runCommands()
		return
	}
	depth, id := d.depthAndID()
	level := d.up // pdb's current frame, then the frame stopped in
	for {
		n := len(d.s.Trajectory().Steps)
		next, err := d.s.DoLikePdb(ctx, ndbg.Action{Kind: dsl.StepOver}, level, func(s ndbg.State) bool { return d.fires(ctx, s) })
		level = 0
		if d.real != nil && len(d.s.Trajectory().Steps) > n {
			d.follow(ctx, ndbg.Action{Kind: dsl.StepOver})
		}
		if err != nil {
			d.report(ctx, err)
			return
		}
		nd, nid := d.depthAndID()
		same := nd > 0 && (id >= 0 && nid == id || id < 0 && nd == depth) // the frame object: a generator may resume deeper
		if !same || next.Event != dsl.Line || next.Line >= target || d.fires(ctx, next) {
			d.report(ctx, nil)
			return
		}
	}
}

// depthAndID is the current frame's depth (0 when unknown) and id.
func (d *debugger) depthAndID() (int, int) {
	fs := d.s.Frames()
	if len(fs) == 0 {
		return 0, -1
	}
	return len(fs), fs[len(fs)-1].ID
}
