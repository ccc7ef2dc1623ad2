package ndbg

import (
	"fmt"
	"github.com/ndbg/ndbg/constrain"
	"github.com/ndbg/ndbg/dsl"
)

// Confidence is how sure the model was of a predicted state, per field.
//
// A field's confidence is the product of the probabilities of the tokens
// the model wrote for it, each under the constrained distribution: the
// model's softmax at temperature 1 (whatever the sampling parameters)
// restricted to the tokens the grammar allows there and renormalised
// (sample.Sampler.Prob). By the chain rule the product is the probability the
// model gives that field's text, given what precedes it, so it is a
// probability that can be calibrated against exact match; a minimum would
// rate a value with one doubtful token like one with ten. Tokens the
// grammar forces (a special token, or text with a single allowed
// continuation) have probability 1 and do not lower it. State, the
// product over every token of the frame, is the model's probability of the
// whole predicted state.
type Confidence struct {
	// State is the whole frame's probability (every token, the punctuation
	// between fields included).
	State float64
	// Event is the event token's (or <|end_of_text|>'s) probability.
	Event float64
	// Line is the source line's.
	Line float64
	// Locals holds each local's (its name, its value and whether another
	// follows), in State.Locals' order; nil where the state has none.
	Locals []float64
	// Value is the return or exception value's; 1 at call and line states.
	Value float64
	// Cut names the fields whose value the model kept extending where no
	// real value can go (see Uncertain): "value", or "locals.NAME", their
	// confidence 0; or "locals": the locals were ended where the model
	// meant more and the context had no room (State is 0).
	Cut []string
}

// Uncertain reports whether a value of the state was cut: the model kept
// extending it past the longest repr the tracer ever writes (dsl.MaxRepr
// bytes: longer reprs are cut to dsl.TruncateRepr's form) or past the room
// left in the model's context. The state is still the model's best
// guess, with what it wrote of that value, but that value is certainly not
// the real one as the model meant it.
func (c Confidence) Uncertain() bool { return len(c.Cut) > 0 }

// Percent shows a confidence in [0, 1] to a person as a whole percentage,
// "87%"; a positive confidence that rounds to 0 is "<1%", so that it never
// reads as impossible.
func Percent(c float64) string {
	if c > 0 && c < 0.005 {
		return "<1%"
	}
	return fmt.Sprintf("%.0f%%", 100*c)
}

// Prediction says how a neural session's state was predicted.
type Prediction struct {
	Confidence
	// Verified: the state's confidence was below the threshold of a Verify
	// backend, which ran the same actions for real and shows the real state
	// instead. Model then holds what the model had predicted (nil: the end
	// of the program).
	Verified bool
	Model    *State
	// Unverified says why a state below the threshold could not be checked
	// (the real run could not follow the session); empty otherwise.
	Unverified string
}

// Prediction returns how the current state was predicted; ok is false when
// it was not predicted by a model (the session's first state, the real
// backend, the CWM backend). After an action that reached the end of the
// program it describes that prediction (the end).
func (s *Session) Prediction() (p Prediction, ok bool) {
	n := len(s.traj.Steps)
	if n == 0 || n > len(s.preds) || s.preds[n-1] == nil {
		return Prediction{}, false
	}
	p = *s.preds[n-1]
	p.Locals = append([]float64(nil), p.Locals...)
	p.Cut = append([]string(nil), p.Cut...)
	if p.Model != nil {
		m := *p.Model
		p.Model = &m
	}
	return p, true
}

// predictor is an engine that says how it predicted its last state.
type predictor interface {
	// prediction describes the state the last apply returned; nil when it
	// was not predicted.
	prediction() *Prediction
}

// frameConf accumulates a Confidence while a frame is decoded.
type frameConf struct {
	c      Confidence
	cutAt  []constrain.Position // the values cut, where they were
	locals int                  // locals seen so far (one more than the highest index)
	// moreLocals: the locals were ended where the model meant more.
	moreLocals bool
}

func newFrameConf() *frameConf {
	return &frameConf{c: Confidence{State: 1, Event: 1, Line: 1, Value: 1}}
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
func (f *frameConf) finish(st *dsl.State) *Prediction {
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
	return &Prediction{Confidence: c}
}

// runaway reports whether the model, writing a value at pos, wants to
// extend it where the grammar allows no more: within the last bytes a
// repr may have (dsl.MaxRepr; the tracer never writes a longer one), the
// tokens the grammar still allows hold less than half of the model's
// probability (allowed, from Sampler.Prob). The grammar then ends the
// value; the model meant a longer one.
func runaway(pos constrain.Position, allowed float64) bool {
	return pos.InString && pos.Len > dsl.MaxRepr-4 && allowed < 0.5
}

// contextReserve is the room a return value being written keeps in the
// model's context: enough to end it in any case (an escape under way, 12
// bytes at most, then the closing quote) and the frame's <|frame_sep|>.
// With less room left, the value is cut (closed) rather than the action
// failing with ErrContextFull. A local's value keeps this and the room for
// the line after the locals (neuralEngine.closeMask).
const contextReserve = 16
