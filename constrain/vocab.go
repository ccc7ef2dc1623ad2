package constrain

import (
	"bytes"
	"fmt"
	"sort"
	"sync"

	"github.com/ndbg/ndbg/dsl"
)

// Vocab is a tokenizer's vocabulary as the constrained decoder sees it: the
// bytes of every ordinary token, arranged in byte tries so that tokens
// sharing a prefix are matched against the grammar once, and the ids of the
// DSL's special tokens. Build it once per tokenizer; it is read-only and
// safe for concurrent use.
type Vocab struct {
	size    int
	special map[string]int // DSL special token text → id
	bySpec  map[int]string
	tokens  [][]byte // ordinary token bytes by id; nil for special or empty ids
	maxLen  int      // longest ordinary token in bytes

	all    vocabTrie // every ordinary token
	quoted vocabTrie // the tokens holding a '"' or a '\\': inside a value, walked for each state
	// The other tokens never leave a value's string nor start a JSON escape
	// there, so which of them a value's state allows depends on that state
	// alone, not on the frame around it: values keeps those sets, in two
	// classes by length (short, then long: the few long tokens would
	// otherwise make the value's length count for every token near
	// dsl.MarkerFrom), for every program of the vocabulary.
	short, long valueTokens
	vmu         sync.RWMutex
	values      map[valueKey][]uint64
}

// valueTokens are the tokens without '"' and '\\' of one length class.
type valueTokens struct {
	maxLen   int
	unquoted vocabTrie // all of them
	// The tokens made only of JSON string content (printable ASCII but '"'
	// and '\\', no "<|"). Where the repr grammar takes such characters
	// whatever comes around them (dsl.ReprPlain), they are accepted whole and
	// only the others are walked: content inside a "..." string of the
	// repr; contentNoApos, those without a '\'', inside a '...' string;
	// contentText, those without a quote, bracket, '<' or '>', in the text
	// of a <...> form. The NoBar sets leave out the tokens starting with
	// '|', for after a '<'.
	content, contentNoBar, contentNoApos, contentNoAposNoBar, contentText []uint64
	// The content tokens that hold a '\'' (walked inside a '...' string),
	// and those that hold a quote, bracket, '<' or '>' (walked in text).
	apos, textual vocabTrie
	// Where the repr grammar takes every word whatever it is
	// (dsl.ReprIdent: where a name starts or goes on), the words
	// ([A-Za-z_][A-Za-z0-9_]*) and the spaced words (" word") are taken
	// whole or not at all, and only the others are walked.
	words, spaced []uint64
	others        vocabTrie
}

// valueKey keys the value masks: a value's state (valueState) and the
// length class.
type valueKey struct {
	st   State
	long bool
}

// shortToken is the longest token of the short class.
const shortToken = 16

// maxValueMasks bounds the value masks a vocabulary keeps.
const maxValueMasks = 4096

// vocabTrie is a byte trie of tokens in CSR form: node n's children are
// edges[first[n]:first[n+1]], sorted by byte; tokenAt[n] is the token id
// spelled by the path to n, or -1.
type vocabTrie struct {
	first   []int32
	edges   []edge
	tokenAt []int32
}

type edge struct {
	b     byte
	child int32
}

// maxReprBytes bounds a string's decoded length (dsl.MaxRepr).
const maxReprBytes = dsl.MaxRepr

// NewVocab builds a Vocab. tokens[id] are the bytes token id stands for;
// special maps each DSL special token (dsl.SpecialTokens) present in the
// vocabulary to its id. Special ids are left out of the byte tries: they can
// only be emitted where the grammar asks for that very token.
func NewVocab(tokens [][]byte, special map[string]int) (*Vocab, error) {
	v := &Vocab{size: len(tokens), special: map[string]int{}, bySpec: map[int]string{}, tokens: make([][]byte, len(tokens))}
	for _, name := range []string{tokFrameSep, tokActionSep, tokReturnSep, tokCallSep, tokLineSep, tokExceptionSep, tokArgSep, tokEnd} {
		id, ok := special[name]
		if !ok {
			return nil, fmt.Errorf("constrain: vocabulary lacks special token %s", name)
		}
		if id < 0 || id >= len(tokens) {
			return nil, fmt.Errorf("constrain: special token %s has id %d outside the vocabulary (%d)", name, id, len(tokens))
		}
	}
	for name, id := range special {
		v.special[name] = id
		v.bySpec[id] = name
	}
	var all, quoted []int32
	var unquoted [2][]int32 // short, long
	for id, b := range tokens {
		if _, isSpecial := v.bySpec[id]; isSpecial || len(b) == 0 {
			continue
		}
		v.tokens[id] = b
		v.maxLen = max(v.maxLen, len(b))
		all = append(all, int32(id))
		if bytes.ContainsAny(b, "\"\\") {
			quoted = append(quoted, int32(id))
		} else if len(b) > shortToken {
			unquoted[1] = append(unquoted[1], int32(id))
		} else {
			unquoted[0] = append(unquoted[0], int32(id))
		}
	}
	v.all = buildVocabTrie(v.tokens, all)
	v.quoted = buildVocabTrie(v.tokens, quoted)
	v.short = newValueTokens(v.tokens, unquoted[0])
	v.long = newValueTokens(v.tokens, unquoted[1])
	v.values = map[valueKey][]uint64{}
	return v, nil
}

// newValueTokens builds the sets of one length class from its tokens
// (none holding '"' or '\\').
func newValueTokens(tokens [][]byte, ids []int32) valueTokens {
	words := (len(tokens) + 63) / 64
	c := valueTokens{content: make([]uint64, words), contentNoBar: make([]uint64, words), contentNoApos: make([]uint64, words),
		contentNoAposNoBar: make([]uint64, words), contentText: make([]uint64, words),
		words: make([]uint64, words), spaced: make([]uint64, words)}
	var apos, textual, others []int32
	for _, id := range ids {
		b := tokens[id]
		c.maxLen = max(c.maxLen, len(b))
		switch {
		case isWord(b):
			c.words[id>>6] |= 1 << (id & 63)
		case b[0] == ' ' && isWord(b[1:]):
			c.spaced[id>>6] |= 1 << (id & 63)
		default:
			others = append(others, id)
		}
		if !isContent(b) {
			continue
		}
		bit := uint64(1) << (id & 63)
		c.content[id>>6] |= bit
		if b[0] != '|' {
			c.contentNoBar[id>>6] |= bit
		}
		if bytes.IndexByte(b, '\'') < 0 {
			c.contentNoApos[id>>6] |= bit
			if b[0] != '|' {
				c.contentNoAposNoBar[id>>6] |= bit
			}
		} else {
			apos = append(apos, id)
		}
		if bytes.ContainsAny(b, "'<>()[]{}") {
			textual = append(textual, id)
		} else {
			c.contentText[id>>6] |= bit
		}
	}
	c.apos = buildVocabTrie(tokens, apos)
	c.textual = buildVocabTrie(tokens, textual)
	c.others = buildVocabTrie(tokens, others)
	c.unquoted = buildVocabTrie(tokens, ids)
	return c
}

// isWord reports whether b is an ASCII identifier: [A-Za-z_][A-Za-z0-9_]*.
func isWord(b []byte) bool {
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return len(b) > 0
}

func isContent(b []byte) bool {
	for i, c := range b {
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || (c == '|' && i > 0 && b[i-1] == '<') {
			return false
		}
	}
	return true
}

// buildVocabTrie builds the trie of the given token ids.
func buildVocabTrie(tokens [][]byte, ids []int32) vocabTrie {
	sort.Slice(ids, func(i, j int) bool { return string(tokens[ids[i]]) < string(tokens[ids[j]]) })
	type node struct {
		children []edge
		token    int32
	}
	nodes := []node{{token: -1}}
	path := []int32{0} // the node at each depth of the previous token
	var prev []byte
	for _, id := range ids {
		b := tokens[id]
		common := 0
		for common < len(prev) && common < len(b) && prev[common] == b[common] {
			common++
		}
		path = path[:common+1]
		for d := common; d < len(b); d++ {
			nodes = append(nodes, node{token: -1})
			child := int32(len(nodes) - 1)
			nodes[path[d]].children = append(nodes[path[d]].children, edge{b[d], child})
			path = append(path, child)
		}
		nodes[path[len(b)]].token = id
		prev = b
	}
	t := vocabTrie{first: make([]int32, len(nodes)+1), tokenAt: make([]int32, len(nodes))}
	for i, n := range nodes {
		t.first[i+1] = t.first[i] + int32(len(n.children))
		t.edges = append(t.edges, n.children...)
		t.tokenAt[i] = n.token
	}
	return t
}

// Size is the number of token ids (the length of a mask).
func (v *Vocab) Size() int { return v.size }

// Special returns the id of a DSL special token.
func (v *Vocab) Special(name string) (int, bool) {
	id, ok := v.special[name]
	return id, ok
}

// The special tokens a frame uses.
const (
	tokFrameSep     = "<|frame_sep|>"
	tokActionSep    = "<|action_sep|>"
	tokReturnSep    = "<|return_sep|>"
	tokCallSep      = "<|call_sep|>"
	tokLineSep      = "<|line_sep|>"
	tokExceptionSep = "<|exception_sep|>"
	tokArgSep       = "<|arg_sep|>"
	tokEnd          = "<|end_of_text|>"
)
