package tokenizer

import "unicode/utf8"

// validPrefix returns the length of the longest prefix of b that is a
// proper prefix of some valid UTF-8 sequence or a whole one, given that b[0]
// is a lead byte: the "maximal subpart" of the Unicode standard. complete
// reports whether that prefix is a whole character.
func validPrefix(b []byte) (n int, complete bool) {
	c := b[0]
	var need int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c < 0x80:
		return 1, true
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		need = 2
	case c == 0xED:
		need, hi = 2, 0x9F
	case c == 0xF0:
		need, lo = 3, 0x90
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	case c == 0xF4:
		need, hi = 3, 0x8F
	default:
		return 0, false // not a lead byte
	}
	n = 1
	for k := 0; k < need; k++ {
		if n >= len(b) {
			return n, false
		}
		x := b[n]
		if x < lo || x > hi {
			return n, false
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	return n, true
}

// appendLossy appends b to dst as valid UTF-8, replacing each maximal
// invalid subpart with U+FFFD, like Rust's String::from_utf8_lossy (what
// Hugging Face's ByteLevel decoder uses).
func appendLossy(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			dst = append(dst, b[i])
			i++
			continue
		}
		n, ok := validPrefix(b[i:])
		if ok {
			dst = append(dst, b[i:i+n]...)
			i += n
			continue
		}
		dst = utf8.AppendRune(dst, utf8.RuneError)
		i += max(n, 1)
	}
	return dst
}

// StreamDecoder turns ids into text as they arrive, emitting only valid
// UTF-8: bytes that may still become a character are held back until the
// next token completes them or shows they are invalid (then they become
// U+FFFD). The concatenation of all Next results and Flush equals Decode of
// all ids. It is not safe for concurrent use.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte
}

// NewStreamDecoder returns a streaming decoder for t.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return &StreamDecoder{t: t}
}

// Next adds one token and returns the text that became final, possibly "".
func (d *StreamDecoder) Next(id int) string {
	d.pending = append(d.pending, d.t.TokenBytes(id)...)
	// Find where an incomplete but still valid trailing sequence starts.
	keep := len(d.pending)
	for i := len(d.pending) - 1; i >= 0 && i >= len(d.pending)-3; i-- {
		c := d.pending[i]
		if c >= 0x80 && c < 0xC0 {
			continue // continuation byte: look further back for its lead
		}
		if c >= 0xC0 {
			if n, ok := validPrefix(d.pending[i:]); !ok && i+n == len(d.pending) {
				keep = i
			}
		}
		break
	}
	out := string(appendLossy(nil, d.pending[:keep]))
	d.pending = append(d.pending[:0], d.pending[keep:]...)
	return out
}

// Flush returns what is held back (as U+FFFD, since it can no longer be
// completed) and resets the decoder.
func (d *StreamDecoder) Flush() string {
	out := string(appendLossy(nil, d.pending))
	d.pending = d.pending[:0]
	return out
}
