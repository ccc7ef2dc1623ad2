package dsl

import (
	"errors"
	"fmt"
)

// Encoder follows a trajectory's text step by step, for a session that
// grows one step at a time: it keeps what the text's next part depends on
// (the reference frames of the ".." rule, whether the text has ended), so
// that appending a step, checking and writing the next action, and reading
// the frame a model writes after it cost the same at any length of
// history. Trajectory.Encode, EncodePrompt, References and ParseFrame give
// the same answers for the whole trajectory (tested); an Encoder needs only
// the new step. It holds pointers to the states it has read: a caller that
// changes one in place starts a new Encoder.
type Encoder struct {
	e     encoder
	steps int  // steps read
	ended bool // the last step ran past the end
}

// NewEncoder reads trajectory t whole, checking it as Encode does.
func (t *Trajectory) NewEncoder() (*Encoder, error) {
	c := &Encoder{}
	if err := c.e.body(t); err != nil {
		return nil, err
	}
	c.e.buf = nil // the whole text: the steps' own are short
	c.steps = len(t.Steps)
	c.ended = c.steps > 0 && t.Steps[c.steps-1].State == nil
	return c, nil
}

// Append reads one more step and returns its text (its action, then its
// frame or <|end_of_text|>), checked as Encode checks a step. On error the
// Encoder is as it was.
func (c *Encoder) Append(st Step) (string, error) {
	if c.ended {
		return "", fmt.Errorf("dsl: step %d follows a step that ran past the end", c.steps)
	}
	c.e.buf = c.e.buf[:0]
	if _, err := c.e.step(&st); err != nil {
		return "", fmt.Errorf("dsl: step %d: %w", c.steps, err)
	}
	c.steps++
	c.ended = st.State == nil
	return string(c.e.buf), nil
}

// Action checks next as the action after the text so far and returns its
// text: what EncodePrompt(next) appends to the trajectory's text.
func (c *Encoder) Action(next Action) (string, error) {
	if c.ended {
		return "", errors.New("dsl: prompt after a step that ran past the end")
	}
	c.e.buf = c.e.buf[:0]
	if err := c.e.action(next); err != nil {
		return "", fmt.Errorf("dsl: next action: %w", err)
	}
	return string(c.e.buf), nil
}

// References is Trajectory.References of the text so far.
func (c *Encoder) References() map[int]*State { return c.e.refs.byFunc() }

// ParseFrame is Trajectory.ParseFrame of the text so far.
func (c *Encoder) ParseFrame(text string) (*State, error) {
	return parseFrameAfter(text, c.e.ix, c.e.refs.clone(), c.ended, false)
}

// ParseFrameLenient is Trajectory.ParseFrameLenient of the text so far.
func (c *Encoder) ParseFrameLenient(text string) (*State, error) {
	return parseFrameAfter(text, c.e.ix, c.e.refs.clone(), c.ended, true)
}

// Fork returns an Encoder that goes on independently of c.
func (c *Encoder) Fork() *Encoder {
	f := *c
	f.e.refs = c.e.refs.clone()
	f.e.buf = nil
	return &f
}

// ActionText returns action a as the DSL writes it after a frame of a
// trajectory of program p: its token, then each breakpoint line's text and
// a newline. It fails for an action Encode rejects.
func ActionText(p *Program, a Action) (string, error) {
	ix, err := programIndex(p)
	if err != nil {
		return "", err
	}
	e := encoder{p: p, ix: ix}
	if err := e.action(a); err != nil {
		return "", fmt.Errorf("dsl: %w", err)
	}
	return string(e.buf), nil
}
