package dsl

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckRepr reports whether s can be the repr of a Python value that a
// state may carry: non-empty, at most MaxRepr bytes of valid UTF-8 on one
// line, no DSL special token, no Dots (the DSL's "unchanged" marker), its
// string literals closed and its brackets balanced and matched. It is a
// lexical check, not a parse: it accepts every repr CPython's builtin types
// print ("[1, (2, 'a')]", "{'k': None}", "<object at 0x7f...>",
// "Counter({'a': 1})") and rejects text that cannot be one ("[", "'abc",
// "(1]"), so that an edited value cannot leave a state no program reaches.
func CheckRepr(s string) error {
	if s == "" {
		return errors.New("an empty repr")
	}
	if err := checkContent("repr", s); err != nil {
		return err
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("repr %q is not valid UTF-8", s)
	}
	if strings.ContainsAny(s, "\n\r") {
		return fmt.Errorf("repr %q spans lines (a repr is one line)", s)
	}
	if s == Dots {
		return fmt.Errorf("repr %q is the DSL's unchanged marker", s)
	}
	var open []byte // the closing brackets expected, innermost last
	for i := 0; i < len(s); {
		c := s[i]
		switch c {
		case '"', '\'':
			triple := i+2 < len(s) && s[i+1] == c && s[i+2] == c
			start := i + 1
			if triple {
				start = i + 3
			}
			j, closed := scanString(s, start, c, triple)
			if !closed {
				return fmt.Errorf("repr %q: the string literal at byte %d is not closed", s, i)
			}
			i = j
			continue
		case '(':
			open = append(open, ')')
		case '[':
			open = append(open, ']')
		case '{':
			open = append(open, '}')
		case ')', ']', '}':
			if len(open) == 0 || open[len(open)-1] != c {
				return fmt.Errorf("repr %q: unmatched %q at byte %d", s, c, i)
			}
			open = open[:len(open)-1]
		}
		i++
	}
	if len(open) > 0 {
		return fmt.Errorf("repr %q: %q is missing at the end", s, open[len(open)-1])
	}
	return nil
}
