package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTerminalSafe: what a terminal acts on is escaped as Python's repr
// escapes it; text, newlines, tabs and printable Unicode pass unchanged,
// also when a character is split across writes.
func TestTerminalSafe(t *testing.T) {
	for in, want := range map[string]string{
		"plain text\n\tindented":            "plain text\n\tindented",
		"caf\u00e9 \u4e2d\u6587 \U0001F600": "caf\u00e9 \u4e2d\u6587 \U0001F600",
		"\x1b]0;pwned title\x07":            `\x1b]0;pwned title\x07`,
		"\x1b]52;c;cHduZWQ=\x07":            `\x1b]52;c;cHduZWQ=\x07`, // OSC 52: write the clipboard
		"\x1b[2J\x1b[H":                     `\x1b[2J\x1b[H`,
		"ok\rspoofed":                       `ok\rspoofed`,
		"back\bspace\x7f":                   `back\x08space\x7f`,
		"\u009b31m":                         `\x9b31m`, // C1 CSI
		"abc\u202eevil\u200b":               `abc\u202eevil\u200b`,
		"\xff\xfebad utf-8 \xc3x":           `\xff\xfebad utf-8 \xc3x`,
		"\U000E0001 tag":                    `\U000e0001 tag`,
	} {
		var out bytes.Buffer
		n, err := TerminalSafe(&out).Write([]byte(in))
		require.NoError(t, err)
		assert.Equal(t, len(in), n)
		assert.Equal(t, want, out.String(), "%q", in)
	}

	// A character split across writes is written whole once it ends.
	var out bytes.Buffer
	w := TerminalSafe(&out)
	for _, part := range [][]byte{[]byte("a\xe4"), []byte("\xb8"), []byte("\xad\x1b")} {
		_, err := w.Write(part)
		require.NoError(t, err)
	}
	assert.Equal(t, "a\u4e2d\\x1b", out.String())
}
