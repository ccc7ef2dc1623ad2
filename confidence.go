package ndbg

import (
	"fmt"

	"github.com/ndbg/ndbg/internal/engine"
)

// Confidence is how sure the model was of a predicted state, per field
// (each field's confidence is the model's probability of its text under
// the grammar-constrained distribution; see engine.Confidence for each
// field). Uncertain reports whether a value was cut.
type Confidence = engine.Confidence

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
			return &Prediction{Confidence: *c}
		}
	}
	return nil
}
