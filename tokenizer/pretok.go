package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// Character classes used by the pre-tokenizer patterns: \p{L}, \p{N}, \s and
// everything else.
const (
	clOther uint8 = iota
	clLetter
	clNumber
	clSpace
)

// asciiClass classifies ASCII bytes without touching the unicode tables.
var asciiClass = func() (t [128]uint8) {
	for b := 0; b < 128; b++ {
		switch {
		case b >= 'a' && b <= 'z', b >= 'A' && b <= 'Z':
			t[b] = clLetter
		case b >= '0' && b <= '9':
			t[b] = clNumber
		case b == ' ', b >= '\t' && b <= '\r':
			t[b] = clSpace
		default:
			t[b] = clOther
		}
	}
	return t
}()

// classAt returns the class of the rune at s[i] and its width in bytes.
// Invalid UTF-8 (impossible for Go strings coming from valid text, possible
// in fuzzing) counts as one byte of class other. The ASCII path inlines.
func classAt(s string, i int) (uint8, int) {
	if c := s[i]; c < utf8.RuneSelf {
		return asciiClass[c], 1
	}
	return classAtSlow(s, i)
}

func classAtSlow(s string, i int) (uint8, int) {
	r, w := utf8.DecodeRuneInString(s[i:])
	return runeClass(r), w
}

// runeClass classifies a rune with the tables of the Hugging Face library's
// regex engine (unicode_tables.go), which is at a newer Unicode version than
// Go's unicode package.
func runeClass(r rune) uint8 {
	switch {
	case unicode.Is(tableL, r):
		return clLetter
	case unicode.Is(tableN, r):
		return clNumber
	case unicode.Is(tableS, r):
		return clSpace
	}
	return clOther
}

// runOf returns the end of the run of runes of class cl starting at i.
func runOf(s string, i int, cl uint8) int {
	for i < len(s) {
		if c := s[i]; c < utf8.RuneSelf {
			if asciiClass[c] != cl {
				break
			}
			i++
			continue
		}
		c, w := classAtSlow(s, i)
		if c != cl {
			break
		}
		i += w
	}
	return i
}

// spaceRun scans the whitespace run starting at i. It returns its end, the
// start of its last rune and the position just after its last \r or \n
// (0 when it has none).
func spaceRun(s string, i int) (end, lastStart, afterNL int) {
	end = i
	for end < len(s) {
		c, w := classAt(s, end)
		if c != clSpace {
			break
		}
		if s[end] == '\r' || s[end] == '\n' {
			afterNL = end + 1
		}
		lastStart = end
		end += w
	}
	return end, lastStart, afterNL
}

// spaceTail implements `\s+(?!\S)|\s+` for a whitespace run [i,end) whose
// last rune starts at lastStart: the run minus its last rune when a
// non-space follows and the run has more than one rune, else the whole run.
func spaceTail(s string, i, end, lastStart int) int {
	if end < len(s) && lastStart > i {
		return lastStart
	}
	return end
}

// gpt2Next returns the end of the pre-token starting at i (i < len(s)) for
// GPT-2's pattern, with the leftmost-first semantics of a backtracking
// engine:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
func gpt2Next(s string, i int) int {
	c := s[i]
	if c == '\'' && i+1 < len(s) {
		switch s[i+1] {
		case 's', 't', 'm', 'd':
			return i + 2
		case 'r', 'v':
			if i+2 < len(s) && s[i+2] == 'e' {
				return i + 3
			}
		case 'l':
			if i+2 < len(s) && s[i+2] == 'l' {
				return i + 3
			}
		}
	}
	j := i
	if c == ' ' && i+1 < len(s) {
		if cl, _ := classAt(s, i+1); cl != clSpace {
			j = i + 1
		}
	}
	cl, _ := classAt(s, j)
	if cl != clSpace {
		return runOf(s, j, cl)
	}
	end, lastStart, _ := spaceRun(s, i)
	return spaceTail(s, i, end, lastStart)
}

// llama3Next returns the end of the pre-token starting at i for the
// Llama-3 pattern, with leftmost-first semantics:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func llama3Next(s string, i int) int {
	c := s[i]
	if c == '\'' && i+1 < len(s) {
		if n := contractionCI(s, i+1); n > 0 {
			return i + 1 + n
		}
	}
	cl, w := classAt(s, i)
	switch cl {
	case clLetter:
		return runOf(s, i, clLetter)
	case clNumber:
		j := i
		for k := 0; k < 3 && j < len(s); k++ {
			c2, w2 := classAt(s, j)
			if c2 != clNumber {
				break
			}
			j += w2
		}
		return j
	}
	// [^\r\n\p{L}\p{N}]\p{L}+
	if c != '\r' && c != '\n' && i+w < len(s) {
		if c2, _ := classAt(s, i+w); c2 == clLetter {
			return runOf(s, i+w, clLetter)
		}
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	j := i
	if c == ' ' && i+1 < len(s) {
		if c2, _ := classAt(s, i+1); c2 == clOther {
			j = i + 1
		}
	}
	if c2, _ := classAt(s, j); c2 == clOther {
		k := runOf(s, j, clOther)
		for k < len(s) && (s[k] == '\r' || s[k] == '\n') {
			k++
		}
		return k
	}
	end, lastStart, afterNL := spaceRun(s, i)
	if afterNL > 0 {
		return afterNL // \s*[\r\n]+
	}
	return spaceTail(s, i, end, lastStart)
}

// contractionCI matches s|t|re|ve|m|ll|d case-insensitively (with Unicode
// simple case folding, as Oniguruma does: U+017F LATIN SMALL LETTER LONG S
// folds to s) at s[i:], returning the matched length or 0.
func contractionCI(s string, i int) int {
	r, w := utf8.DecodeRuneInString(s[i:])
	switch fold(r) {
	case 's', 't', 'm', 'd':
		return w
	case 'r', 'v':
		if i+w < len(s) {
			if r2, w2 := utf8.DecodeRuneInString(s[i+w:]); fold(r2) == 'e' {
				return w + w2
			}
		}
	case 'l':
		if i+w < len(s) {
			if r2, w2 := utf8.DecodeRuneInString(s[i+w:]); fold(r2) == 'l' {
				return w + w2
			}
		}
	}
	return 0
}

// fold maps a rune to the lower-case ASCII letter it case-folds to, or
// returns it unchanged.
func fold(r rune) rune {
	switch {
	case r >= 'A' && r <= 'Z':
		return r + ('a' - 'A')
	case r == 0x17F: // ſ folds to s
		return 's'
	}
	return r
}

// pattern identifies a supported Split/ByteLevel regex.
type pattern int

const (
	patGPT2 pattern = iota + 1
	patLlama3
)

const (
	gpt2Regex   = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	llama3Regex = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

func (p pattern) next(s string, i int) int {
	if p == patLlama3 {
		return llama3Next(s, i)
	}
	return gpt2Next(s, i)
}
