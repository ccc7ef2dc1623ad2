package ndbg

import (
	"fmt"

	"github.com/ndbg/ndbg/internal/engine"
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

// Prediction says how a neural session's state was predicted. Its
// Confidence's fields are probabilities in [0, 1], each the model's
// probability of what it wrote (see Confidence):
//
//   - p.State: of the whole state, every token of its frame;
//   - p.Event: of its event (call, line, return, exception, or the end);
//   - p.Line: of its line;
//   - p.Locals[i]: of local i (its name and value), in the state's
//     Locals order; nil where the state shows none;
//   - p.Value: of the return or exception value (1 at call and line
//     states);
//   - p.Cut, p.Uncertain(): the values the model kept extending past any
//     real one, their probability 0.
type Prediction struct {
	// Confidence is how sure the model was, per field (above).
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
// it was not predicted by a model (the session's first state, also when a
// step back returns to it; a state the neural session's history implies
// without a prediction, such as the end after the entry's return; the real
// backend, the CWM backend). A state the history answers with again (a
// step back to it) has the prediction it had when it was first shown. After an action that reached the end of the
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

// predictor is an engine that says how it predicted its last state
// (Verify's).
type predictor interface {
	// prediction describes the state the last apply returned; nil when it
	// was not predicted.
	prediction() *Prediction
}

// predictionOf says how e predicted the state its last Apply returned; nil
// when no model predicted it.
func predictionOf(e engine.Engine) *Prediction {
	switch e := e.(type) {
	case predictor:
		return e.prediction()
	case engine.Confident:
		if c := e.Confidence(); c != nil {
			return &Prediction{Confidence: Confidence(*c)}
		}
	}
	return nil
}
