package neural

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ndbg/ndbg/constrain"
	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/internal/engine"
	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/tokenizer"
	"github.com/ndbg/ndbg/trace"
)

// Model is a loaded neural debugger: the inference engine, its tokenizer
// and the constrained decoder's view of the vocabulary. It is safe for concurrent
// use by many sessions, which share each program's analysis and the model
// state of its source (computed once, then forked).
type Model struct {
	eng   *model.Model
	tok   *tokenizer.Tokenizer
	vocab *constrain.Vocab
	// python is the interpreter that analyses programs and evaluates entry
	// arguments: as given, or, when none was, python3 on PATH resolved once
	// by limits (trace.FindPython asks a shim such as pyenv's, a shell
	// script costing about 0.1 s, for the real binary). pythonMu guards it,
	// starter and closed.
	pythonMu sync.Mutex
	python   string
	// starter runs the entry calls of the model's sessions, keeping the
	// next sandboxed interpreter started ahead (trace.Starter); made with
	// python, nil until then and after Close.
	starter *trace.Starter
	closed  bool // Close was called: no new Starter
	// unsandboxed: run the module code and entry arguments without the
	// operating-system sandbox (trace.Limits.Unsandboxed).
	unsandboxed bool

	prefixes *model.PrefixCache // the model after each program's prefix text, computed once
	// batcher runs the one-token decode steps of the model's sessions that
	// arrive together as one batch (nil: each session steps alone).
	batcher *model.Batcher
	// decoding counts the engines decoding a frame now (decodeFrame): a
	// step goes through the Batcher only when another may join it.
	decoding atomic.Int32
	braces   []uint64 // mask of the tokens whose text starts with '}' (closeMask)

	mu    sync.Mutex
	progs map[string]*programCache // by prepared source
}

// programCache is what every session of one program shares besides the
// model's prefix: the compiled grammar.
type programCache struct {
	once   sync.Once
	err    error
	cp     *constrain.Program
	codes  []constrain.Code // the program's code objects (call lines, lines)
	text   string           // <|begin_of_text|><|trace_context_start|>source<|frame_sep|>
	tokens []int            // text, tokenized (the key of the model's prefix cache)
	// lineRoom is the most tokens a frame takes after its locals: the
	// longest line's, its newline and the special tokens around it.
	lineRoom int
}

// maxCachedPrograms bounds the per-model program cache.
const maxCachedPrograms = 64

// maxDecodeBatch and decodeWindow are the model's Batcher: at most this many
// sessions per decode step, and how long a step waits for the sessions of
// the last steps to come back (each samples and constrains its token first).
const (
	maxDecodeBatch = 64
	decodeWindow   = 2 * time.Millisecond
)

// NewModel makes the neural debugger of an inference engine and its
// tokenizer. python is the interpreter that analyses programs and evaluates
// entry arguments (empty: python3 on PATH); unsandboxed runs those without
// the operating-system sandbox. With batch, the one-token decode steps of
// sessions running concurrently run as batches on a model.Batcher (their
// logits may differ from a lone step's in the last bits: sums in another
// order); without it every session steps alone, bit for bit as by itself.
func NewModel(eng *model.Model, tok *tokenizer.Tokenizer, python string, unsandboxed, batch bool) (*Model, error) {
	cfg := eng.Config()
	if err := tok.CheckModel(cfg.VocabSize, cfg.BOSTokenID, cfg.EOSTokenIDs); err != nil {
		return nil, fmt.Errorf("ndbg: %w", err)
	}
	vocab, err := constrain.VocabOf(tok)
	if err != nil {
		return nil, fmt.Errorf("ndbg: %w (is this a model trained on ndbg's DSL, or CWM?)", err)
	}
	if err := checkSpecial(vocab, &cfg); err != nil {
		return nil, err
	}
	braces := make([]uint64, (eng.Config().VocabSize+63)/64)
	for id := range tok.VocabSize() {
		if b := tok.TokenBytes(id); len(b) > 0 && b[0] == '}' && !tok.IsSpecial(id) {
			braces[id/64] |= 1 << (id % 64)
		}
	}
	m := &Model{eng: eng, tok: tok, vocab: vocab, python: python, unsandboxed: unsandboxed, progs: map[string]*programCache{},
		prefixes: model.NewPrefixCache(eng, maxCachedPrograms), braces: braces}
	if batch {
		m.batcher = model.NewBatcher(eng, maxDecodeBatch, decodeWindow)
	}
	return m, nil
}

// checkSpecial checks that the vocabulary has every special token the
// prompts and frames are written with (a missing one would be encoded as
// its text in ordinary tokens, which the model never read): all of them
// for a model trained on the DSL, all but the action tokens for one trained
// on CWM's plain traces (ActionTokens; CWM leaves those slots reserved),
// never only some of the action tokens; and that the config's BOS and EOS
// ids are the DSL's <|begin_of_text|> and <|end_of_text|>.
func checkSpecial(vocab *constrain.Vocab, cfg *model.Config) error {
	var missing, actions []string
	for _, s := range dsl.SpecialTokens() {
		if _, ok := vocab.Special(s.Text); !ok {
			missing = append(missing, s.Text)
		}
	}
	for k := dsl.StepInto; k <= dsl.InvContinue; k++ {
		actions = append(actions, k.Token())
	}
	if slices.Equal(missing, actions) {
		missing = nil // CWM's vocabulary: its emulation (CWMEngine) writes no action token
	}
	if len(missing) > 0 {
		return fmt.Errorf("ndbg: tokenizer.json lacks the special token(s) %s that the debugger's text is written with "+
			"(is this a model trained on ndbg's DSL, or CWM?)", strings.Join(missing, " "))
	}
	bos, _ := vocab.Special(dsl.BeginOfText)
	if cfg.BOSTokenID != nil && *cfg.BOSTokenID != bos {
		return fmt.Errorf("ndbg: config.json's bos_token_id is %d, but tokenizer.json's %s is %d: the tokenizer is not this model's",
			*cfg.BOSTokenID, dsl.BeginOfText, bos)
	}
	eos, _ := vocab.Special(dsl.EndOfText)
	if len(cfg.EOSTokenIDs) > 0 && !slices.Contains(cfg.EOSTokenIDs, eos) {
		return fmt.Errorf("ndbg: config.json's eos_token_id is %v, which does not hold tokenizer.json's %s (%d): the tokenizer is not this model's",
			cfg.EOSTokenIDs, dsl.EndOfText, eos)
	}
	return nil
}

// ActionTokens reports whether the model's tokenizer has the DSL's action
// tokens (<|step_into|> ...): the model was trained on the DSL with its
// actions (the neural backend's), not on CWM's plain traces. CWM's own
// tokenizer leaves those slots reserved, without them.
func (m *Model) ActionTokens() bool {
	for k := dsl.StepInto; k <= dsl.InvContinue; k++ {
		if _, ok := m.tok.TokenID(k.Token()); ok {
			return true
		}
	}
	return false
}

// CheckCWM reports why the CWM emulation cannot run on m: a model trained
// with the DSL's action tokens reads one after every frame, and without it
// (CWM's emulation writes none) predicts nothing a debugger would show
// (the end, at once, for the default model).
func CheckCWM(m *Model, name string) error {
	if m.ActionTokens() {
		return fmt.Errorf("%w: the cwm backend is for checkpoints trained on CWM's plain traces (facebook/cwm, or trained like it); "+
			"model %s was trained with the DSL's action tokens (%s, ...): use the neural backend", engine.ErrUnsupported, name, dsl.StepInto.Token())
	}
	return nil
}

// DecodeStats returns the decode batches the model's Batcher ran and the
// session steps they held (both 0 when the model does not batch).
func (m *Model) DecodeStats() (batches, steps int64) {
	if m.batcher == nil {
		return 0, 0
	}
	return m.batcher.Stats()
}

// forward feeds tokens to a session of the model: a single token through
// the Batcher, where the model batches and another engine is decoding too,
// else the session's own Forward. A lone decoder has no one to batch with:
// the Batcher would cost it a hand-off to its goroutine at every token, and
// a window's wait whenever the session before it has just stopped
// stepping (the Batcher waits for the sessions of its last two batches).
// Alone, a batch of one is the session's own Forward, bit for bit.
func (m *Model) forward(ctx context.Context, s *model.Session, tokens []int) error {
	var err error
	if len(tokens) == 1 && m.batcher != nil && m.decoding.Load() > 1 {
		_, err = m.batcher.Forward(ctx, s, tokens[0])
	} else {
		_, err = s.Forward(ctx, tokens, false)
	}
	return err
}

// limits are the trace limits of the model's Python runs (program analysis,
// entry arguments): its interpreter, found on PATH at the first call where
// none was given, and the sandbox setting; and the Starter that runs entry
// calls under them.
func (m *Model) limits(ctx context.Context) (trace.Limits, *trace.Starter, error) {
	m.pythonMu.Lock()
	defer m.pythonMu.Unlock()
	if m.python == "" {
		py, err := trace.FindPython(ctx)
		if err != nil {
			return trace.Limits{}, nil, fmt.Errorf("ndbg: %w", err)
		}
		m.python = py
	}
	lim := trace.Limits{Python: m.python, Unsandboxed: m.unsandboxed}
	if m.starter == nil && !m.closed {
		st, err := trace.NewStarter(ctx, lim)
		if err != nil {
			return trace.Limits{}, nil, fmt.Errorf("ndbg: %w", err)
		}
		m.starter = st
	}
	return lim, m.starter, nil
}

// Engine returns the underlying inference engine.
func (m *Model) Engine() *model.Model { return m.eng }

// Tokenizer returns the model's tokenizer.
func (m *Model) Tokenizer() *tokenizer.Tokenizer { return m.tok }

// Close releases the model (mapped weights, worker threads, the spare
// interpreter and those still exiting). The Batcher has nothing to
// release: its goroutine lives only while steps wait.
func (m *Model) Close() error {
	m.pythonMu.Lock()
	m.closed = true
	st := m.starter
	m.starter = nil
	m.pythonMu.Unlock()
	if st != nil {
		st.Close() // its spare interpreter, and the used ones not yet reaped
	}
	return m.eng.Close()
}

// program returns the shared, lazily built state of one program.
func (m *Model) program(ctx context.Context, prog *dsl.Program) (*programCache, error) {
	m.mu.Lock()
	pc, ok := m.progs[prog.Source]
	if !ok {
		if len(m.progs) >= maxCachedPrograms {
			clear(m.progs) // simple and bounded; sessions keep their forks
		}
		pc = &programCache{}
		m.progs[prog.Source] = pc
	}
	m.mu.Unlock()
	pc.once.Do(func() {
		lim, _, err := m.limits(ctx)
		if err != nil {
			pc.err = err
			return
		}
		codes, err := constrain.Analyze(ctx, lim, prog.Source)
		if err != nil {
			pc.err = err
			return
		}
		pc.cp, pc.err = constrain.Compile(m.vocab, prog, codes)
		pc.codes = codes
		pc.text = dsl.BeginOfText + dsl.TraceContextStart + prog.Source + dsl.FrameSep
		pc.tokens = m.encode(pc.text)
		for l := range prog.Lines {
			pc.lineRoom = max(pc.lineRoom, len(m.encode(prog.Text(l+1)+"\n"))+3)
		}
	})
	if pc.err != nil {
		m.mu.Lock()
		delete(m.progs, prog.Source) // let a later session retry (e.g. after a cancelled ctx)
		m.mu.Unlock()
		return nil, pc.err
	}
	return pc, nil
}

// encode tokenizes DSL text: special tokens by the constrained decoder's
// ids (CWM's, in a Llama-3 vocabulary), the text between them with BPE.
func (m *Model) encode(text string) []int {
	var ids []int
	for len(text) > 0 {
		at, size, id := len(text), 0, -1
		if i := strings.Index(text, "<|"); i >= 0 {
			for _, s := range dsl.SpecialTokens() {
				if strings.HasPrefix(text[i:], s.Text) {
					if sid, ok := m.vocab.Special(s.Text); ok {
						at, size, id = i, len(s.Text), sid
					}
					break
				}
			}
			if id < 0 { // "<|" that starts no special token: ordinary text
				ids = m.tok.AppendEncode(ids, text[:i+2])
				text = text[i+2:]
				continue
			}
		}
		ids = m.tok.AppendEncode(ids, text[:at])
		if id >= 0 {
			ids = append(ids, id)
		}
		text = text[at+size:]
	}
	return ids
}
