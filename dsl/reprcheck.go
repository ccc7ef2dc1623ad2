package dsl

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// CheckRepr reports whether s can be the repr of a Python value that a
// state may carry: non-empty, at most MaxRepr bytes of valid UTF-8 on one
// line, no DSL special token, and in the repr grammar (reprgrammar.go):
// a literal of a built-in type (numbers, inf and nan, strings and bytes
// with closed quotes and valid escapes, containers with balanced
// brackets, set(), 1-tuples), a name such as None or re.IGNORECASE, a call
// form such as Counter({'a': 1}) or ValueError('x'), one of CPython's <...>
// forms ("<function f at 0x...>", "<class '__main__.C'>"), or a repr
// TruncateRepr cut ("[0, 1, ...[+1234]"). It rejects text that cannot be
// one ("[", "'abc", "(1]", Dots, "x = 1", "acc '"), so that an edited value
// cannot leave a state no program reaches. The constrained decoder lets a
// model write exactly this language (ReprState).
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
	r := ReprStart(false)
	for i, c := range s {
		b := byte(c)
		if c >= utf8.RuneSelf {
			b = ReprNonASCII
		}
		var ok bool
		if r, ok = r.Step(b, i); !ok {
			return fmt.Errorf("repr %q: %s at byte %d", s, unexpected(s[i:]), i)
		}
	}
	if !r.Complete() {
		return fmt.Errorf("repr %q is not complete: %q would end it", s, r.Completion(len(s)))
	}
	return nil
}

// unexpected names the character at the start of rest for an error.
func unexpected(rest string) string {
	r, _ := utf8.DecodeRuneInString(rest)
	return fmt.Sprintf("%q cannot come here", r)
}
