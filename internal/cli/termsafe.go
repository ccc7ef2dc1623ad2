package cli

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"
)

// TerminalSafe returns a writer that passes text on to w with every
// character a terminal could act on escaped as Python's repr escapes it:
// control characters (ESC, BEL, carriage return as \r, backspace, the C1 range
// that some terminals read as CSI) and other non-printing characters
// (bidirectional overrides, zero-width ones) become \xNN, \uNNNN or
// \UNNNNNNNN, and bytes that are not UTF-8 become \xNN; newline and tab stay.
// A program's output and the reprs its objects make (a __repr__ may return
// anything) reach the user's terminal through it, so neither can set the
// window title, write the clipboard (OSC 52) or redraw what the user sees.
// A character split across writes is held until its end arrives. Not safe
// for concurrent use.
func TerminalSafe(w io.Writer) io.Writer { return &terminalSafe{w: w} }

type terminalSafe struct {
	w       io.Writer
	pending []byte // the start of a UTF-8 sequence that a later write ends
}

func (t *terminalSafe) Write(p []byte) (int, error) {
	data := p
	if len(t.pending) > 0 {
		data = append(t.pending, p...)
		t.pending = nil
	}
	var b strings.Builder
	for len(data) > 0 {
		r, size := utf8.DecodeRune(data)
		if r == utf8.RuneError && size <= 1 {
			if !utf8.FullRune(data) && len(data) < utf8.UTFMax {
				t.pending = append([]byte(nil), data...) // wait for the rest
				break
			}
			fmt.Fprintf(&b, `\x%02x`, data[0])
			data = data[1:]
			continue
		}
		b.WriteString(escapeRune(r))
		data = data[size:]
	}
	if _, err := io.WriteString(t.w, b.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escapeRune returns r as it is, or as repr escapes it when it does not
// print (unicode.IsPrint, which like Python's str.isprintable leaves out
// the control, format and separator characters but the ASCII space).
func escapeRune(r rune) string {
	switch {
	case r == '\n' || r == '\t' || unicode.IsPrint(r):
		return string(r)
	case r == '\r':
		return `\r`
	case r < 0x100:
		return fmt.Sprintf(`\x%02x`, r)
	case r < 0x10000:
		return fmt.Sprintf(`\u%04x`, r)
	}
	return fmt.Sprintf(`\U%08x`, r)
}
