package constrain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ndbg/ndbg/dsl"
)

// Program is one program compiled for constrained decoding against one
// vocabulary. It is safe for concurrent use: every session debugging the
// program shares it, and with it the masks cached so far.
type Program struct {
	vocab *Vocab
	src   *dsl.Program
	codes []Code
	names []string       // every local name of the program; a nameSet indexes this
	index map[string]int // name → index

	// Interned tries and rules. Fixed arrays, so a reader holding an id
	// (from Start or lineTrie, both under mu) reads its entry without a lock
	// while others append.
	mu       sync.RWMutex
	tries    *[maxTries]*trie
	nTries   int
	trieKey  map[string]int16
	rules    *[maxRules]*frameRules
	nRules   int
	rulesKey map[string]int16
	masks    map[State][]uint64
}

const (
	maxTries = 1 << 14
	maxRules = 1 << 14
)

// frameRules are the constraints on one predicted frame, derived from the
// action and where it starts (Context).
type frameRules struct {
	end      bool // <|end_of_text|> (the program ran past its end) is allowed
	literals bool // Context.Literals
	events   [dsl.Exception + 1]eventRules
	dotsAt   map[int]nameSet // line → names the ".." rule may write there
}

type eventRules struct {
	allowed  bool
	lines    []int           // candidate lines, ascending
	namesAt  map[int]nameSet // candidate line → names a frame there can have
	names    nameSet         // union of namesAt
	nameTrie int16
	dotNames nameSet // names that may be ".." on some candidate line
}

// maxMasks bounds the mask cache of one program (each mask is vocab/8 bytes).
const maxMasks = 4096

// Compile prepares a program (prepared by dsl.NewProgram, analysed by
// Analyze) for constrained decoding with vocab.
func Compile(vocab *Vocab, src *dsl.Program, codes []Code) (*Program, error) {
	p := &Program{vocab: vocab, src: src, codes: codes, index: map[string]int{},
		trieKey: map[string]int16{}, rulesKey: map[string]int16{}, masks: map[State][]uint64{},
		tries: new([maxTries]*trie), rules: new([maxRules]*frameRules)}
	for _, c := range codes {
		for _, l := range c.Lines {
			if l < 1 || l > len(src.Lines) {
				return nil, fmt.Errorf("constrain: code %s reports line %d outside the program (%d lines)", c.Name, l, len(src.Lines))
			}
		}
		for _, n := range c.Names {
			if _, ok := p.index[n]; !ok {
				if len(p.names) == maxNames {
					return nil, fmt.Errorf("constrain: the program has more than %d distinct local names (over all its functions): "+
						"the neural backends' frame grammar tracks at most %d (README.md, Limits); the real backend has no such limit", maxNames, maxNames)
				}
				p.index[n] = len(p.names)
				p.names = append(p.names, n)
			}
		}
	}
	return p, nil
}

// Context says where a predicted frame comes from: the action and the state
// it is applied to. The rules it implies are sound: they never exclude the
// state the real debugger would reach (tested against real traces).
type Context struct {
	Action dsl.Action
	From   dsl.State
	// Stack holds the call-event lines (def lines) of the frames on the call
	// stack, outermost first, the current frame last. Nil means unknown: no
	// frame-based restriction.
	Stack []int
	// Dots gives, for a line, the names whose value the ".." rule may write
	// there (the locals of that line's reference frame, docs/dsl.md). Nil
	// means no value may be "..".
	Dots func(line int) []string
	// Literals restricts the values CRUXEval reads its answers from, a call
	// state's locals (the arguments) and a return state's value, to Python
	// literals (literal.go): the model cannot write code there.
	Literals bool
}

// Start begins decoding one frame in context c.
func (p *Program) Start(c Context) (*Matcher, error) {
	id, err := p.rulesFor(c)
	if err != nil {
		return nil, err
	}
	return &Matcher{p: p, st: State{pos: pEvent, rules: id}}, nil
}

// rulesFor derives and interns the frame rules of a context.
func (p *Program) rulesFor(c Context) (int16, error) {
	// The key spells out everything the rules depend on. It is built by
	// appends, not fmt: a frame's start costs a key, and the dots part has
	// an entry per line of the program.
	key := append(make([]byte, 0, 128), c.Action.Kind.String()...)
	for _, l := range c.Action.Lines {
		key = strconv.AppendInt(append(key, ','), int64(l), 10)
	}
	key = strconv.AppendInt(append(key, '|'), int64(c.From.Event), 10)
	key = strconv.AppendInt(append(key, '|'), int64(c.From.Line), 10)
	key = append(key, '|')
	for _, l := range c.Stack {
		key = strconv.AppendInt(append(key, ','), int64(l), 10)
	}
	key = strconv.AppendBool(append(key, '|'), c.Literals)
	var dots map[int]nameSet
	if c.Dots != nil {
		dots = map[int]nameSet{}
		for l := 1; l <= len(p.src.Lines); l++ {
			var s nameSet
			for _, n := range c.Dots(l) {
				if i, ok := p.index[n]; ok {
					s.add(i)
				}
			}
			if !s.empty() {
				dots[l] = s
				key = strconv.AppendInt(append(key, '|'), int64(l), 10)
				for _, w := range s {
					key = strconv.AppendUint(append(key, ':'), w, 16)
				}
			}
		}
	}
	p.mu.RLock()
	id, ok := p.rulesKey[string(key)]
	p.mu.RUnlock()
	if ok {
		return id, nil
	}
	r, err := p.deriveRules(c)
	if err != nil {
		return 0, err
	}
	r.dotsAt, r.literals = dots, c.Literals
	p.mu.Lock()
	defer p.mu.Unlock()
	if id, ok := p.rulesKey[string(key)]; ok {
		return id, nil
	}
	for e := range r.events {
		er := &r.events[e]
		if dsl.Event(e) == dsl.Line { // only line frames write ".."
			for _, l := range er.lines {
				er.dotNames = or(er.dotNames, dots[l])
			}
		}
		if er.nameTrie = p.nameTrieLocked(er.names); er.nameTrie < 0 {
			return 0, fmt.Errorf("constrain: the program's frame grammar has used all its %d sets of local names (one program's grammar keeps at most that many)", maxTries)
		}
	}
	if p.nRules == maxRules {
		return 0, fmt.Errorf("constrain: the program's frame grammar has used all its %d frame contexts (one program's grammar keeps at most that many)", maxRules)
	}
	p.rules[p.nRules] = &r
	id = int16(p.nRules)
	p.nRules++
	p.rulesKey[string(key)] = id
	return id, nil
}

func or(a, b nameSet) nameSet { return nameSet{a[0] | b[0], a[1] | b[1], a[2] | b[2], a[3] | b[3]} }

// deriveRules turns an action and its starting state into the events, lines
// and names the next frame may have.
func (p *Program) deriveRules(c Context) (frameRules, error) {
	var r frameRules
	all := p.codes
	current, stack := all, all
	if len(c.Stack) > 0 {
		stack = p.codesAt(c.Stack...)
		current = p.codesAt(c.Stack[len(c.Stack)-1])
	} else if c.From.Line > 0 {
		current = p.codesContaining(c.From.Line)
	}
	entry := p.codesAt(p.src.EntryLine())
	leaving := c.From.Event == dsl.Return // the frame ended: the next stop is its caller's
	// A step ends the run only from its last state, the entry's return:
	// every frame's last event is a return (an exception's propagation
	// included), and the run's is the entry's.
	last := c.From.Event == dsl.Return && len(c.Stack) <= 1
	// From the entry's return, known to be it, a step ends the run and
	// goes nowhere else.
	entryReturn := c.From.Event == dsl.Return && len(c.Stack) == 1
	if entryReturn && (c.Action.Kind == dsl.StepInto || c.Action.Kind == dsl.StepOver || c.Action.Kind == dsl.StepReturn) {
		r.end = true
		return r, nil
	}
	switch c.Action.Kind {
	case dsl.StepInto:
		r.end = last
		if c.From.Event == dsl.Call { // a frame's call is followed by its own first event
			p.allow(&r, current, dsl.Line, dsl.Return, dsl.Exception)
			break
		}
		p.allow(&r, all, dsl.Call, dsl.Line, dsl.Return, dsl.Exception)
	case dsl.InvStepInto:
		p.allow(&r, all, dsl.Call, dsl.Line, dsl.Return, dsl.Exception)
	case dsl.StepOver:
		r.end = last
		p.allow(&r, stack, dsl.Line, dsl.Return, dsl.Exception)
		if leaving { // the caller may call again before its next line: a sibling
			p.allow(&r, all, dsl.Call)
		}
	case dsl.InvStepOver:
		p.allow(&r, stack, dsl.Call, dsl.Line, dsl.Return, dsl.Exception)
		if c.From.Event == dsl.Call { // back past a sibling call that just returned
			p.allow(&r, all, dsl.Return, dsl.Exception)
		}
	case dsl.StepReturn:
		r.end = last
		if leaving { // the caller's next stop
			p.allow(&r, stack, dsl.Line, dsl.Return, dsl.Exception)
		} else { // the return of the current frame
			p.allow(&r, current, dsl.Return, dsl.Exception)
		}
	case dsl.InvStepReturn:
		p.allow(&r, stack, dsl.Call)
	case dsl.Breakpoint, dsl.Continue:
		r.end = true
		p.allowLines(&r, c.Action.Lines)
	case dsl.InvBreakpoint, dsl.InvContinue:
		p.allowLines(&r, c.Action.Lines)
		p.allow(&r, entry, dsl.Call) // no earlier stop: back to the start
	default:
		return r, fmt.Errorf("constrain: unknown action %v", c.Action)
	}
	return r, nil
}

// allow permits events at the lines of the given code objects.
func (p *Program) allow(r *frameRules, codes []Code, events ...dsl.Event) {
	for _, e := range events {
		er := &r.events[e]
		for _, c := range codes {
			if e == dsl.Call && !c.Generator {
				p.addLine(er, c.First, c)
				continue
			}
			for _, l := range c.Lines {
				p.addLine(er, l, c)
			}
		}
	}
}

// allowLines permits line events at breakpoint lines.
func (p *Program) allowLines(r *frameRules, lines []int) {
	er := &r.events[dsl.Line]
	for _, l := range lines {
		for _, c := range p.codesContaining(l) {
			p.addLine(er, l, c)
		}
	}
}

func (p *Program) addLine(er *eventRules, line int, c Code) {
	if er.namesAt == nil {
		er.namesAt = map[int]nameSet{}
	}
	if _, ok := er.namesAt[line]; !ok {
		er.lines = append(er.lines, line)
		slices.Sort(er.lines)
	}
	s := er.namesAt[line]
	for _, n := range c.Names {
		s.add(p.index[n])
	}
	er.namesAt[line] = s
	er.names = or(er.names, s)
	er.allowed = true
}

// codesAt returns the code objects that can have a call event at one of
// lines: their first line, or any line of a generator (a resume).
func (p *Program) codesAt(lines ...int) []Code {
	var out []Code
	for _, c := range p.codes {
		at := slices.Contains(lines, c.First)
		for _, l := range lines {
			if _, ok := slices.BinarySearch(c.Lines, l); ok && c.Generator {
				at = true
			}
		}
		if at {
			out = append(out, c)
		}
	}
	return out
}

// codesContaining returns the code objects that can report events at line.
func (p *Program) codesContaining(line int) []Code {
	var out []Code
	for _, c := range p.codes {
		if _, ok := slices.BinarySearch(c.Lines, line); ok {
			out = append(out, c)
		}
	}
	return out
}

// compatible reports whether some candidate line admits every name used
// and every ".." written so far: a name is only allowed if the frame can
// still be completed, so decoding never reaches a dead end.
func (p *Program) compatible(st State, used, dot nameSet) bool {
	r := p.rules[st.rules]
	er := &r.events[st.event]
	for _, l := range er.lines {
		if used.sub(er.namesAt[l]) && (dot.empty() || dot.sub(r.dotsAt[l])) {
			return true
		}
	}
	return false
}

// canAddName reports whether another name can follow the ones used.
func (p *Program) canAddName(st State) bool {
	return p.canAddNameFrom(st, p.rules[st.rules].events[st.event].names)
}

// canAddNameFrom reports whether one of the names in set can follow the
// ones used, leaving the frame completable.
func (p *Program) canAddNameFrom(st State, set nameSet) bool {
	free := set.minus(st.used)
	for i := range p.names {
		if free.has(i) {
			u := st.used
			u.add(i)
			if p.compatible(st, u, st.dot) {
				return true
			}
		}
	}
	return false
}

// appendJSONContent appends s as the content of a canonical JSON string
// (Python json.dumps, ensure_ascii), without quotes.
func appendJSONContent(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	u4 := func(dst []byte, r rune) []byte {
		return append(dst, '\\', 'u', hex[r>>12&15], hex[r>>8&15], hex[r>>4&15], hex[r&15])
	}
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			dst = append(dst, '\\', byte(r))
		case r >= 0x20 && r < 0x7f:
			dst = append(dst, byte(r))
		case r == '\n':
			dst = append(dst, '\\', 'n')
		case r == '\r':
			dst = append(dst, '\\', 'r')
		case r == '\t':
			dst = append(dst, '\\', 't')
		case r == '\b':
			dst = append(dst, '\\', 'b')
		case r == '\f':
			dst = append(dst, '\\', 'f')
		case r > 0xffff:
			r -= 0x10000
			dst = u4(u4(dst, 0xd800+r>>10), 0xdc00+r&0x3ff)
		default:
			dst = u4(dst, r)
		}
	}
	return dst
}

// lineTrie returns the trie of the lines consistent with the locals written.
func (p *Program) lineTrie(st State) (int16, bool) {
	r := p.rules[st.rules]
	er := &r.events[st.event]
	var lines []int
	for _, l := range er.lines {
		if st.used.sub(er.namesAt[l]) && st.dot.sub(r.dotsAt[l]) {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return 0, false
	}
	var key strings.Builder
	key.WriteString("L")
	for _, l := range lines {
		key.WriteString(strconv.Itoa(l))
		key.WriteByte(',')
	}
	p.mu.RLock()
	id, ok := p.trieKey[key.String()]
	p.mu.RUnlock()
	if ok {
		return id, true
	}
	keys := make([][]byte, len(lines))
	values := make([]int32, len(lines))
	for i, l := range lines {
		keys[i] = []byte(p.src.Text(l) + "\n")
		values[i] = int32(l)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	id = p.internTrieLocked(key.String(), keys, values)
	return id, id >= 0
}

// nameTrieLocked returns the trie of the names in s, each JSON-quoted
// without its opening quote: `x"`.
func (p *Program) nameTrieLocked(s nameSet) int16 {
	key := fmt.Sprintf("N%x", s)
	if id, ok := p.trieKey[key]; ok {
		return id
	}
	var keys [][]byte
	var values []int32
	for i, n := range p.names {
		if s.has(i) {
			keys = append(keys, append(appendJSONContent(nil, n), '"'))
			values = append(values, int32(i))
		}
	}
	return p.internTrieLocked(key, keys, values)
}

func (p *Program) internTrieLocked(key string, keys [][]byte, values []int32) int16 {
	if id, ok := p.trieKey[key]; ok {
		return id
	}
	if p.nTries == maxTries { // the program's tries are exhausted: reuse the last one's slot
		return -1
	}
	p.tries[p.nTries] = newTrie(keys, values)
	id := int16(p.nTries)
	p.nTries++
	p.trieKey[key] = id
	return id
}
