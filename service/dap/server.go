// Package dap serves the Debug Adapter Protocol (DAP) for ndbg: it
// translates the requests of an editor (VS Code, nvim-dap, ...) into
// calls of the ndbg API (Start, the Session's actions, breakpoints, Set)
// and ndbg's states into DAP's stopped events, stack frames and variables.
// Its one job is that translation; the protocol's types and wire format
// are github.com/google/go-dap's.
//
// One Serve call is one debugging session over one connection: initialize,
// launch (program, call, backend, model, device), setBreakpoints,
// configurationDone, then steps forwards and backwards until the program
// ends (a stopped event with reason "end", from which it can still step
// back; the next step forward, or launch's terminateAtEnd, ends the session
// with exited and terminated) or the client disconnects. A malformed or
// out-of-order request gets an error response, never a crash.
package dap

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	godap "github.com/google/go-dap"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/internal/ctxio"
	"github.com/ndbg/ndbg/trace"
)

// Config is what a server needs beyond the client's launch arguments.
type Config struct {
	// Limits bound the real backend's run (and the compare backend's real
	// run); zero fields take package trace's defaults. Their interpreter
	// and sandbox choice (Python, Unsandboxed) are evaluate's too.
	Limits trace.Limits
	// Threads for the model's CPU; 0 means all cores.
	Threads int
	// Device is where models compute when a launch names none (cpu, cuda
	// or auto, as --device; "" is the CPU).
	Device string
	// Log, when not nil, receives one line per protocol problem (a
	// malformed message, a failed write): what the client may not see.
	Log io.Writer
}

// Serve answers the DAP requests read from r, writing responses and
// events to w, until the client disconnects, r ends, or ctx is done (also
// while waiting for the next request: r is read under ctx, package ctxio,
// so SIGTERM stops `ndbg dap` on stdio). It returns nil after a disconnect
// or the end of r, ctx's cause once it is done, and an error when the
// stream cannot be read as DAP any more (a broken header: the next
// message's start is unknown) or cannot be written.
func Serve(ctx context.Context, r io.Reader, w io.Writer, cfg Config) error {
	// python3 once for the connection's sessions and their runs; a failure
	// is each run's to report.
	if lim, err := cfg.Limits.WithPython(ctx); err == nil {
		cfg.Limits = lim
	}
	s := &server{cfg: cfg, in: bufio.NewReader(ctxio.Reader(ctx, r)), out: w}
	defer s.closeSession()
	// Requests are read ahead of the one being answered, so that a pause
	// reaches the action it interrupts while that action runs.
	reqs := make(chan readResult)
	stop := make(chan struct{})
	defer close(stop)
	go s.readAll(reqs, stop)
	for {
		var in readResult
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case in = <-reqs:
		}
		if errors.Is(in.err, io.EOF) {
			return nil
		}
		if in.err != nil {
			return in.err
		}
		if in.req == nil {
			continue // answered with an error response already
		}
		done := s.handle(ctx, in.req)
		if runs(in.req) {
			s.mu.Lock()
			s.actionsDone++
			s.mu.Unlock()
		}
		if err := s.written(); err != nil {
			return fmt.Errorf("dap: writing to the client: %w", err)
		}
		if done {
			return nil
		}
	}
}

// runs says whether req may run the program (an action, or configurationDone,
// which starts it): what a pause read after it stops.
func runs(req godap.RequestMessage) bool {
	switch req.(type) {
	case *godap.ConfigurationDoneRequest, *godap.ContinueRequest, *godap.NextRequest, *godap.StepInRequest,
		*godap.StepOutRequest, *godap.StepBackRequest, *godap.ReverseContinueRequest, *godap.GotoRequest:
		return true
	}
	return false
}

// readResult is one request read, or the error that ended reading.
type readResult struct {
	req godap.RequestMessage
	err error
}

// readAll reads requests into reqs until an error or stop; a pause
// interrupts the running action at once.
func (s *server) readAll(reqs chan<- readResult, stop <-chan struct{}) {
	for {
		req, err := s.read()
		if _, ok := req.(*godap.PauseRequest); ok {
			s.interrupt()
		}
		if runs(req) {
			s.mu.Lock()
			s.actionsRead++
			s.mu.Unlock()
		}
		select {
		case reqs <- readResult{req, err}:
		case <-stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// setSession makes ss the launched session (nil: none), which a pause
// interrupts.
func (s *server) setSession(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sess = ss
	s.running = nil
	if ss != nil {
		s.running = []*ndbg.Session{ss.s, ss.real}
	}
}

// interrupt stops the action running in the launched session, or the one
// a request read before the pause is about to start (ndbg.Session.Interrupt:
// the real backend stops at the program's next event); a pause while
// nothing runs or waits to (the program is stopped) does nothing.
func (s *server) interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.actionsRead == s.actionsDone {
		return
	}
	for _, r := range s.running {
		if r != nil {
			r.Interrupt()
		}
	}
}

// written is the first failed write, if any.
func (s *server) written() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	return s.writeErr
}

// server is the state of one connection.
type server struct {
	cfg      Config
	in       *bufio.Reader
	out      io.Writer
	wmu      sync.Mutex // the writes (the reader answers malformed requests)
	seq      int        // the last seq sent
	writeErr error      // the first failed write; Serve ends on it

	mu      sync.Mutex      // running, which the reader interrupts
	running []*ndbg.Session // the launched sessions
	// actionsRead and actionsDone count the requests that run the program
	// (runs) read and answered: a pause stops one only while some are
	// read and not yet answered.
	actionsRead, actionsDone int

	initialized bool
	sess        *session // nil until launch succeeds
	configured  bool     // configurationDone received
	terminated  bool     // terminated sent: the session is over, a step is refused
}

// maxMessage bounds one message's content (go-dap refuses more than 4 MiB
// itself; a request of ndbg's is a few hundred bytes).
const maxMessage = 1 << 20

// read returns the next request. A message that is framed correctly but
// is not a request ndbg can decode is answered with an error response
// here and read returns nil, nil; a broken frame is an error (the stream
// cannot be resynchronised), as is io.EOF at its end.
func (s *server) read() (godap.RequestMessage, error) {
	content, err := godap.ReadBaseMessage(s.in)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("dap: the stream ended inside a message: %w", err)
		}
		return nil, fmt.Errorf("dap: reading a message: %w", err)
	}
	if len(content) > maxMessage {
		s.fail(0, "", fmt.Sprintf("a message of %d bytes is over ndbg's limit of %d", len(content), maxMessage))
		return nil, nil
	}
	msg, err := godap.DecodeProtocolMessage(content)
	if err != nil {
		// Answer with what can be read of the request: its seq and command.
		var head struct {
			Seq     int    `json:"seq"`
			Type    string `json:"type"`
			Command string `json:"command"`
		}
		_ = json.Unmarshal(content, &head) // best effort: zero values when not even that parses
		var fe *godap.DecodeProtocolMessageFieldError
		switch {
		case errors.As(err, &fe) && fe.SubType == "Request":
			s.fail(head.Seq, head.Command, fmt.Sprintf("unknown request %q", head.Command))
		case head.Type != "request" && head.Type != "":
			s.fail(head.Seq, head.Command, fmt.Sprintf("ndbg reads only requests, not a message of type %q", head.Type))
		default:
			s.fail(head.Seq, head.Command, fmt.Sprintf("malformed request: %v", err))
		}
		s.logf("malformed message (seq %d): %v", head.Seq, err)
		return nil, nil
	}
	req, ok := msg.(godap.RequestMessage)
	if !ok {
		s.fail(msg.GetSeq(), "", "ndbg reads only requests")
		return nil, nil
	}
	return req, nil
}

// send writes one message, numbering it.
func (s *server) send(m godap.Message) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.writeErr != nil {
		return
	}
	s.seq++
	switch m := m.(type) {
	case godap.ResponseMessage:
		m.GetResponse().Seq, m.GetResponse().Type = s.seq, "response"
	case godap.EventMessage:
		m.GetEvent().Seq, m.GetEvent().Type = s.seq, "event"
	}
	if err := godap.WriteProtocolMessage(s.out, m); err != nil {
		s.writeErr = err
		s.logf("writing: %v", err)
	}
}

// response is the success header answering req.
func response(req *godap.Request) godap.Response {
	return godap.Response{RequestSeq: req.Seq, Command: req.Command, Success: true}
}

// fail sends an error response to the request numbered seq.
func (s *server) fail(seq int, command, message string) {
	s.send(&godap.ErrorResponse{
		Response: godap.Response{RequestSeq: seq, Command: command, Message: message},
		Body:     godap.ErrorResponseBody{Error: &godap.ErrorMessage{Id: 1, Format: message, ShowUser: true}},
	})
}

// event sends an event with a body.
func (s *server) event(name string, m godap.EventMessage) {
	m.GetEvent().Event = name
	s.send(m)
}

// output sends text as an output event of category ("console", "stdout").
func (s *server) output(category, text string) {
	s.event("output", &godap.OutputEvent{Body: godap.OutputEventBody{Category: category, Output: text}})
}

func (s *server) logf(format string, args ...any) {
	if s.cfg.Log != nil {
		fmt.Fprintf(s.cfg.Log, "ndbg dap: "+format+"\n", args...)
	}
}

func (s *server) closeSession() {
	if s.sess != nil {
		s.sess.close()
		s.setSession(nil)
	}
}

// ndbgError is the message of an error from the API for the client: the
// API's errors say what and where already.
func ndbgError(err error) string {
	switch {
	case errors.Is(err, ndbg.ErrFinished):
		return "the program has finished"
	case errors.Is(err, ndbg.ErrAtStart):
		return "already at the first state: nothing to step back to"
	}
	return err.Error()
}
