package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/ndbg/ndbg/internal/cputime"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
)

// BusyResult is the decode speed of one model × dtype × threads on the
// machine as it is ("idle") and beside a child process that keeps one core
// busy ("busy"): the engine should keep at least half its speed there,
// where thread pools that spin-wait for a descheduled partner collapse.
type BusyResult struct {
	Model   string
	DType   string
	Threads int
	Device  string
	// IdleTokS and BusyTokS are the best decode tokens/s of the rounds
	// without and with the burning process.
	IdleTokS, BusyTokS float64
	// IdleShare and BusyShare are the process's CPU time over wall time ×
	// threads while decoding (best round's).
	IdleShare, BusyShare float64
	// BurnerShare is the part of one core the burning process got.
	BurnerShare float64
}

// Ratio is BusyTokS over IdleTokS.
func (r BusyResult) Ratio() float64 { return r.BusyTokS / r.IdleTokS }

// busySettle is how long the burning process runs before a busy
// measurement starts, so that the scheduler has placed it.
const busySettle = 50 * time.Millisecond

// RunBusy measures, for every model, dtype and thread count of o, decode
// tokens/s (o.Decode steps after an o.Prefill prompt) alternately without
// and with a CPU-burning child process (startBurner), o.Reps rounds of
// each, the best kept. The child is killed and reaped after each busy
// measurement, and on every error.
func RunBusy(ctx context.Context, o Options) ([]BusyResult, error) {
	var out []BusyResult
	err := eachModel(ctx, o, func(name, dt string, t int, m *model.Model) error {
		r, err := measureBusy(ctx, m, o)
		if err != nil {
			return fmt.Errorf("busy: %w", err)
		}
		r.Model, r.DType, r.Threads = name, dt, t
		if o.Progress != nil {
			fmt.Fprintln(o.Progress, r.line())
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// measureBusy prefills one prompt, then alternates idle and busy decode
// rounds, each decoding o.Decode tokens in a fresh fork of it.
func measureBusy(ctx context.Context, m *model.Model, o Options) (BusyResult, error) {
	prompt := benchPrompt(m.Config(), max(1, o.Prefill))
	base := m.NewSession()
	defer base.Close()
	logits, err := base.Forward(ctx, prompt, false)
	if err != nil {
		return BusyResult{}, err
	}
	first := sample.Argmax(logits)
	threads, _ := deviceThreads(m)
	decode := func() (tokS, share float64, err error) {
		s := base.Fork()
		defer s.Close()
		tok := first
		cpu0, t0 := cputime.Process(), time.Now()
		for range max(1, o.Decode) {
			l, err := s.Forward(ctx, []int{tok}, false)
			if err != nil {
				return 0, 0, err
			}
			tok = sample.Argmax(l)
		}
		wall := time.Since(t0).Seconds()
		return float64(max(1, o.Decode)) / wall, (cputime.Process() - cpu0).Seconds() / wall / float64(threads), nil
	}
	r := BusyResult{Device: m.Device().Name()}
	for range max(1, o.Reps) {
		tokS, share, err := decode()
		if err != nil {
			return r, err
		}
		if tokS > r.IdleTokS {
			r.IdleTokS, r.IdleShare = tokS, share
		}
		b, err := startBurner(ctx)
		if err != nil {
			return r, err
		}
		time.Sleep(busySettle)
		tokS, share, err = decode()
		burned, serr := b.stop()
		if err = errors.Join(err, serr); err != nil {
			return r, err
		}
		if tokS > r.BusyTokS {
			r.BusyTokS, r.BusyShare, r.BurnerShare = tokS, share, burned
		}
	}
	return r, nil
}

// burner is a child process that keeps one core busy: a shell loop,
// pinned to the machine's last CPU where the platform allows
// (pinBurner), and killed with its parent where it can be.
type burner struct {
	cmd   *exec.Cmd
	start time.Time
}

// startBurner starts the burning child process.
func startBurner(ctx context.Context) (*burner, error) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, fmt.Errorf("bench --busy runs `sh -c 'while :; do :; done'` as the process that keeps a core busy: %w", err)
	}
	cmd := exec.CommandContext(ctx, sh, "-c", "while :; do :; done")
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start the burning process: %w", err)
	}
	b := &burner{cmd: cmd, start: time.Now()}
	if err := pinBurner(cmd.Process.Pid, runtime.NumCPU()-1); err != nil {
		_, _ = b.stop()
		return nil, fmt.Errorf("bench: pin the burning process to CPU %d: %w", runtime.NumCPU()-1, err)
	}
	return b, nil
}

// stop kills and reaps the burning process and returns the part of one
// core it used while it ran.
func (b *burner) stop() (share float64, err error) {
	wall := time.Since(b.start).Seconds()
	if err := b.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, fmt.Errorf("bench: kill the burning process: %w", err)
	}
	_ = b.cmd.Wait() // "signal: killed" is the expected end
	st := b.cmd.ProcessState
	if st == nil {
		return 0, nil
	}
	return (st.UserTime() + st.SystemTime()).Seconds() / wall, nil
}

func (r BusyResult) line() string {
	return fmt.Sprintf("%s %v %s t%d: decode idle %.1f tok/s (CPU share %.0f%%), busy %.1f tok/s (CPU share %.0f%%, burner %.0f%% of a core): %.2f of idle",
		r.Model, r.DType, r.Device, r.Threads, r.IdleTokS, 100*r.IdleShare, r.BusyTokS, 100*r.BusyShare, 100*r.BurnerShare, r.Ratio())
}

// WriteBusyTable prints busy-machine results as a Markdown table.
func WriteBusyTable(w io.Writer, rs []BusyResult) error {
	var b strings.Builder
	b.WriteString("| model | weights | kernels | threads | idle decode tok/s | CPU share | busy decode tok/s | CPU share | burner | busy / idle |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %v | %s | %d | %.1f | %.0f%% | %.1f | %.0f%% | %.0f%% | %.2f |\n", r.Model, r.DType, r.Device, r.Threads,
			r.IdleTokS, 100*r.IdleShare, r.BusyTokS, 100*r.BusyShare, 100*r.BurnerShare, r.Ratio())
	}
	_, err := io.WriteString(w, b.String())
	return err
}
