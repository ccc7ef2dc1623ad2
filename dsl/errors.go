package dsl

import (
	"fmt"
	"strconv"
)

// ParseError says where and why a text is not in the DSL.
type ParseError struct {
	Offset   int    // byte offset in the parsed text
	Expected string // what the grammar allows there
	Found    string // what is there: an excerpt, a token, or "end of input"
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("dsl: parse error at byte %d: expected %s, found %s", e.Offset, e.Expected, e.Found)
}

// errAt builds a ParseError at offset i of s, quoting what is found there.
func errAt(s string, i int, expected string) *ParseError {
	return &ParseError{Offset: i, Expected: expected, Found: describeAt(s, i)}
}

// describeAt quotes a short excerpt of s at i for error messages: the
// special token there, or up to 24 bytes.
func describeAt(s string, i int) string {
	if i >= len(s) {
		return "end of input"
	}
	if t := tokenAt(s, i); t != tokNone {
		return specialTokens[t].Text
	}
	end := min(len(s), i+24)
	if j := specialIndex(s[i:end]); j > 0 {
		end = i + j
	}
	return strconv.Quote(s[i:end])
}
