package dsl

import (
	"errors"
	"fmt"
	"slices"
)

// Dots is the value a line frame writes for a local unchanged since its
// reference frame (docs/dsl.md, "The .. rule").
const Dots = ".."

// EscapedDots is how a line frame writes a repr that is literally "..":
// the JSON string with both dots escaped, which decodes to ".." but is not
// the marker `".."` (docs/dsl.md, "The .. rule"). Where no ".." is
// written (call frames, the first frame) such a repr is written plainly.
const EscapedDots = `"\u002e\u002e"`

// refs tracks, per scope (the innermost def of a line), the most recent call
// or line frame in the text: the reference frame of the ".." rule.
type refs struct {
	ix   *lineIndex
	last []*State
}

func newRefs(ix *lineIndex) refs { return refs{ix: ix, last: make([]*State, ix.scopes)} }

// of returns the reference frame for a line frame at line n, nil if none.
func (r *refs) of(n int) *State { return r.last[r.ix.scope[n-1]] }

// note records s, just written or read, as a reference if it can be one.
func (r *refs) note(s *State) {
	if s.Event == Call || s.Event == Line {
		r.last[r.ix.scope[s.Line-1]] = s
	}
}

// refRepr returns the repr of local name in ref, guessing its position i
// first (locals usually keep their order from frame to frame).
func refRepr(ref *State, name string, i int) (string, bool) {
	if i < len(ref.Locals) && ref.Locals[i].Name == name {
		return ref.Locals[i].Repr, true
	}
	for _, l := range ref.Locals {
		if l.Name == name {
			return l.Repr, true
		}
	}
	return "", false
}

// encoder writes a trajectory's text into buf.
type encoder struct {
	p      *Program
	ix     *lineIndex
	buf    []byte
	refs   refs
	spans  []Span // with record: each step's output, offsets from base
	base   int    // len(buf) before the text
	record bool
}

// Span is a byte range [Start, End) of a trajectory's text.
type Span struct{ Start, End int }

// programIndex returns p's line index after checking that p is a prepared
// program: one built by hand is checked by reading its Source again.
func programIndex(p *Program) (*lineIndex, error) {
	if p == nil {
		return nil, errors.New("dsl: trajectory has no program")
	}
	if p.ix != nil {
		return p.ix, nil
	}
	q, err := ParseProgram(p.Source)
	if err != nil {
		return nil, err
	}
	if q.Entry != p.Entry || len(q.Lines) != len(p.Lines) {
		return nil, errors.New("dsl: program's Entry or Lines disagree with its Source")
	}
	for i := range q.Lines {
		if q.Lines[i] != p.Lines[i] {
			return nil, fmt.Errorf("dsl: program line %d disagrees with its Source", i+1)
		}
	}
	return q.ix, nil
}

// Encode writes the trajectory as DSL text (docs/dsl.md). It fails for an
// invalid trajectory: a line that cannot be named, a malformed state or
// action, content with a special token or invalid UTF-8, a repr over
// MaxRepr, or a step after one that ran past the end.
func (t *Trajectory) Encode() (string, error) {
	b, err := t.AppendEncode(nil)
	return string(b), err
}

// AppendEncode appends the text of Encode to dst, for callers that reuse a
// buffer.
func (t *Trajectory) AppendEncode(dst []byte) ([]byte, error) {
	e, err := t.encodeBody(dst)
	if err != nil {
		return dst, err
	}
	if n := len(t.Steps); n == 0 || t.Steps[n-1].State != nil {
		e.buf = append(e.buf, EndOfText...)
	}
	return e.buf, nil
}

// EncodeSpans is Encode that also returns, for each step, the span of what
// a model predicts after the step's action: its frame, or <|end_of_text|>
// for a step that ran past the end. Training can restrict its loss to these
// spans; evaluation can compare them.
func (t *Trajectory) EncodeSpans() (string, []Span, error) {
	e := &encoder{record: true}
	if err := e.body(t); err != nil {
		return "", nil, err
	}
	if n := len(t.Steps); n == 0 || t.Steps[n-1].State != nil {
		e.buf = append(e.buf, EndOfText...)
	}
	return string(e.buf), e.spans, nil
}

// EncodePrompt writes the prompt that asks a model for the state after
// next: the trajectory's text without its end token, then next's token and
// lines. The trajectory must not have run past the end.
func (t *Trajectory) EncodePrompt(next Action) (string, error) {
	e, err := t.encodeBody(nil)
	if err != nil {
		return "", err
	}
	if n := len(t.Steps); n > 0 && t.Steps[n-1].State == nil {
		return "", errors.New("dsl: prompt after a step that ran past the end")
	}
	if err := e.action(next); err != nil {
		return "", fmt.Errorf("dsl: next action: %w", err)
	}
	return string(e.buf), nil
}

// encodeBody writes everything but the final end token after dst.
func (t *Trajectory) encodeBody(dst []byte) (*encoder, error) {
	e := &encoder{buf: dst}
	if err := e.body(t); err != nil {
		return nil, err
	}
	return e, nil
}

// body writes everything but the final end token.
func (e *encoder) body(t *Trajectory) error {
	ix, err := programIndex(t.Program)
	if err != nil {
		return err
	}
	e.p, e.ix, e.refs, e.base = t.Program, ix, newRefs(ix), len(e.buf)
	if e.buf == nil {
		e.buf = make([]byte, 0, len(t.Program.Source)+160*(1+len(t.Steps)))
	}
	e.buf = append(e.buf, BeginOfText+TraceContextStart...)
	e.buf = append(e.buf, t.Program.Source...)
	e.buf = append(e.buf, FrameSep...)
	if err := e.frame(&t.Start, true); err != nil {
		return fmt.Errorf("dsl: start state: %w", err)
	}
	for i := range t.Steps {
		st := &t.Steps[i]
		if i > 0 && t.Steps[i-1].State == nil {
			return fmt.Errorf("dsl: step %d follows a step that ran past the end", i)
		}
		start, err := e.step(st)
		if err != nil {
			return fmt.Errorf("dsl: step %d: %w", i, err)
		}
		if e.record {
			e.spans = append(e.spans, Span{start - e.base, len(e.buf) - e.base})
		}
	}
	return nil
}

// step appends a step's action and then its frame, or <|end_of_text|> for
// a step that ran past the end; start is where the frame begins in buf.
func (e *encoder) step(st *Step) (start int, err error) {
	if err := e.action(st.Action); err != nil {
		return 0, err
	}
	start = len(e.buf)
	if st.State == nil {
		e.buf = append(e.buf, EndOfText...)
	} else if err := e.frame(st.State, false); err != nil {
		return 0, err
	}
	return start, nil
}

// line checks that n can be named and appends its text and newline.
func (e *encoder) line(n int) error {
	if n < 1 || n > len(e.ix.named) || !e.ix.named[n-1] {
		return fmt.Errorf("line %d cannot be named (out of range, not code, or not unique)", n)
	}
	e.buf = append(e.buf, e.ix.texts[n-1]...)
	e.buf = append(e.buf, '\n')
	return nil
}

// action appends an action token and its breakpoint lines.
func (e *encoder) action(a Action) error {
	tk := a.Kind.Token()
	if tk == "" {
		return fmt.Errorf("invalid action kind %d", a.Kind)
	}
	switch a.Kind {
	case Breakpoint, InvBreakpoint:
		if len(a.Lines) != 1 {
			return fmt.Errorf("%s takes exactly one line, got %d", a.Kind, len(a.Lines))
		}
	case Continue, InvContinue:
		for i, n := range a.Lines {
			for _, m := range a.Lines[:i] {
				if m == n {
					return fmt.Errorf("%s repeats line %d", a.Kind, n)
				}
			}
		}
	default:
		if len(a.Lines) != 0 {
			return fmt.Errorf("%s takes no lines", a.Kind)
		}
	}
	e.buf = append(e.buf, tk...)
	for _, n := range a.Lines {
		if err := e.line(n); err != nil {
			return fmt.Errorf("%s: %w", a.Kind, err)
		}
	}
	return nil
}

// checkContent rejects what no JSON string of the DSL may hold.
func checkContent(what, s string) error {
	if len(s) > MaxRepr && what != "name" {
		return fmt.Errorf("%s of %d bytes exceeds MaxRepr (use TruncateRepr)", what, len(s))
	}
	if i := specialIndex(s); i >= 0 {
		return fmt.Errorf("%s %q contains a special token", what, s)
	}
	return nil // UTF-8 is checked while escaping
}

// appendString appends s as a JSON string, failing for invalid UTF-8.
func (e *encoder) appendString(what, s string) error {
	var err error
	if e.buf, err = appendJSONString(e.buf, s); err != nil {
		return fmt.Errorf("%s %q: %w", what, s, err)
	}
	return nil
}

// frame appends one frame. full: the first frame of a trajectory, which
// shows every value.
func (e *encoder) frame(s *State, full bool) error {
	tk := s.Event.Token()
	if tk == "" {
		return fmt.Errorf("invalid event %d", s.Event)
	}
	n := s.Line
	if n < 1 || n > len(e.ix.named) || !e.ix.named[n-1] {
		return fmt.Errorf("%s frame: line %d cannot be named (out of range, not code, or not unique)", s.Event, n)
	}
	if s.Source != "" && s.Source != e.ix.texts[n-1] && !(n == e.ix.entry && s.Source == e.ix.texts[n-1]+StartMarker) {
		return fmt.Errorf("%s frame: Source %q is not the text of line %d", s.Event, s.Source, n)
	}
	e.buf = append(e.buf, tk...)
	if s.Event == Return || s.Event == Exception {
		if len(s.Locals) != 0 && !s.LocalsKnown {
			return fmt.Errorf("%s frame carries locals", s.Event)
		}
		// Known locals of a return or exception state are not written: the
		// DSL leaves them out (docs/dsl.md section 4).
		if err := checkContent("value", s.Value); err != nil {
			return fmt.Errorf("%s frame: %w", s.Event, err)
		}
		e.buf = append(e.buf, ActionSep...)
		_ = e.line(n)
		e.buf = append(e.buf, ArgSep...)
		if err := e.appendString("value", s.Value); err != nil {
			return fmt.Errorf("%s frame: %w", s.Event, err)
		}
		e.buf = append(e.buf, FrameSep...)
		return nil
	}
	if s.Value != "" {
		return fmt.Errorf("%s frame carries a value", s.Event)
	}
	dots := s.Event == Line && !full
	var ref *State
	if dots {
		ref = e.refs.of(n)
	}
	if err := e.locals(s.Locals, ref, dots); err != nil {
		return fmt.Errorf("%s frame: %w", s.Event, err)
	}
	e.buf = append(e.buf, ActionSep...)
	_ = e.line(n)
	e.buf = append(e.buf, FrameSep...)
	e.refs.note(s)
	return nil
}

// locals appends the locals dict. dots: a frame with the ".." rule, which
// writes ".." for those equal in ref, and EscapedDots for a repr "..".
func (e *encoder) locals(ls []Local, ref *State, dots bool) error {
	e.buf = append(e.buf, '{')
	for i, l := range ls {
		if err := checkContent("name", l.Name); err != nil {
			return err
		}
		if err := checkContent("repr", l.Repr); err != nil {
			return err
		}
		for _, m := range ls[:i] {
			if m.Name == l.Name {
				return fmt.Errorf("local %q twice", l.Name)
			}
		}
		if i > 0 {
			e.buf = append(e.buf, ',', ' ')
		}
		if err := e.appendString("name", l.Name); err != nil {
			return err
		}
		e.buf = append(e.buf, ':', ' ')
		if ref != nil {
			if r, ok := refRepr(ref, l.Name, i); ok && r == l.Repr {
				e.buf = append(e.buf, `".."`...)
				continue
			}
		}
		if dots && l.Repr == Dots {
			e.buf = append(e.buf, EscapedDots...)
			continue
		}
		if err := e.appendString("repr", l.Repr); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// Reference returns the frame that a line frame at line n would be
// compared with by the ".." rule if it followed the trajectory's text: the
// most recent call or line frame at a line of the same function. It returns
// nil when there is none or the trajectory cannot be read.
func (t *Trajectory) Reference(n int) *State {
	ix, err := programIndex(t.Program)
	if err != nil || n < 1 || n > len(ix.scope) {
		return nil
	}
	r := t.refsAtEnd(ix)
	return r.of(n)
}

// References returns the reference frame of every function that has one,
// keyed by its def line (0 for module level), as a line frame following the
// trajectory's text would use them. A frame writes its locals before its
// line, so a decoder that has not chosen the line yet can offer ".." for a
// name held by any of these, and check the choice once the line is known.
func (t *Trajectory) References() map[int]*State {
	ix, err := programIndex(t.Program)
	if err != nil {
		return nil
	}
	r := t.refsAtEnd(ix)
	return r.byFunc()
}

// byFunc returns the reference frames keyed by their function's def line
// (References).
func (r *refs) byFunc() map[int]*State {
	out := make(map[int]*State)
	for n, f := range r.ix.funcOf {
		if s := r.last[r.ix.scope[n]]; s != nil {
			out[int(f)] = s
		}
	}
	return out
}

// clone returns a copy that notes frames independently of r.
func (r *refs) clone() refs { return refs{ix: r.ix, last: slices.Clone(r.last)} }

// refsAtEnd replays the trajectory's frames into a reference table.
func (t *Trajectory) refsAtEnd(ix *lineIndex) refs {
	r := newRefs(ix)
	ok := func(s *State) bool { return s.Line >= 1 && s.Line <= len(ix.scope) }
	if ok(&t.Start) {
		r.note(&t.Start)
	}
	for i := range t.Steps {
		if s := t.Steps[i].State; s != nil && ok(s) {
			r.note(s)
		}
	}
	return r
}
