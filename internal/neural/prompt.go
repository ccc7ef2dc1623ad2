package neural

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
)

// programView is the program text a model session reads before its first
// frame: the whole prepared source, or, when that leaves no room in the
// model's context, a part of it (see prompt).
type programView struct {
	text   string // <|begin_of_text|><|trace_context_start|>source<|frame_sep|>
	tokens []int  // text, tokenized (the key of the model's prefix cache)
	// shown says, per line (index line-1), whether the view holds it; nil
	// when it holds the whole program.
	shown []bool
	// omitted: the call lines of the frames on the stack whose code did not
	// fit (the outermost ones).
	omitted []int
}

// holds reports whether line n is in the view.
func (v *programView) holds(n int) bool {
	return v.shown == nil || n >= 1 && n <= len(v.shown) && v.shown[n-1]
}

// endRoom is the least room a prompt leaves after its first frame: for the
// action, the next frame's event and braces, and the room closeMask keeps to
// end the frame in any case.
func (e *Engine) endRoom() int { return contextReserve + e.pc.lineRoom + 4 }

// frameCap is the most tokens a frame may take (closeMask): as the first
// frame of a restart with the current view of the program, it leaves
// endRoom.
func (e *Engine) frameCap() int {
	return e.m.eng.Config().MaxPositionEmbeddings - len(e.src.tokens) - 2*e.endRoom()
}

// prompt builds what a fresh model session reads to start at st, the call
// stack being e.calls (nil: unknown): the program, then st's frame in full,
// as every training trajectory starts. Both a session's start and the
// restart after its history outgrew the context (Apply) read this.
//
// The whole program is shown when it, the frame and room for the next
// action and frame (a frame as long again, plus endRoom) fit the
// model's context, within half of it. Otherwise the model reads only some
// of the program's top-level statements (dsl.Program.TopLevel), in source
// order: the one that holds st's line (required: when it leaves less than
// endRoom after the frame, the view leaves out blank lines and comments
// alone, dsl.Program.Filler, in every statement it shows, since comment
// blocks beside a function belong to its statement; when even that does
// not fit, the error, engine.ErrContextFull, says how large each part is); the callers' on the stack, innermost first, while
// they fit (the outermost frames of a stack too deep lose theirs); then,
// while there is that room, the entry function's, the module's statements
// that define no function or class (imports, constants), and the functions
// and classes the shown ones name. Frames quote lines by their text, which
// the shortened source keeps, so the frames and the constrained decoder's
// grammar (built from the whole program) are those of the whole program.
//
// It returns the view and the trajectory text that follows it (st's frame,
// with no end token).
func (e *Engine) prompt(prog *dsl.Program, st dsl.State) (*programView, string, error) {
	full, err := (&dsl.Trajectory{Program: prog, Start: st}).Encode()
	if err != nil {
		return nil, "", fmt.Errorf("ndbg: %w", err)
	}
	frame := strings.TrimSuffix(full[len(e.pc.text):], dsl.EndOfText)
	frameTokens := len(e.m.encode(frame))
	n := e.m.eng.Config().MaxPositionEmbeddings
	least := n - frameTokens - e.endRoom() // the most the program's text may take
	// What it takes when the next frame may be as long, and at most half
	// the context (a model trained on whole trajectories saw programs
	// followed by several frames; a program that fills the context leaves
	// no room for a value the model is unsure of).
	budget := min(least-frameTokens, n/2)
	if len(e.pc.tokens) <= budget {
		return &programView{text: e.pc.text, tokens: e.pc.tokens}, frame, nil
	}

	stmts := prog.TopLevel()
	of := func(line int) int { // the statement holding line
		for i, r := range stmts {
			if line <= r.Last {
				return i
			}
		}
		return len(stmts) - 1
	}
	chosen := make([]bool, len(stmts))
	compact := false // leave out blank lines and comments alone (dsl.Program.Filler)
	view := func() *programView {
		v := &programView{shown: make([]bool, len(prog.Lines))}
		var b strings.Builder
		b.WriteString(dsl.BeginOfText + dsl.TraceContextStart)
		for i, r := range stmts {
			if !chosen[i] {
				continue
			}
			for l := r.First; l <= r.Last; l++ {
				if compact && prog.Filler(l) {
					continue
				}
				b.WriteString(prog.Lines[l-1])
				b.WriteByte('\n')
				v.shown[l-1] = true
			}
		}
		b.WriteString(dsl.FrameSep)
		v.text = b.String()
		v.tokens = e.m.encode(v.text)
		return v
	}

	here := of(st.Line)
	chosen[here] = true
	v := view()
	if len(v.tokens) > least {
		// Before giving up: the code without its blank lines and comments
		// alone (a long comment block beside a function is part of its
		// statement), in this view and every statement added to it.
		compact = true
		v = view()
	}
	if len(v.tokens) > least {
		return nil, "", fmt.Errorf("%w: the code the session is in (lines %d-%d) needs %d tokens without its blank lines and comments "+
			"(the whole program %d), the current frame %d and the next action and frame at least %d more, over the %d the context holds",
			engine.ErrContextFull, stmts[here].First, stmts[here].Last, len(v.tokens), len(e.pc.tokens),
			frameTokens, e.endRoom(), n)
	}
	// try adds statement i when the view still fits within limit with it.
	// One that does not fit never will: the view only grows.
	tried := slices.Clone(chosen)
	try := func(i, limit int) {
		if tried[i] {
			return
		}
		tried[i], chosen[i] = true, true
		if w := view(); len(w.tokens) <= limit {
			v = w
		} else {
			chosen[i] = false
		}
	}
	// The callers, innermost first, while any room is left: a stack too
	// deep for the context loses its outermost frames' code.
	for k := len(e.calls) - 1; k >= 0; k-- {
		try(of(e.calls[k]), least)
	}
	for _, c := range e.calls {
		if !v.holds(c) {
			v.omitted = append(v.omitted, c)
		}
	}
	if len(v.tokens) > budget {
		if len(v.omitted) == 0 && len(e.pc.tokens) <= least {
			return &programView{text: e.pc.text, tokens: e.pc.tokens}, frame, nil
		}
		return v, frame, nil
	}
	try(of(prog.EntryLine()), budget)
	names := make([]string, len(stmts)) // the function or class each statement defines
	for i, r := range stmts {
		names[i] = definedName(prog, r)
		if names[i] == "" && !strings.HasPrefix(strings.TrimSpace(prog.Lines[r.First-1]), "@") {
			try(i, budget)
		}
	}
	// The functions and classes the shown code names, in rounds: those
	// that it names, then those that these name, and so on.
	for added := true; added; {
		added = false
		for i, name := range names {
			if name != "" && !tried[i] && mentions(v.text, name) {
				try(i, budget)
				added = added || chosen[i]
			}
		}
	}
	return v, frame, nil
}

// definedName returns the name a top-level statement defines with def or
// class (after its decorators), "" for any other statement.
func definedName(prog *dsl.Program, r dsl.LineRange) string {
	for l := r.First; l <= r.Last; l++ {
		s := prog.Lines[l-1]
		if strings.HasPrefix(s, "@") || strings.TrimSpace(s) == "" || strings.HasPrefix(s, "#") || s[0] == ' ' || s[0] == '\t' {
			continue // decorators (and their continuation lines)
		}
		for _, kw := range []string{"def ", "async def ", "class "} {
			if rest, ok := strings.CutPrefix(s, kw); ok {
				end := strings.IndexAny(rest, "(: \t")
				if end < 0 {
					end = len(rest)
				}
				return rest[:end]
			}
		}
		return ""
	}
	return ""
}

// mentions reports whether text holds name as a whole identifier.
func mentions(text, name string) bool {
	ident := func(c byte) bool {
		return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
	}
	for at := 0; ; {
		i := strings.Index(text[at:], name)
		if i < 0 {
			return false
		}
		i += at
		end := i + len(name)
		if (i == 0 || !ident(text[i-1])) && (end == len(text) || !ident(text[end])) {
			return true
		}
		at = i + 1
	}
}
