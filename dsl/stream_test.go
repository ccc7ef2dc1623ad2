package dsl

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// encodeStepwise encodes tr with an Encoder that reads its first frame and
// then appends one step at a time; it returns the text Encode would.
func encodeStepwise(tr *Trajectory) (string, error) {
	c, err := (&Trajectory{Program: tr.Program, Start: tr.Start}).NewEncoder()
	if err != nil {
		return "", err
	}
	first, err := (&Trajectory{Program: tr.Program, Start: tr.Start}).AppendEncode(nil)
	if err != nil {
		return "", err
	}
	text := strings.TrimSuffix(string(first), EndOfText)
	for _, st := range tr.Steps {
		s, err := c.Append(st)
		if err != nil {
			return "", err
		}
		text += s
	}
	if !c.ended {
		text += EndOfText
	}
	return text, nil
}

// checkEncoder checks that an Encoder following tr step by step agrees at
// every step with the whole-trajectory functions of the prefix so far:
// References, EncodePrompt, ParseFrame(Lenient), Encode; and that a fork
// goes on without changing the original.
func checkEncoder(t *testing.T, tr *Trajectory) {
	t.Helper()
	text, err := tr.Encode()
	require.NoError(t, err)
	stepwise, err := encodeStepwise(tr)
	require.NoError(t, err)
	require.Equal(t, text, stepwise)

	c, err := (&Trajectory{Program: tr.Program, Start: tr.Start}).NewEncoder()
	require.NoError(t, err)
	for k, st := range tr.Steps {
		prefix := &Trajectory{Program: tr.Program, Start: tr.Start, Steps: tr.Steps[:k]}
		require.Equal(t, prefix.References(), c.References(), "step %d", k)
		body, err := prefix.AppendEncode(nil)
		require.NoError(t, err)
		prompt, err := prefix.EncodePrompt(st.Action)
		require.NoError(t, err)
		act, err := c.Action(st.Action)
		require.NoError(t, err)
		require.Equal(t, prompt, strings.TrimSuffix(string(body), EndOfText)+act, "step %d", k)
		actText, err := ActionText(tr.Program, st.Action)
		require.NoError(t, err)
		require.Equal(t, act, actText)

		f := c.Fork()
		s, err := f.Append(st)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(s, act))
		frame := s[len(act):]
		want, err := prefix.ParseFrameLenient(frame)
		require.NoError(t, err)
		got, err := c.ParseFrameLenient(frame)
		require.NoError(t, err)
		require.Equal(t, want, got, "step %d", k)
		got, err = c.ParseFrame(frame)
		require.NoError(t, err)
		require.Equal(t, st.State, got, "step %d", k)
		require.Equal(t, prefix.References(), c.References(), "step %d: the fork changed the original", k)

		s2, err := c.Append(st)
		require.NoError(t, err)
		require.Equal(t, s, s2)
	}
	end := len(tr.Steps) > 0 && tr.Steps[len(tr.Steps)-1].State == nil
	_, err = c.Action(Action{Kind: StepInto})
	_, perr := tr.EncodePrompt(Action{Kind: StepInto})
	require.Equal(t, end, err != nil)
	require.Equal(t, perr != nil, err != nil)
	_, err = c.ParseFrame(EndOfText)
	require.Equal(t, end, err != nil)
}

// TestEncoderRandom: the Encoder agrees with the whole-trajectory functions
// on random trajectories (every action kind, "..", awkward reprs).
func TestEncoderRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	for range 400 {
		checkEncoder(t, newGen(r, randProgram(r)).trajectory())
	}
}

// TestActionText: for every action kind, ActionText is what EncodePrompt
// appends to the trajectory's text; an action Encode rejects is an error.
func TestActionText(t *testing.T) {
	tr := exampleTrajectory(t)
	tr.Steps = tr.Steps[:len(tr.Steps)-1] // not past the end
	body, err := tr.AppendEncode(nil)
	require.NoError(t, err)
	text := strings.TrimSuffix(string(body), EndOfText)
	for k := StepInto; k.Token() != ""; k++ {
		a := Action{Kind: k}
		switch k {
		case Breakpoint, InvBreakpoint:
			a.Lines = []int{9}
		case Continue, InvContinue:
			a.Lines = []int{9, 2}
		}
		prompt, err := tr.EncodePrompt(a)
		require.NoError(t, err, k)
		got, err := ActionText(tr.Program, a)
		require.NoError(t, err, k)
		require.Equal(t, prompt, text+got, k)
		require.True(t, strings.HasPrefix(got, k.Token()))
	}
	for _, a := range []Action{{Kind: 0}, {Kind: Breakpoint}, {Kind: StepInto, Lines: []int{2}}, {Kind: Continue, Lines: []int{3}}} {
		_, err := ActionText(tr.Program, a)
		require.Error(t, err, fmt.Sprint(a))
		_, perr := tr.EncodePrompt(a)
		require.Error(t, perr)
	}
	_, err = ActionText(nil, Action{Kind: StepInto})
	require.Error(t, err)
}

// TestEncoderAppendError: a step Encode rejects is an error from Append,
// and the Encoder is as it was.
func TestEncoderAppendError(t *testing.T) {
	tr := exampleTrajectory(t)
	c, err := (&Trajectory{Program: tr.Program, Start: tr.Start}).NewEncoder()
	require.NoError(t, err)
	refs := c.References()
	bad := *tr.Steps[0].State
	bad.Locals = []Local{{"n", "1"}, {"n", "2"}}
	_, err = c.Append(Step{Action: tr.Steps[0].Action, State: &bad})
	require.ErrorContains(t, err, "step 0")
	require.Equal(t, refs, c.References())
	for _, st := range tr.Steps {
		_, err := c.Append(st)
		require.NoError(t, err)
	}
	_, err = c.Append(tr.Steps[0])
	require.ErrorContains(t, err, "ran past the end")
}
