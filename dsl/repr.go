package dsl

import (
	"strconv"
	"unicode/utf8"
)

// MaxRepr is the longest repr, in bytes of UTF-8, that a state may carry.
// Longer reprs are cut by TruncateRepr, so one huge value cannot fill a
// model's context.
const MaxRepr = 256

// truncKeep is how many bytes of a too long repr TruncateRepr keeps: it
// leaves room for the marker "...[+N]" within MaxRepr.
const truncKeep = 240

// TruncateRepr bounds a repr to MaxRepr bytes. A longer one is cut to its
// first 240 bytes (fewer when byte 240 falls inside a UTF-8 sequence, which
// is never split) followed by the visible marker "...[+N]", N being the
// number of bytes cut. Reprs of at most MaxRepr bytes are returned as is, so
// TruncateRepr is idempotent. The Python tracer implements the same rule.
func TruncateRepr(s string) string {
	if len(s) <= MaxRepr {
		return s
	}
	cut := truncKeep
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	b := make([]byte, 0, cut+8+3)
	b = append(b, s[:cut]...)
	b = append(b, "...[+"...)
	b = strconv.AppendInt(b, int64(len(s)-cut), 10)
	return string(append(b, ']'))
}
