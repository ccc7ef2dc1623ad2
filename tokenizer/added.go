package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// matcher finds added tokens in text with the leftmost-longest,
// non-overlapping semantics of Hugging Face's Aho-Corasick automaton, then
// applies each token's single_word, lstrip and rstrip options.
type matcher struct {
	nodes  []trieNode // nodes[0] is the root
	first  [256]bool  // bytes that can start a token
	tokens []AddedToken
}

// trieNode is a node of a byte trie; children are few, so a linear scan
// of keys beats a map.
type trieNode struct {
	keys  []byte
	kids  []int32 // indexes into matcher.nodes
	token int     // index into tokens, -1 when no token ends here
}

func newMatcher(tokens []AddedToken) *matcher {
	m := &matcher{nodes: []trieNode{{token: -1}}, tokens: tokens}
	for i, tok := range tokens {
		n := int32(0)
		for j := 0; j < len(tok.Content); j++ {
			c := tok.Content[j]
			child := m.child(n, c)
			if child < 0 {
				child = int32(len(m.nodes))
				m.nodes = append(m.nodes, trieNode{token: -1})
				m.nodes[n].keys = append(m.nodes[n].keys, c)
				m.nodes[n].kids = append(m.nodes[n].kids, child)
			}
			n = child
		}
		if m.nodes[n].token < 0 { // first definition wins on duplicate content
			m.nodes[n].token = i
		}
		m.first[tok.Content[0]] = true
	}
	return m
}

// child returns the child of node n along byte c, or -1.
func (m *matcher) child(n int32, c byte) int32 {
	nd := &m.nodes[n]
	for k, key := range nd.keys {
		if key == c {
			return nd.kids[k]
		}
	}
	return -1
}

// longestAt returns the index of the longest token starting at s[i:] and
// its end, or -1.
func (m *matcher) longestAt(s string, i int) (tok, end int) {
	tok, end = -1, i
	n := int32(0)
	for j := i; j < len(s); j++ {
		n = m.child(n, s[j])
		if n < 0 {
			break
		}
		if t := m.nodes[n].token; t >= 0 {
			tok, end = t, j+1
		}
	}
	return tok, end
}

// split calls emit for each piece of s in order: a piece of plain text with
// id -1, or an added token with its id. Empty plain pieces are not emitted,
// except that an empty s is emitted once as plain text. With skipSpecial,
// special tokens are left in the text (HF's encode_special_tokens).
func (m *matcher) split(s string, skipSpecial bool, emit func(piece string, id int)) {
	if len(m.tokens) == 0 || s == "" {
		emit(s, -1)
		return
	}
	startOffset := 0
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		k, stop := m.longestAt(s, i)
		if k < 0 {
			i++
			continue
		}
		start := i
		i = stop // the automaton resumes after the raw match
		tok := &m.tokens[k]
		if skipSpecial && tok.Special {
			continue
		}
		if tok.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				continue
			}
		}
		if tok.LStrip {
			start = max(leftmostSpaceAtEnd(s[:start]), startOffset)
		}
		if tok.RStrip {
			stop += rightmostSpaceAtStart(s[stop:])
		}
		if startOffset < start {
			emit(s[startOffset:start], -1)
		}
		emit(s[start:stop], tok.ID)
		startOffset = stop
		if i < stop {
			i = stop
		}
	}
	if startOffset < len(s) {
		emit(s[startOffset:], -1)
	}
}

// leftmostSpaceAtEnd returns where the trailing whitespace of s starts.
func leftmostSpaceAtEnd(s string) int {
	i := len(s)
	for i > 0 {
		r, w := utf8.DecodeLastRuneInString(s[:i])
		if !unicode.IsSpace(r) {
			break
		}
		i -= w
	}
	return i
}

// rightmostSpaceAtStart returns the length of the leading whitespace of s.
func rightmostSpaceAtStart(s string) int {
	i := 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += w
	}
	return i
}
