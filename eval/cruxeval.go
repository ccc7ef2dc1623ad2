package eval

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/ndbg/ndbg/dsl"
)

// The CRUXEval strategies. The -O strategies predict f's return value from
// its call state; Inverse predicts the call from the return value (-I).
const (
	// StepReturn: one step_return from the call state.
	StepReturn = "step_return"
	// BreakpointReturn: run to a return line of f (breakpoint, or continue
	// with a breakpoint on each return line when f has several), then
	// step_over to f's return event (step_over rather than step_into, so a
	// return expression that calls a helper is not entered). Where the
	// backend knows the stop is in a nested call of f (State.Depth > 0),
	// it runs on to the next stop.
	BreakpointReturn = "breakpoint"
	// Steps: step_over from the call until f returns (at most MaxSteps).
	Steps = "steps"
	// Inverse: start at f's return state (the last return line, the
	// reference output as value), inv_step_return to the call, and call f
	// with the call state's locals.
	Inverse = "inverse"
)

// Strategies lists every strategy, -O first.
func Strategies() []string { return []string{StepReturn, BreakpointReturn, Steps, Inverse} }

// CruxConfig configures the CRUXEval evaluation.
type CruxConfig struct {
	Items   []Item // with Output
	Backend Backend
	Scorer  *Scorer
	// Strategies to run (default all).
	Strategies []string
	// Samples per item and strategy (default 1: greedy pass@1); with more,
	// the backend should sample (a temperature) and pass@1 is the unbiased
	// estimate, the mean over items of correct/samples.
	Samples int
	// MaxSteps caps the Steps strategy (default 200).
	MaxSteps int
	Workers  int // items in parallel (default GOMAXPROCS)
	// Progress, when set, is called after each item (from one goroutine).
	Progress func(done, total int)
}

// Pass is one strategy's score.
type Pass struct {
	Items   int     `json:"items"`
	Samples int     `json:"samples"`   // predictions made (items × samples)
	Correct int     `json:"correct"`   // predictions that passed
	Pass1   float64 `json:"pass_at_1"` // percent
	// NoAnswer counts predictions that gave nothing to score (the program
	// predicted to end first, a backend error); Errors the backend errors
	// among them.
	NoAnswer int `json:"no_answer"`
	Errors   int `json:"errors"`
}

// Prediction is one sample's answer for one item and strategy.
type Prediction struct {
	Answer string `json:"answer"` // the value repr (-O) or the call (-I); empty when none
	Pass   bool   `json:"pass"`
	Error  string `json:"error,omitempty"`
}

// CruxItem is one item's predictions, by strategy.
type CruxItem struct {
	ID          string                  `json:"id"`
	Predictions map[string][]Prediction `json:"predictions"`
}

// CruxResult is the CRUXEval evaluation's outcome.
type CruxResult struct {
	Backend    string           `json:"backend"`
	Items      int              `json:"items"`
	Samples    int              `json:"samples"`
	Scores     map[string]*Pass `json:"scores"` // by strategy
	PerItem    []CruxItem       `json:"per_item"`
	ElapsedSec float64          `json:"elapsed_s"`
}

// CRUXEval runs the strategies on every item and scores them the official
// way (Scorer).
func CRUXEval(ctx context.Context, cfg CruxConfig) (*CruxResult, error) {
	if cfg.Backend == nil || cfg.Scorer == nil {
		return nil, errors.New("eval: CRUXEval needs a backend and a scorer")
	}
	if len(cfg.Strategies) == 0 {
		cfg.Strategies = Strategies()
	}
	for _, s := range cfg.Strategies {
		if !contains(Strategies(), s) {
			return nil, fmt.Errorf("eval: unknown strategy %q (have %v)", s, Strategies())
		}
	}
	for i := range cfg.Items {
		if cfg.Items[i].Output == "" {
			return nil, fmt.Errorf("eval: item %s has no reference output", cfg.Items[i].ID)
		}
	}
	if cfg.Samples <= 0 {
		cfg.Samples = 1
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 200
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	start := time.Now()
	res := &CruxResult{Backend: cfg.Backend.Name(), Items: len(cfg.Items), Samples: cfg.Samples,
		Scores: map[string]*Pass{}, PerItem: make([]CruxItem, len(cfg.Items))}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan int)
	go func() {
		defer close(jobs)
		for i := range cfg.Items {
			select {
			case jobs <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		done     int
		firstErr error
	)
	for range cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				ci, err := cruxItem(ctx, &cfg, &cfg.Items[i])
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				res.PerItem[i] = ci
				done++
				if cfg.Progress != nil {
					cfg.Progress(done, len(cfg.Items))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, s := range cfg.Strategies {
		p := &Pass{}
		sum := 0.0
		for _, ci := range res.PerItem {
			preds := ci.Predictions[s]
			c := 0
			for _, pr := range preds {
				p.Samples++
				if pr.Pass {
					c++
				}
				if pr.Answer == "" {
					p.NoAnswer++
				}
				if pr.Error != "" {
					p.Errors++
				}
			}
			p.Items++
			p.Correct += c
			if len(preds) > 0 {
				sum += float64(c) / float64(len(preds))
			}
		}
		p.Pass1 = 100 * sum / float64(max(p.Items, 1))
		res.Scores[s] = p
	}
	res.ElapsedSec = time.Since(start).Seconds()
	return res, nil
}

// cruxItem runs every strategy and sample on one item. Only cancellation
// and scorer failures are errors; a backend that fails on an item scores
// that prediction as wrong.
func cruxItem(ctx context.Context, cfg *CruxConfig, it *Item) (CruxItem, error) {
	ci := CruxItem{ID: it.ID, Predictions: map[string][]Prediction{}}
	prog, progErr := dsl.NewProgram(it.Source, it.Entry)
	var run Runner
	var openErr error
	if progErr == nil {
		run, openErr = cfg.Backend.Open(ctx, it)
		if openErr == nil {
			defer run.Close()
		}
	}
	for _, strat := range cfg.Strategies {
		for k := range cfg.Samples {
			var pr Prediction
			var err error
			switch {
			case progErr != nil:
				err = progErr
			case openErr != nil:
				err = openErr
			default:
				err = answer(ctx, cfg, it, prog, run, strat, k, &pr)
			}
			if ctx.Err() != nil {
				return ci, ctx.Err()
			}
			var serr *scorerError
			if errors.As(err, &serr) {
				return ci, serr.err
			}
			if err != nil {
				pr.Error = err.Error()
			}
			ci.Predictions[strat] = append(ci.Predictions[strat], pr)
		}
	}
	return ci, nil
}

// scorerError marks a failure of the scorer itself (not of a prediction).
type scorerError struct{ err error }

func (e *scorerError) Error() string { return e.err.Error() }
