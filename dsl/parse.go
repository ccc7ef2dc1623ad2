package dsl

import (
	"fmt"
	"strings"
)

// parser reads DSL text. Its errors carry offsets into s.
type parser struct {
	s    string
	ix   *lineIndex
	refs refs
	// pool backs the Locals of all states, so a frame costs no allocation
	// of its own; each state gets a full slice expression of it.
	pool []Local
	offs []int // offsets of the current frame's values, for errors
	// lenient accepts a full value where the canonical text has "..".
	lenient bool
}

// Parse reads a trajectory text (docs/dsl.md). It is strict: it accepts
// only what Encode writes, so Encode(Parse(x)) == x whenever Parse succeeds.
// Errors are *ParseError. The states have Depth 0, Source set from Line,
// and nil Locals where there are none.
func Parse(text string) (*Trajectory, error) {
	p := parser{s: text, pool: make([]Local, 0, len(text)/32)}
	t, err := p.trajectory()
	if err != nil {
		return nil, err
	}
	return t, nil
}

// trajectory reads a whole trajectory text.
func (p *parser) trajectory() (*Trajectory, *ParseError) {
	text := p.s
	i, err := p.expect(0, tokBegin)
	if err != nil {
		return nil, err
	}
	if i, err = p.expect(i, tokContext); err != nil {
		return nil, err
	}
	j := specialIndex(text[i:])
	if j < 0 {
		return nil, errAt(text, len(text), FrameSep)
	}
	j += i
	prog, perr := ParseProgram(text[i:j])
	if perr != nil {
		return nil, &ParseError{Offset: i, Expected: "a prepared program", Found: perr.Error()}
	}
	if i, err = p.expect(j, tokFrame); err != nil {
		return nil, err
	}
	p.ix = prog.ix
	p.refs = newRefs(p.ix)
	t := &Trajectory{Program: prog}
	if i, err = p.frame(i, &t.Start, true); err != nil {
		return nil, err
	}
	var slab []State // the states of all steps, allocated at once
	for {
		k := tokenAt(text, i)
		if k == tokEnd {
			return t, p.end(i + len(EndOfText))
		}
		if k < tokFirstAction {
			return nil, errAt(text, i, "an action token or "+EndOfText)
		}
		if t.Steps == nil {
			n := strings.Count(text[i:], FrameSep) + 1 // at most one step per frame, and an end
			t.Steps = make([]Step, 0, n)
			slab = make([]State, n)
		}
		var st Step
		if i, err = p.action(i, &st.Action); err != nil {
			return nil, err
		}
		if tokenAt(text, i) == tokEnd {
			t.Steps = append(t.Steps, st)
			return t, p.end(i + len(EndOfText))
		}
		st.State = &slab[len(t.Steps)]
		if i, err = p.frame(i, st.State, false); err != nil {
			return nil, err
		}
		t.Steps = append(t.Steps, st)
	}
}

// ParseFrame reads one frame that follows the trajectory's text, as a model
// writes it after EncodePrompt: a whole frame ending with <|frame_sep|>, or
// <|end_of_text|> alone when the action ran past the end (then the State is
// nil). ".." values are expanded against the trajectory's frames. Errors
// are *ParseError with offsets into text.
func (t *Trajectory) ParseFrame(text string) (*State, error) {
	return t.parseFrame(text, false)
}

// ParseFrameLenient is ParseFrame that also accepts a full value where the
// canonical text has "..": a model's output that is not canonical but
// means one state without doubt. (Encoding that state writes ".." again.)
func (t *Trajectory) ParseFrameLenient(text string) (*State, error) {
	return t.parseFrame(text, true)
}

func (t *Trajectory) parseFrame(text string, lenient bool) (*State, error) {
	ix, err := programIndex(t.Program)
	if err != nil {
		return nil, err
	}
	ended := len(t.Steps) > 0 && t.Steps[len(t.Steps)-1].State == nil
	return parseFrameAfter(text, ix, t.refsAtEnd(ix), ended, lenient)
}

// parseFrameAfter reads one frame that follows a text whose reference
// frames are refs (noted into, so the caller's own copy) and which ended
// with <|end_of_text|> if ended.
func parseFrameAfter(text string, ix *lineIndex, refs refs, ended, lenient bool) (*State, error) {
	if ended {
		return nil, &ParseError{Offset: 0, Expected: "no frame (the trajectory has ended)", Found: describeAt(text, 0)}
	}
	p := parser{s: text, ix: ix, refs: refs, lenient: lenient}
	if text == EndOfText {
		return nil, nil
	}
	s := new(State)
	i, perr := p.frame(0, s, false)
	if perr != nil {
		return nil, perr
	}
	if perr := p.end(i); perr != nil {
		return nil, perr
	}
	return s, nil
}

// end checks that i is the end of the text.
func (p *parser) end(i int) *ParseError {
	if i != len(p.s) {
		return errAt(p.s, i, "end of input")
	}
	return nil
}

// expect reads special token k at i.
func (p *parser) expect(i int, k tok) (int, *ParseError) {
	t := specialTokens[k].Text
	if !strings.HasPrefix(p.s[i:], t) {
		return i, errAt(p.s, i, t)
	}
	return i + len(t), nil
}

// line reads a program line's text and its newline at i.
func (p *parser) line(i int) (int, int, *ParseError) {
	j := strings.IndexByte(p.s[i:], '\n')
	if j < 0 {
		return 0, i, errAt(p.s, i, "a program line ending with a newline")
	}
	n, ok := p.ix.byText[p.s[i:i+j]]
	if !ok {
		return 0, i, errAt(p.s, i, "the text of a nameable program line")
	}
	return n, i + j + 1, nil
}

// action reads an action token and its breakpoint lines.
func (p *parser) action(i int, a *Action) (int, *ParseError) {
	a.Kind = StepInto + ActionKind(tokenAt(p.s, i)-tokFirstAction)
	i += len(a.Kind.Token())
	switch a.Kind {
	case Breakpoint, InvBreakpoint:
		n, j, err := p.line(i)
		if err != nil {
			return j, err
		}
		a.Lines = []int{n}
		return j, nil
	case Continue, InvContinue:
		for i < len(p.s) && tokenAt(p.s, i) == tokNone {
			n, j, err := p.line(i)
			if err != nil {
				return j, err
			}
			for _, m := range a.Lines {
				if m == n {
					return i, errAt(p.s, i, "a breakpoint line not given before")
				}
			}
			a.Lines = append(a.Lines, n)
			i = j
		}
	}
	return i, nil
}

// frame reads one frame at i into s. full: the first frame, which has no
// "..".
func (p *parser) frame(i int, s *State, full bool) (int, *ParseError) {
	switch tokenAt(p.s, i) {
	case tokCall:
		s.Event = Call
	case tokLine:
		s.Event = Line
	case tokReturn:
		s.Event = Return
	case tokException:
		s.Event = Exception
	default:
		if full {
			return i, errAt(p.s, i, "a frame token")
		}
		return i, errAt(p.s, i, "a frame token or "+EndOfText)
	}
	i += len(s.Event.Token())
	if s.Event == Return || s.Event == Exception {
		var err *ParseError
		if i, err = p.expect(i, tokAction); err != nil {
			return i, err
		}
		if s.Line, i, err = p.line(i); err != nil {
			return i, err
		}
		s.Source = p.ix.texts[s.Line-1]
		if i, err = p.expect(i, tokArg); err != nil {
			return i, err
		}
		at := i
		if s.Value, i, err = readJSONString(p.s, i); err != nil {
			return i, err
		}
		if len(s.Value) > MaxRepr {
			return at, errAt(p.s, at, fmt.Sprintf("a value of at most MaxRepr (%d) bytes", MaxRepr))
		}
		return p.expect(i, tokFrame)
	}
	var err *ParseError
	dots := s.Event == Line && !full
	if i, err = p.locals(i, s, dots); err != nil {
		return i, err
	}
	if i, err = p.expect(i, tokAction); err != nil {
		return i, err
	}
	if s.Line, i, err = p.line(i); err != nil {
		return i, err
	}
	s.Source = p.ix.texts[s.Line-1]
	if dots {
		if err := p.expand(s, p.offs); err != nil {
			return i, err
		}
	}
	p.refs.note(s)
	return p.expect(i, tokFrame)
}

// expand replaces ".." values by the reference frame's, and rejects full
// values that the encoder would have written as "..". (A repr that is
// literally "..", written EscapedDots, is a full value.)
func (p *parser) expand(s *State, offs []int) *ParseError {
	ref := p.refs.of(s.Line)
	for k := range s.Locals {
		l := &s.Locals[k]
		marker := strings.HasPrefix(p.s[offs[k]:], `".."`)
		if ref == nil {
			if marker {
				return errAt(p.s, offs[k], "a value (no reference frame for \"..\")")
			}
			continue
		}
		r, ok := refRepr(ref, l.Name, k)
		switch {
		case marker && !ok:
			return errAt(p.s, offs[k], fmt.Sprintf("a value (%q is not in the reference frame)", l.Name))
		case marker:
			l.Repr = r
		case ok && r == l.Repr && !p.lenient:
			return errAt(p.s, offs[k], `".." (the value equals the reference frame's)`)
		}
	}
	return nil
}

// locals reads a canonical json.dumps dict of strings at i into s.Locals,
// and the offset of each value into p.offs for later errors. dots: a frame
// with the ".." rule, where a repr ".." is written EscapedDots.
func (p *parser) locals(i int, s *State, dots bool) (int, *ParseError) {
	if i >= len(p.s) || p.s[i] != '{' {
		return i, errAt(p.s, i, "'{'")
	}
	i++
	p.offs = p.offs[:0]
	if i < len(p.s) && p.s[i] == '}' {
		return i + 1, nil
	}
	start := len(p.pool)
	for {
		at := i
		name, j, err := readJSONString(p.s, i)
		if err != nil {
			return j, err
		}
		for _, l := range p.pool[start:] {
			if l.Name == name {
				return at, errAt(p.s, at, "a local name not given before")
			}
		}
		if !strings.HasPrefix(p.s[j:], ": ") {
			return j, errAt(p.s, j, `": "`)
		}
		i = j + 2
		at = i
		var repr string
		if dots && strings.HasPrefix(p.s[i:], EscapedDots) {
			repr, j = Dots, i+len(EscapedDots)
		} else if repr, j, err = readJSONString(p.s, i); err != nil {
			return j, err
		}
		if len(repr) > MaxRepr {
			return at, errAt(p.s, at, fmt.Sprintf("a repr of at most MaxRepr (%d) bytes", MaxRepr))
		}
		p.pool = append(p.pool, Local{Name: name, Repr: repr})
		p.offs = append(p.offs, at)
		i = j
		switch {
		case strings.HasPrefix(p.s[i:], ", "):
			i += 2
		case i < len(p.s) && p.s[i] == '}':
			end := len(p.pool)
			s.Locals = p.pool[start:end:end]
			return i + 1, nil
		default:
			return i, errAt(p.s, i, `", " or '}'`)
		}
	}
}
