package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func codeTokenizer(t testing.TB, name string) *Tokenizer {
	t.Helper()
	tk, err := Load("testdata/" + name + ".tokenizer.json")
	require.NoError(t, err)
	return tk
}

func TestAPI(t *testing.T) {
	tk := codeTokenizer(t, "code-gpt2")
	assert.Equal(t, 4096, tk.VocabSize())

	id, ok := tk.TokenID("<|frame_sep|>")
	require.True(t, ok)
	assert.Equal(t, 2, id)
	assert.True(t, tk.IsSpecial(id))
	assert.Equal(t, []byte("<|frame_sep|>"), tk.TokenBytes(id))
	assert.Equal(t, id, tk.SpecialTokens()["<|frame_sep|>"])
	assert.Len(t, tk.AddedTokens(), 10)

	selfID, ok := tk.TokenID("Ġself")
	require.True(t, ok)
	assert.Equal(t, []byte(" self"), tk.TokenBytes(selfID))
	assert.Equal(t, "Ġself", tk.TokenString(selfID))
	assert.False(t, tk.IsSpecial(selfID))
	byBytes, ok := tk.BytesID([]byte(" self"))
	require.True(t, ok)
	assert.Equal(t, selfID, byBytes)

	assert.Nil(t, tk.TokenBytes(-1))
	assert.Nil(t, tk.TokenBytes(1<<20))
	assert.Equal(t, "", tk.TokenString(-5))
	_, ok = tk.TokenID("no such token at all")
	assert.False(t, ok)

	// Special tokens are matched before pre-tokenization.
	ids := tk.Encode("<|call_sep|>x = 1<|frame_sep|>")
	assert.Equal(t, 5, ids[0])
	assert.Equal(t, 2, ids[len(ids)-1])
	assert.Equal(t, "<|call_sep|>x = 1<|frame_sep|>", tk.Decode(ids))

	// AppendEncode appends.
	more := tk.AppendEncode([]int{7}, "x")
	assert.Equal(t, append([]int{7}, tk.Encode("x")...), more)
	assert.Empty(t, tk.Encode(""))
}

func TestEveryByteEncodes(t *testing.T) {
	tk := codeTokenizer(t, "code-gpt2")
	for b := 0; b < 256; b++ {
		s := string([]byte{byte(b)})
		ids := tk.Encode(s)
		require.Len(t, ids, 1, "byte %#x", b)
		assert.Equal(t, []byte(s), tk.TokenBytes(ids[0]))
	}
}

func TestDecodeLossy(t *testing.T) {
	tk := codeTokenizer(t, "code-gpt2")
	emoji := tk.Encode("🙂") // 4 bytes, one token per byte here or fewer
	var raw []byte
	for _, id := range emoji {
		raw = append(raw, tk.TokenBytes(id)...)
	}
	require.Equal(t, "🙂", string(raw))
	byteID := func(b byte) int {
		id, ok := tk.BytesID([]byte{b})
		require.True(t, ok)
		return id
	}
	// A truncated 4-byte sequence is one U+FFFD, like Rust's from_utf8_lossy.
	assert.Equal(t, "\uFFFDa", tk.Decode([]int{byteID(0xF0), byteID(0x9F), byteID(0x99), byteID('a')}))
	// An invalid continuation: one U+FFFD per maximal subpart.
	assert.Equal(t, "\uFFFD\uFFFD", tk.Decode([]int{byteID(0xE0), byteID(0x80)}))
	assert.Equal(t, "\uFFFD", tk.Decode([]int{byteID(0xFF)}))
	// Unknown ids are skipped.
	assert.Equal(t, "a", tk.Decode([]int{-1, byteID('a'), 1 << 30}))
}

func TestAppendLossyMatchesGoForValid(t *testing.T) {
	for _, s := range []string{"", "abc", "héllo", "世界", "🙂", "\u0000\u007f\u0080\u07ff\u0800\uffff\U00010000\U0010ffff"} {
		assert.Equal(t, s, string(appendLossy(nil, []byte(s))))
	}
	// Surrogates and overlongs are invalid.
	assert.Equal(t, "\uFFFD\uFFFD\uFFFD", string(appendLossy(nil, []byte{0xED, 0xA0, 0x80})))
	assert.Equal(t, "\uFFFD\uFFFD", string(appendLossy(nil, []byte{0xC0, 0xAF})))
	assert.Equal(t, "\uFFFD", string(appendLossy(nil, []byte{0xF4, 0x8F, 0xBF})))
}

// streamDecode decodes ids one at a time.
func streamDecode(tk *Tokenizer, ids []int) (string, bool) {
	d := tk.NewStreamDecoder()
	var sb strings.Builder
	valid := true
	for _, id := range ids {
		s := d.Next(id)
		valid = valid && utf8.ValidString(s)
		sb.WriteString(s)
	}
	sb.WriteString(d.Flush())
	return sb.String(), valid
}

func TestStreamDecoder(t *testing.T) {
	tk := codeTokenizer(t, "code-llama3")
	var corpus []string
	readJSON(t, "testdata/corpus.json", &corpus)
	for _, text := range corpus {
		ids := tk.Encode(text)
		got, valid := streamDecode(tk, ids)
		assert.True(t, valid)
		assert.Equal(t, tk.Decode(ids), got)
	}
	// Held back until complete: the first three bytes of 🙂 give nothing.
	d := tk.NewStreamDecoder()
	b := []byte("🙂")
	for i := 0; i < 3; i++ {
		id, ok := tk.BytesID(b[i : i+1])
		require.True(t, ok)
		assert.Equal(t, "", d.Next(id))
	}
	id, _ := tk.BytesID(b[3:])
	assert.Equal(t, "🙂", d.Next(id))
	// Incomplete at the end: Flush gives U+FFFD.
	id, _ = tk.BytesID(b[:1])
	assert.Equal(t, "", d.Next(id))
	assert.Equal(t, "\uFFFD", d.Flush())
	assert.Equal(t, "", d.Flush())
}

func TestEncodeConcurrent(t *testing.T) {
	tk := codeTokenizer(t, "code-gpt2")
	var corpus []string
	readJSON(t, "testdata/corpus.json", &corpus)
	want := make([][]int, len(corpus))
	for i, s := range corpus {
		want[i] = tk.Encode(s)
	}
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range corpus {
				j := (i*7 + g*13) % len(corpus)
				assert.Equal(t, want[j], tk.Encode(corpus[j]))
			}
		}()
	}
	wg.Wait()
}

func TestBPELongMatchesShort(t *testing.T) {
	tk := codeTokenizer(t, "code-gpt2")
	for _, w := range []string{strings.Repeat(" ", 200), strings.Repeat("ab", 70), strings.Repeat("self.", 40),
		strings.Repeat("é", 65), "x" + strings.Repeat("0123456789", 10)} {
		syms := make([]int32, len(w))
		for i := range syms {
			syms[i] = tk.byteID[w[i]]
		}
		long := tk.bpeLong(append([]int32(nil), syms...))
		// The quadratic loop, forced.
		short := append([]int32(nil), syms...)
		for len(short) > 1 {
			best, pos := mergeRule{rank: 1 << 30}, -1
			for i := 0; i+1 < len(short); i++ {
				if r, ok := tk.merges[pairKey(short[i], short[i+1])]; ok && r.rank < best.rank {
					best, pos = r, i
				}
			}
			if pos < 0 {
				break
			}
			short[pos] = best.id
			short = append(short[:pos+1], short[pos+2:]...)
		}
		assert.Equal(t, short, long, "%q", w)
	}
}

func TestParseErrors(t *testing.T) {
	base, err := os.ReadFile("testdata/code-gpt2.tokenizer.json")
	require.NoError(t, err)
	replace := func(old, new string) []byte {
		require.Contains(t, string(base), old)
		return []byte(strings.Replace(string(base), old, new, 1))
	}
	cases := []struct {
		data []byte
		want string
	}{
		{[]byte("{"), "tokenizer.json"},
		{replace(`"type":"BPE"`, `"type":"WordPiece"`), "model.type"},
		{replace(`"normalizer":null`, `"normalizer":{"type":"NFC"}`), "normalizer.type"},
		{replace(`"pre_tokenizer":{"type":"ByteLevel"`, `"pre_tokenizer":{"type":"Metaspace"`), "pre_tokenizer.type"},
		{replace(`"decoder":{"type":"ByteLevel"`, `"decoder":{"type":"WordPiece"`), "decoder.type"},
		{replace(`"byte_fallback":false`, `"byte_fallback":true`), "model.byte_fallback"},
		{replace(`"dropout":null`, `"dropout":0.1`), "model.dropout"},
		{replace(`"merges":[["Ġ","Ġ"]`, `"merges":[["Ġ","Ġ","x"]`), "model.merges[0]"},
		{replace(`"merges":[["Ġ","Ġ"]`, `"merges":[["Ġ","zzzz"]`), "model.merges[0]"},
		{replace(`"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}`,
			`"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\w+"},"behavior":"Isolated","invert":false}`), "pre_tokenizer.pattern.Regex"},
		{replace(`"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}`,
			`"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Digits"}]}`), "pre_tokenizer.pretokenizers[0].type"},
		{replace(`"content":"<|begin_of_text|>"`, `"content":""`), "added_tokens[0]"},
	}
	for _, c := range cases {
		_, err := Parse(c.data)
		require.Error(t, err)
		assert.Contains(t, err.Error(), c.want)
	}
	_, err = Load("testdata/does-not-exist.json")
	assert.Error(t, err)
}

func TestParseLegacyMerges(t *testing.T) {
	base, err := os.ReadFile("testdata/code-gpt2.tokenizer.json")
	require.NoError(t, err)
	var j map[string]any
	require.NoError(t, json.Unmarshal(base, &j))
	model := j["model"].(map[string]any)
	pairs := model["merges"].([]any)
	legacy := make([]string, len(pairs))
	for i, p := range pairs {
		pp := p.([]any)
		legacy[i] = pp[0].(string) + " " + pp[1].(string)
	}
	model["merges"] = legacy
	data, err := json.Marshal(j)
	require.NoError(t, err)
	tk2, err := Parse(data)
	require.NoError(t, err)
	tk := codeTokenizer(t, "code-gpt2")
	text := "def f(self, x):\n    return self.x + 'héllo' # 世界\n"
	assert.Equal(t, tk.Encode(text), tk2.Encode(text))
	assert.Len(t, tk2.merges, len(pairs))
}

func FuzzEncodeRoundTrip(f *testing.F) {
	tks := []*Tokenizer{codeTokenizer(f, "code-gpt2"), codeTokenizer(f, "code-llama3")}
	opts, err := Load("testdata/code-options.tokenizer.json")
	require.NoError(f, err)
	for _, s := range []string{"", "def f(x):\n    return x", "<|frame_sep|> x", "héllo 世界 🙂 'S 'll",
		"  \n\n\t ", "1234567", "\xff\xfe", "e\u0301\u0300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 1<<12 {
			t.Skip("long inputs are covered by TestBPELongMatchesShort; keep the fuzzer fast")
		}
		for _, tk := range tks {
			ids := tk.Encode(s)
			for _, id := range ids {
				require.True(t, id >= 0 && id < tk.VocabSize())
			}
			want := string(appendLossy(nil, []byte(s)))
			require.Equal(t, want, tk.Decode(ids))
			got, valid := streamDecode(tk, ids)
			require.True(t, valid)
			require.Equal(t, want, got)
		}
		opts.Encode(s) // must not panic
	})
}

func FuzzParse(f *testing.F) {
	base, err := os.ReadFile("testdata/code-gpt2.tokenizer.json")
	require.NoError(f, err)
	f.Add([]byte(`{"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]},"pre_tokenizer":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"}}`))
	f.Add([]byte(`{"added_tokens":[{"id":5,"content":"<x>","lstrip":true,"rstrip":true,"single_word":true}],"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"` +
		strings.ReplaceAll(llama3Regex, `\`, `\\`) + `"},"behavior":"Isolated"},{"type":"ByteLevel","add_prefix_space":true,"use_regex":false}]},"decoder":{"type":"ByteLevel"}}`))
	f.Add(base[:2000])
	f.Fuzz(func(t *testing.T, data []byte) {
		tk, err := Parse(data)
		if err != nil {
			return
		}
		for _, s := range []string{"a <x> ab", "hello world 12 'll\n\n", "\xff"} {
			ids := tk.Encode(s)
			for _, id := range ids {
				require.True(t, id >= 0 && id < tk.VocabSize())
			}
			tk.Decode(ids)
		}
	})
}

// TestUnicodeTables checks the generated tables against Go's (Unicode
// 15.0): the library's sets may only add code points assigned since.
func TestUnicodeTables(t *testing.T) {
	added := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		inL, inN, inS := unicode.Is(tableL, r), unicode.Is(tableN, r), unicode.Is(tableS, r)
		if unicode.IsLetter(r) {
			require.True(t, inL, "%U", r)
		}
		if unicode.IsNumber(r) {
			require.True(t, inN, "%U", r)
		}
		require.Equal(t, unicode.IsSpace(r), inS, "%U", r)
		if (inL && !unicode.IsLetter(r)) || (inN && !unicode.IsNumber(r)) {
			added++
		}
		if r < 128 {
			c, _ := classAt(string(r), 0)
			require.Equal(t, runeClass(r), c, "%U", r)
		}
	}
	assert.Positive(t, added)
	assert.Less(t, added, 10000)
	t.Logf("%d code points are letters or numbers for the library but not for Go", added)
}

func TestEncodeOrdinary(t *testing.T) {
	tk := codeTokenizer(t, "code-gpt2")
	text := "s = '<|frame_sep|>'"
	ids := tk.EncodeOrdinary(text)
	frame, _ := tk.TokenID("<|frame_sep|>")
	assert.NotContains(t, ids, frame)
	assert.Contains(t, tk.Encode(text), frame)
	assert.Equal(t, text, tk.Decode(ids))

	// Non-special added tokens are still matched.
	opts := codeTokenizer(t, "code-options")
	todo, ok := opts.TokenID("TODO")
	require.True(t, ok)
	assert.Contains(t, opts.EncodeOrdinary("x TODO <|lstrip|>"), todo)
	lstrip, _ := opts.TokenID("<|lstrip|>")
	assert.NotContains(t, opts.EncodeOrdinary("x TODO <|lstrip|>"), lstrip)
}

// CheckModel refuses a tokenizer that is not the model's: more tokens than
// the embedding has rows, or the config's BOS/EOS ids not special tokens.
func TestCheckModel(t *testing.T) {
	tok, err := Load("testdata/code-gpt2.tokenizer.json")
	require.NoError(t, err)
	n := tok.VocabSize()
	bos, eos := tok.SpecialTokens()["<|begin_of_text|>"], tok.SpecialTokens()["<|end_of_text|>"]
	require.NoError(t, tok.CheckModel(n, &bos, []int{eos}))
	require.NoError(t, tok.CheckModel(n+64, nil, nil), "a model may have more rows (padding) than tokens")
	assert.ErrorContains(t, tok.CheckModel(n-1, nil, nil), fmt.Sprintf("tokenizer.json has %d tokens, but the model's embedding has %d rows", n, n-1))
	other := 100
	assert.ErrorContains(t, tok.CheckModel(n, &other, nil), "config.json's bos_token_id is 100, which in tokenizer.json is the ordinary token")
	assert.ErrorContains(t, tok.CheckModel(n+10, nil, []int{eos, n + 5}), fmt.Sprintf("eos_token_id is %d, which in tokenizer.json is no token", n+5))
}
