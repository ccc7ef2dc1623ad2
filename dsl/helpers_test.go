package dsl

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg/data/cruxeval"
)

// awkwardRunes are code points that stress escaping: quotes, backslashes,
// controls, DEL, the edges of the surrogate range, BOM, line separators,
// the BMP's and Unicode's last code points.
var awkwardRunes = []rune{
	'"', '\\', '/', '\'', '\n', '\r', '\t', '\b', '\f', 0, 1, 0x1f, 0x7f, 0x80, 0xe9, 0xff,
	0x2028, 0x2029, 0xd7ff, 0xe000, 0xfeff, 0xfffd, 0xffff, 0x10000, 0x1f600, 0x10ffff, '<', '|', '>',
}

// randRune draws a code point from a mix of ASCII, awkward ones, the BMP
// and the astral planes (never a surrogate: Go strings hold only scalars).
func randRune(r *rand.Rand) rune {
	switch r.IntN(6) {
	case 0, 1:
		return rune(0x20 + r.IntN(0x5f))
	case 2:
		return awkwardRunes[r.IntN(len(awkwardRunes))]
	case 3:
		return rune(r.IntN(0x20))
	case 4:
		for {
			c := rune(r.IntN(0x10000))
			if c < 0xd800 || c > 0xdfff {
				return c
			}
		}
	default:
		return rune(0x10000 + r.IntN(0x100000))
	}
}

// randString returns a string of up to max code points.
func randString(r *rand.Rand, max int) string {
	var b strings.Builder
	n := r.IntN(max + 1)
	for range n {
		b.WriteRune(randRune(r))
	}
	return b.String()
}

// python3 returns the path of python3, skipping the test without one.
func python3(t testing.TB) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	return py
}

// runPython runs a Python script with stdin and returns its stdout.
func runPython(t testing.TB, script string, stdin []byte) []byte {
	t.Helper()
	cmd := exec.Command(python3(t), "-c", script)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	require.NoError(t, cmd.Run(), "python3: %s", errb.String())
	return out.Bytes()
}

// packStrings frames strings for Python's readStrings: a little-endian
// uint32 length and the UTF-8 bytes of each.
func packStrings(ss []string) []byte {
	var b bytes.Buffer
	for _, s := range ss {
		_ = binary.Write(&b, binary.LittleEndian, uint32(len(s)))
		b.WriteString(s)
	}
	return b.Bytes()
}

// pyReadStrings is the Python side of packStrings.
const pyReadStrings = `
import sys, struct
def read_strings():
    data = sys.stdin.buffer.read()
    out, i = [], 0
    while i < len(data):
        (n,) = struct.unpack_from('<I', data, i)
        out.append(data[i+4:i+4+n].decode('utf-8'))
        i += 4 + n
    return out
`

// cruxevalDev returns CRUXEval's development split (package data/cruxeval).
func cruxevalDev(t testing.TB) []cruxeval.Item {
	t.Helper()
	items, err := cruxeval.Dev()
	require.NoError(t, err)
	return items
}

// cruxevalCodes returns the programs of cruxevalDev.
func cruxevalCodes(t testing.TB) []string {
	var codes []string
	for _, it := range cruxevalDev(t) {
		codes = append(codes, it.Code)
	}
	return codes
}
