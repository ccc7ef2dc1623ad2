package neural

import (
	"github.com/ndbg/ndbg/constrain"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
)

// frameConf accumulates a Confidence while a frame is decoded.
type frameConf struct {
	c      engine.Confidence
	cutAt  []constrain.Position // the values cut, where they were
	locals int                  // locals seen so far (one more than the highest index)
	// moreLocals: the locals were ended where the model meant more.
	moreLocals bool
}

func newFrameConf() *frameConf {
	return &frameConf{c: engine.Confidence{State: 1, Event: 1, Line: 1, Value: 1}}
}

// field returns the product a token at pos counts in (nil: only State).
func (f *frameConf) field(pos constrain.Position) *float64 {
	switch pos.Part {
	case constrain.PartEvent:
		return &f.c.Event
	case constrain.PartLine:
		return &f.c.Line
	case constrain.PartValue:
		return &f.c.Value
	case constrain.PartLocal:
		for len(f.c.Locals) <= pos.Local {
			f.c.Locals = append(f.c.Locals, 1)
		}
		return &f.c.Locals[pos.Local]
	}
	return nil
}

// add counts a token of probability p written at pos.
func (f *frameConf) add(pos constrain.Position, p float64) {
	f.c.State *= p
	if x := f.field(pos); x != nil {
		*x *= p
	}
}

// cut marks the value being written at pos as cut: its field's
// confidence, and so the state's, is 0.
func (f *frameConf) cut(pos constrain.Position) {
	f.c.State = 0
	if x := f.field(pos); x != nil {
		*x = 0
	}
	f.cutAt = append(f.cutAt, pos)
}

// cutLocals marks the locals as cut short: the model meant more where the
// context had no room for them.
func (f *frameConf) cutLocals() {
	f.c.State = 0
	f.moreLocals = true
}

// finish fits the confidence to the parsed state st (nil: the end).
func (f *frameConf) finish(st *dsl.State) *engine.Confidence {
	c := f.c
	if st == nil || !st.HasLocals() {
		c.Locals = nil
	} else {
		// A '}' right after '{' (no locals) counts at PartLocal 0: it is
		// in State only.
		c.Locals = c.Locals[:min(len(c.Locals), len(st.Locals))]
		for len(c.Locals) < len(st.Locals) {
			c.Locals = append(c.Locals, 1)
		}
	}
	for _, pos := range f.cutAt {
		switch {
		case pos.Part == constrain.PartValue:
			c.Cut = append(c.Cut, "value")
		case pos.Part == constrain.PartLocal && st != nil && pos.Local < len(st.Locals):
			c.Cut = append(c.Cut, "locals."+st.Locals[pos.Local].Name)
		}
	}
	if f.moreLocals {
		c.Cut = append(c.Cut, "locals")
	}
	return &c
}

// runaway reports whether the model, writing a value at pos, wants to
// extend it where the grammar allows no more: within the last bytes a
// repr may have (dsl.MaxRepr; the tracer never writes a longer one), the
// tokens the grammar still allows hold less than half of the model's
// probability (allowed, from Sampler.Prob). The grammar then ends the
// value; the model meant a longer one.
func runaway(pos constrain.Position, allowed float64) bool {
	return nearReprEnd(pos) && allowed < 0.5
}

// nearReprEnd reports whether pos is within the last bytes a repr may
// have, where runaway weighs the allowed tokens.
func nearReprEnd(pos constrain.Position) bool {
	return pos.InString && pos.Len > dsl.MaxRepr-4
}

// contextReserve is the room, beyond the text that completes its repr
// (constrain.Matcher.Finish), that a return value being written keeps in
// the model's context: enough to end it in any case (an escape under way,
// 12 bytes at most) and the frame's <|frame_sep|>. With less room left,
// the value is cut (closed) rather than the action failing with
// engine.ErrContextFull. A local's value keeps this and the room for the
// line after the locals (Engine.closeMask).
const contextReserve = 16
