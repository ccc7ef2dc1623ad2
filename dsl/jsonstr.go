package dsl

import (
	"errors"
	"unicode/utf8"
)

// This file writes and reads JSON strings exactly as CPython's json.dumps
// writes them with default settings (ensure_ascii=True): printable ASCII as
// is, except '"' and '\\'; the short escapes \" \\ \n \r \t \b \f; every
// other code point as \uXXXX with lowercase hex, astral ones as a surrogate
// pair. The reader accepts only that canonical form.

const hexDigits = "0123456789abcdef"

// errInvalidUTF8 is returned for content that is not valid UTF-8: it cannot
// be a Python str.
var errInvalidUTF8 = errors.New("invalid UTF-8")

// plainASCII[b] is true for the bytes json.dumps writes unescaped.
var plainASCII = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// appendJSONString appends s as a Python-json string literal, quotes
// included. It fails only for invalid UTF-8.
func appendJSONString(dst []byte, s string) ([]byte, error) {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if plainASCII[b] {
			i++
			continue
		}
		dst = append(dst, s[start:i]...)
		if b < utf8.RuneSelf {
			switch b {
			case '"':
				dst = append(dst, '\\', '"')
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default: // other control characters and DEL
				dst = appendU4(dst, rune(b))
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return dst, errInvalidUTF8
		}
		if r > 0xffff {
			r -= 0x10000
			dst = appendU4(dst, 0xd800+(r>>10))
			dst = appendU4(dst, 0xdc00+(r&0x3ff))
		} else {
			dst = appendU4(dst, r)
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), nil
}

// appendU4 appends \uXXXX for a code unit below 0x10000.
func appendU4(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u',
		hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

// readU4 reads the four lowercase hex digits of a \u escape at s[i:].
func readU4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// readJSONString reads the canonical Python-json string literal that starts
// at s[i] (its opening quote). It returns the decoded value and the offset
// after the closing quote. A special token inside the literal is an error.
func readJSONString(s string, i int) (string, int, *ParseError) {
	if i >= len(s) || s[i] != '"' {
		return "", i, errAt(s, i, `'"'`)
	}
	i++
	start := i
	// Fast path: no escapes, the value is a substring.
	for i < len(s) && plainASCII[s[i]] {
		if s[i] == '<' && tokenAt(s, i) != tokNone {
			return "", i, errAt(s, i, "string content")
		}
		i++
	}
	if i < len(s) && s[i] == '"' {
		return s[start:i], i + 1, nil
	}
	buf := make([]byte, 0, i-start+16)
	buf = append(buf, s[start:i]...)
	for i < len(s) {
		c := s[i]
		switch {
		case c == '"':
			return string(buf), i + 1, nil
		case plainASCII[c]:
			if c == '<' && tokenAt(s, i) != tokNone {
				return "", i, errAt(s, i, "string content")
			}
			buf = append(buf, c)
			i++
		case c == '\\':
			if i+1 >= len(s) {
				return "", i + 1, errAt(s, i+1, "escape character")
			}
			var short byte
			switch s[i+1] {
			case '"':
				short = '"'
			case '\\':
				short = '\\'
			case 'n':
				short = '\n'
			case 'r':
				short = '\r'
			case 't':
				short = '\t'
			case 'b':
				short = '\b'
			case 'f':
				short = '\f'
			case 'u':
				r, next, perr := readUEscape(s, i)
				if perr != nil {
					return "", next, perr
				}
				buf = utf8.AppendRune(buf, r)
				i = next
				continue
			default:
				return "", i + 1, errAt(s, i+1, `one of "\\bfnrtu`)
			}
			buf = append(buf, short)
			i += 2
		default:
			return "", i, errAt(s, i, "printable ASCII or an escape")
		}
	}
	return "", i, errAt(s, i, `'"'`)
}

// readUEscape reads a canonical \uXXXX escape (or surrogate pair) at s[i:]
// and returns the code point and the offset after it.
func readUEscape(s string, i int) (rune, int, *ParseError) {
	r, ok := readU4(s, i+2)
	if !ok {
		return 0, i + 2, errAt(s, i+2, "four lowercase hex digits")
	}
	switch {
	case r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 0, i, errAt(s, i, "the short escape of a control character")
	case r >= 0x20 && r < 0x7f:
		return 0, i, errAt(s, i, "printable ASCII unescaped")
	case r >= 0xdc00 && r <= 0xdfff:
		return 0, i, errAt(s, i, "a code point (not a lone low surrogate)")
	case r >= 0xd800 && r <= 0xdbff:
		j := i + 6
		if j+1 >= len(s) || s[j] != '\\' || s[j+1] != 'u' {
			return 0, j, errAt(s, j, "a low surrogate escape")
		}
		lo, ok := readU4(s, j+2)
		if !ok || lo < 0xdc00 || lo > 0xdfff {
			return 0, j, errAt(s, j, "a low surrogate escape")
		}
		return 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00), j + 6, nil
	}
	return r, i + 6, nil
}
