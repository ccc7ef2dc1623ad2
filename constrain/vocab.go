package constrain

import (
	"bytes"
	"fmt"
	"sort"

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
	quoted vocabTrie // the tokens holding a '"' or a '\\': inside a string, the uncertain ones
	// The tokens made only of JSON string content (printable ASCII but '"'
	// and '\\', no "<|"): inside a string they are always accepted.
	// contentNoBar leaves out those starting with '|', for after a '<'.
	content, contentNoBar []uint64
}

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
	words := (len(tokens) + 63) / 64
	v.content, v.contentNoBar = make([]uint64, words), make([]uint64, words)
	var all, quoted []int32
	for id, b := range tokens {
		if _, isSpecial := v.bySpec[id]; isSpecial || len(b) == 0 {
			continue
		}
		v.tokens[id] = b
		v.maxLen = max(v.maxLen, len(b))
		all = append(all, int32(id))
		switch {
		case bytes.ContainsAny(b, "\"\\"):
			quoted = append(quoted, int32(id))
		case isContent(b):
			v.content[id>>6] |= 1 << (id & 63)
			if b[0] != '|' {
				v.contentNoBar[id>>6] |= 1 << (id & 63)
			}
		}
	}
	v.all = buildVocabTrie(v.tokens, all)
	v.quoted = buildVocabTrie(v.tokens, quoted)
	return v, nil
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
