package trace

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A hand-written strict parser for result lines: encoding/json's reflection
// costs several microseconds per event, as much as tracing it. It accepts a
// subset of what encoding/json (with DisallowUnknownFields) accepts into
// wireResult and yields the same values (FuzzParseResultMatchesJSON checks
// both): exact key names, no duplicate keys, null only where the tracer
// writes it (ret, exc).

type scanner struct {
	data []byte
	pos  int
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, or 0 at the end.
func (s *scanner) peek() byte {
	s.ws()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return s.errorf("want %q", c)
	}
	s.pos++
	return nil
}

// literal consumes word (null, true, false) if it is next.
func (s *scanner) literal(word string) bool {
	s.ws()
	if len(s.data)-s.pos >= len(word) && string(s.data[s.pos:s.pos+len(word)]) == word {
		s.pos += len(word)
		return true
	}
	return false
}

// str parses a JSON string.
func (s *scanner) str() (string, error) {
	if err := s.expect('"'); err != nil {
		return "", err
	}
	start := s.pos
	for i := start; i < len(s.data); i++ {
		switch c := s.data[i]; {
		case c == '"':
			s.pos = i + 1
			return string(s.data[start:i]), nil
		case c == '\\':
			return s.strSlow(start)
		case c < 0x20:
			s.pos = i
			return "", s.errorf("control character in string")
		case c >= 0x80:
			s.pos = i
			return "", s.errorf("non-ASCII byte in string")
		}
	}
	s.pos = len(s.data)
	return "", s.errorf("unterminated string")
}

// strSlow unescapes a string from start (just after its quote), as
// encoding/json does: a lone surrogate becomes U+FFFD.
func (s *scanner) strSlow(start int) (string, error) {
	b := make([]byte, 0, 64)
	i := start
	for i < len(s.data) {
		c := s.data[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return string(b), nil
		case c < 0x20 || c >= 0x80:
			s.pos = i
			return "", s.errorf("control or non-ASCII byte in string")
		case c != '\\':
			b = append(b, c)
			i++
			continue
		}
		if i+1 >= len(s.data) {
			break
		}
		switch e := s.data[i+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := getu4(s.data[i:])
			if r < 0 {
				s.pos = i
				return "", s.errorf("bad \\u escape")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if dec := utf16.DecodeRune(r, getu4(s.data[i:])); dec != unicode.ReplacementChar {
					i += 6
					b = utf8.AppendRune(b, dec)
					continue
				}
				r = unicode.ReplacementChar
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			s.pos = i
			return "", s.errorf("bad escape")
		}
		i += 2
	}
	s.pos = len(s.data)
	return "", s.errorf("unterminated string")
}

// getu4 decodes \uXXXX at the start of b, or returns -1.
func getu4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// integer parses a JSON number that is an integer in int's range.
func (s *scanner) integer() (int, error) {
	s.ws()
	start := s.pos
	if s.pos < len(s.data) && s.data[s.pos] == '-' {
		s.pos++
	}
	digits := s.pos
	for s.pos < len(s.data) && '0' <= s.data[s.pos] && s.data[s.pos] <= '9' {
		s.pos++
	}
	n := s.pos - digits
	if n == 0 || (n > 1 && s.data[digits] == '0') {
		return 0, s.errorf("bad integer")
	}
	if s.pos < len(s.data) {
		if c := s.data[s.pos]; c == '.' || c == 'e' || c == 'E' {
			return 0, s.errorf("not an integer")
		}
	}
	v, err := strconv.Atoi(string(s.data[start:s.pos]))
	if err != nil {
		return 0, s.errorf("integer: %v", err)
	}
	return v, nil
}

func (s *scanner) boolean() (bool, error) {
	switch {
	case s.literal("true"):
		return true, nil
	case s.literal("false"):
		return false, nil
	}
	return false, s.errorf("want a boolean")
}

// object parses {"key": value, ...}, calling field for each key (which must
// consume the value); keys may not repeat.
func (s *scanner) object(field func(key string) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.pos++
		return nil
	}
	var seen []string
	for {
		key, err := s.str()
		if err != nil {
			return err
		}
		for _, k := range seen {
			if k == key {
				return s.errorf("duplicate key %q", key)
			}
		}
		seen = append(seen, key)
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return nil
		default:
			return s.errorf("want , or }")
		}
	}
}

// array parses [elem, ...], calling elem for each element.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.pos++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.pos++
		case ']':
			s.pos++
			return nil
		default:
			return s.errorf("want , or ]")
		}
	}
}

func (s *scanner) strings() ([]string, error) {
	out := make([]string, 0, 8)
	err := s.array(func() error {
		v, err := s.str()
		out = append(out, v)
		return err
	})
	return out, err
}

func (s *scanner) ints() ([]int, error) {
	out := make([]int, 0, 4)
	err := s.array(func() error {
		v, err := s.integer()
		out = append(out, v)
		return err
	})
	return out, err
}

func (s *scanner) event(e *wireEvent) error {
	return s.object(func(key string) (err error) {
		switch key {
		case "e":
			e.E, err = s.integer()
		case "l":
			e.L, err = s.integer()
		case "d":
			e.D, err = s.integer()
		case "f":
			e.F, err = s.integer()
		case "n":
			e.N, err = s.str()
		case "a":
			e.A, err = s.strings()
		case "u":
			e.U, err = s.ints()
		case "r":
			var v string
			v, err = s.str()
			e.R = &v
		case "o":
			var v int
			v, err = s.integer()
			e.O = &v
		case "x":
			var v int
			v, err = s.integer()
			e.X = &v
		default:
			err = s.errorf("unknown event field %q", key)
		}
		return err
	})
}

// parseResult parses a result line into w.
func parseResult(data []byte) (*wireResult, error) {
	s := &scanner{data: data}
	w := &wireResult{}
	err := s.object(func(key string) (err error) {
		switch key {
		case "t":
			w.T, err = s.str()
		case "id":
			w.ID, err = s.integer()
		case "status":
			w.Status, err = s.str()
		case "events":
			w.Events = []wireEvent{}
			err = s.array(func() error {
				w.Events = append(w.Events, wireEvent{})
				return s.event(&w.Events[len(w.Events)-1])
			})
		case "ret":
			if !s.literal("null") {
				var v string
				v, err = s.str()
				w.Ret = &v
			}
		case "exc":
			if !s.literal("null") {
				w.Exc = &wireExc{}
				err = s.object(func(key string) (err error) {
					switch key {
					case "type":
						w.Exc.Type, err = s.str()
					case "msg":
						w.Exc.Msg, err = s.str()
					case "line":
						w.Exc.Line, err = s.integer()
					default:
						err = s.errorf("unknown exc field %q", key)
					}
					return err
				})
			}
		case "stdout":
			var v string
			if v, err = s.str(); err == nil {
				w.Stdout, err = base64.StdEncoding.DecodeString(v)
			}
		case "stdout_trunc":
			w.StdoutTrunc, err = s.boolean()
		case "stderr":
			var v string
			if v, err = s.str(); err == nil {
				w.Stderr, err = base64.StdEncoding.DecodeString(v)
			}
		case "stderr_trunc":
			w.StderrTrunc, err = s.boolean()
		case "msg":
			w.Msg, err = s.str()
		case "line":
			w.Line, err = s.integer()
		case "retire":
			w.Retire, err = s.boolean()
		default:
			err = s.errorf("unknown field %q", key)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if s.peek() != 0 || s.pos != len(s.data) {
		return nil, errors.New("trailing data after the JSON value")
	}
	return w, nil
}
