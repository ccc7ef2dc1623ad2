package tokenizer

// byteLevel holds the GPT-2 byte-to-unicode table used by the ByteLevel
// pre-tokenizer and decoder: every byte maps to a printable rune so that
// vocabulary entries are valid JSON strings. It is immutable after
// construction.
type byteLevel struct {
	byteToRune [256]rune
	runeToByte [324]int16 // -1 for runes outside the table; all are below U+0144
}

// newByteLevel builds the bytes_to_unicode table of GPT-2 (and of Hugging
// Face tokenizers): printable Latin-1 bytes map to themselves, the other
// bytes to U+0100 upwards in byte order.
func newByteLevel() *byteLevel {
	bl := &byteLevel{}
	for i := range bl.runeToByte {
		bl.runeToByte[i] = -1
	}
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		r := rune(b)
		if !printable {
			r = rune(256 + n)
			n++
		}
		bl.byteToRune[b] = r
		bl.runeToByte[r] = int16(b)
	}
	return bl
}

// decodeToken maps a byte-level token string back to raw bytes. ok is false
// when some rune is outside the table (HF then keeps the token's UTF-8
// bytes as they are).
func (bl *byteLevel) decodeToken(s string) (raw []byte, ok bool) {
	raw = make([]byte, 0, len(s))
	for _, r := range s {
		if r < 0 || int(r) >= len(bl.runeToByte) || bl.runeToByte[r] < 0 {
			return []byte(s), false
		}
		raw = append(raw, byte(bl.runeToByte[r]))
	}
	return raw, true
}

// encodeBytes maps raw bytes to their byte-level string form.
func (bl *byteLevel) encodeBytes(raw []byte) string {
	rs := make([]rune, len(raw))
	for i, b := range raw {
		rs[i] = bl.byteToRune[b]
	}
	return string(rs)
}
