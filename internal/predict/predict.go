// Package predict is the single-shot prediction, the job of `ndbg predict`
// and of `ndbg-infer` with --program: one session, some actions, the state
// after one more as JSON (with --compare, beside the real one). Both
// commands call Run; neither has a copy.
package predict

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/cli"
	"github.com/ndbg/ndbg/sample"
)

// Run is the single-shot prediction (args are its flags):
//
//	ndbg predict --program FILE --call EXPR --action ACTION
//	           [--actions A1,A2,...] [--state JSON] [--compare]
//	           [--model DIR | --backend real] [sampling flags]
//
// It starts a session at the call (or at --state), applies --actions, then
// predicts the state after ACTION and prints it as JSON. --compare runs the
// real debugger along and adds its state and what matches.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("predict", flag.ContinueOnError)
	fs.SetOutput(stderr)
	program := fs.String("program", "", "the Python file (required; - reads stdin)")
	call := fs.String("call", "", "the entry call, e.g. 'f(3, [1, 2])' (required)")
	action := fs.String("action", "step_into", "the action to predict: step_into, step_over, step_return, continue[:L,...], breakpoint:L, inv_step_into, inv_step_over, inv_step_return, inv_breakpoint:L, inv_continue[:L,...]")
	before := fs.String("actions", "", "actions to apply first, separated by spaces or semicolons (they may run to the end, and --action step back from it)")
	state := fs.String("state", "", "start from this state (JSON: event, line, locals, value) instead of the call")
	compare := fs.Bool("compare", false, "also run the real debugger and show its state and the match")
	var bf cli.BackendFlags
	bf.Register(fs, cli.Neural, cli.CWM, cli.Real)
	bf.RegisterVerify(fs)
	sp := sample.Params{TopP: 1, Seed: 1}
	cli.RegisterSampling(fs, &sp)
	cli.SetUsage(fs, "ndbg predict --program FILE --call EXPR [--action ACTION] [--actions 'A B ...'] [--compare | --no-exec | --verify-below P] [--model DIR | --backend real] [flags]",
		"(ndbg-infer --program ... is the same command.) Prints the state after ACTION as JSON.")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if *program == "" || *call == "" || fs.NArg() > 0 {
		fs.Usage()
		return cli.Usagef("need --program and --call")
	}
	if err := bf.Check(); err != nil {
		return err
	}
	if err := cli.CheckCall(*call); err != nil {
		return err
	}
	if err := cli.CheckSampling(sp); err != nil {
		return err
	}
	act, err := cli.ParseAction("action", *action)
	if err != nil {
		return err
	}
	var pre []ndbg.Action
	for _, f := range strings.FieldsFunc(*before, func(r rune) bool { return r == ' ' || r == ';' }) {
		a, err := cli.ParseAction("actions", f)
		if err != nil {
			return err
		}
		pre = append(pre, a)
	}
	src, err := cli.ReadFile(ctx, "the program", *program)
	if err != nil {
		return err
	}
	if *compare && bf.NoExec {
		return cli.Usagef("--compare runs the program; --no-exec runs nothing of it")
	}
	if *compare && *state != "" {
		return cli.Usagef("--compare needs a real run: use --call (and --actions) without --state")
	}
	var from ndbg.State
	if *state != "" {
		if from, err = ndbg.UnmarshalState([]byte(*state)); err != nil {
			return cli.Usagef("--state: %v", err)
		}
	}
	b, m, err := bf.Open(ctx, sp)
	if err != nil {
		return err
	}
	if m != nil {
		defer m.Close()
	}
	start := func(b ndbg.Backend) (*ndbg.Session, error) {
		if *state == "" {
			return ndbg.Start(ctx, b, src, *call)
		}
		entry, err := ndbg.EntryOf(*call)
		if err != nil {
			return nil, err
		}
		return ndbg.StartAt(ctx, b, src, entry, from)
	}
	predicted, err := Apply(ctx, start, b, pre, act)
	if err != nil {
		return err
	}
	if !*compare {
		_, err = fmt.Fprintf(stdout, "%s\n", stateJSON(predicted))
		return err
	}
	real, err := Apply(ctx, start, ndbg.Recorded(bf.Limits), pre, act)
	if err != nil {
		// The prediction stands; say why there is nothing to compare it with.
		if errors.Is(err, ndbg.ErrLimit) {
			err = fmt.Errorf("%w (%s)", err, cli.LimitHint)
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false) // reprs such as <object at 0x...> as they are
		if werr := enc.Encode(struct {
			Predicted json.RawMessage `json:"predicted"`
			RealError string          `json:"real_error"`
		}{json.RawMessage(stateJSON(predicted)), err.Error()}); werr != nil {
			return fmt.Errorf("writing the prediction: %w", werr)
		}
		return fmt.Errorf("the real run for --compare failed: %w", err)
	}
	match, err := json.Marshal(ndbg.Compare(predicted.State, real.State))
	if err != nil {
		return fmt.Errorf("writing the comparison: %w", err)
	}
	_, err = fmt.Fprintf(stdout, `{"predicted":%s,"real":%s,"match":%s}`+"\n", stateJSON(predicted), stateJSON(real), match)
	return err
}

// Outcome is the state an action reached (nil: the program ran past its
// end) and, when a model predicted it, how (ndbg.Session.Prediction).
type Outcome struct {
	State *ndbg.State
	Pred  *ndbg.Prediction
	// Raising is the repr of the exception that a return state's frame is
	// left by: the state before it, in the same frame, raised it and no
	// line ran in between (Python reports the frame's return with the value
	// None); "" for a plain return.
	Raising string
	// Escaped is the exception that ended the program, once it has
	// (ndbg.Session.Escaped: a real run); nil while it runs, or when it
	// returned.
	Escaped *ndbg.Exception
}

// Apply is the single-shot prediction itself, which `ndbg predict` and
// `ndbg mcp`'s predict tool share: it starts a session on b (start), applies
// pre, and returns the state after a, its source the user's line. An error
// in pre names the action by its place ("actions 2 (step_over)").
func Apply(ctx context.Context, start func(ndbg.Backend) (*ndbg.Session, error), b ndbg.Backend, pre []ndbg.Action, a ndbg.Action) (Outcome, error) {
	s, err := start(b)
	if err != nil {
		return Outcome{}, err
	}
	defer s.Close()
	for i, p := range pre {
		// An action may run to the end: the session stays there, and the
		// next may step back from it.
		st, err := s.Do(ctx, p)
		if err != nil && !errors.Is(err, ndbg.ErrFinished) {
			return Outcome{}, fmt.Errorf("actions %d (%v): %w", i+1, p, err)
		}
		if err := stoppedShort(s, st); err != nil {
			return Outcome{}, fmt.Errorf("actions %d (%v): %w", i+1, p, err)
		}
	}
	st, err := s.Do(ctx, a)
	if err != nil && !errors.Is(err, ndbg.ErrFinished) {
		return Outcome{}, err
	}
	if err == nil {
		if err := stoppedShort(s, st); err != nil {
			return Outcome{}, fmt.Errorf("%v: %w", a, err)
		}
	}
	var o Outcome
	o.Escaped = s.Escaped()
	if t := s.Trajectory(); err == nil && st.Event == dsl.Return && len(t.Steps) >= 2 {
		if prev := t.Steps[len(t.Steps)-2].State; prev != nil && prev.Event == dsl.Exception && prev.Depth == st.Depth {
			o.Raising = prev.Value
		}
	}
	if p, ok := s.Prediction(); ok {
		if p.Model != nil {
			p.Model.Source = s.UserLine(p.Model.Line)
		}
		o.Pred = &p
	}
	if err == nil {
		st.Source = s.UserLine(st.Line) // the user's line, not the prepared one
		o.State = &st
	}
	return o, nil
}

// stateJSON prints a state, or {"event":"end"} for the end of the program,
// with how it was predicted where it was (ndbg.MarshalOutcome), and
// "raising" (Outcome.Raising) and "escaped" (Outcome.Escaped: type,
// message, line) where they are known.
func stateJSON(o Outcome) string {
	js := ndbg.MarshalOutcome(o.State, o.Pred)
	var extra []string
	if o.Raising != "" {
		v, _ := json.Marshal(o.Raising)
		extra = append(extra, `"raising":`+string(v))
	}
	if x := o.Escaped; x != nil {
		v, _ := json.Marshal(struct {
			Type    string `json:"type"`
			Message string `json:"message"`
			Line    int    `json:"line"`
		}{x.Type, x.Message, x.Line})
		extra = append(extra, `"escaped":`+string(v))
	}
	if len(extra) == 0 {
		return string(js)
	}
	return string(js[:len(js)-1]) + "," + strings.Join(extra, ",") + "}"
}

// stoppedShort is an error where a real run's action did not reach its
// own stop: the program ran past the action's CPU time (--timeout) or was
// interrupted, and stopped where it was; that state is not the answer.
func stoppedShort(s *ndbg.Session, st ndbg.State) error {
	switch s.Interrupted() {
	case "":
		return nil
	case "cpu":
		return fmt.Errorf("the program ran past the CPU time of an action (--timeout) and stopped at line %d, before the action's stop: %w", st.Line, ndbg.ErrLimit)
	default:
		return fmt.Errorf("interrupted at line %d, before the action's stop", st.Line)
	}
}
