// Package tokenizer is a byte-level BPE tokenizer that reads Hugging Face
// tokenizer.json files (GPT-2 style and Llama-3 style) and produces the same
// ids as the Hugging Face tokenizers library.
//
// Encode matches added tokens (special tokens such as <|begin_of_text|>)
// in the raw text first, as Hugging Face does, then pre-tokenizes the rest
// with hand-written scanners equivalent to the GPT-2 and Llama-3 regexes,
// and applies BPE merges by rank. It never applies the post_processor:
// it behaves like encode(text, add_special_tokens=False), so callers write
// <|begin_of_text|> themselves. Decode keeps special tokens (like
// skip_special_tokens=False).
//
// Train learns a new byte-level BPE and writes it as tokenizer.json (see
// README.md for the node-based alternative and the conformance tests).
//
// A Tokenizer is safe for concurrent use.
package tokenizer

import (
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"

	"github.com/ndbg/ndbg/internal/regfile"
)

// AddedToken is a token from tokenizer.json's added_tokens, matched in the
// text before pre-tokenization.
type AddedToken struct {
	ID         int
	Content    string
	Special    bool
	SingleWord bool
	LStrip     bool
	RStrip     bool
	Normalized bool
}

// mergeRule is what merging the pair (a, b) produces.
type mergeRule struct {
	rank int32
	id   int32
}

// Tokenizer encodes text to token ids and back. Create it with Load or
// Parse.
type Tokenizer struct {
	vocabSize int
	tokenStr  []string       // id -> token as written in tokenizer.json ("" if unused)
	tokenRaw  [][]byte       // id -> raw bytes it decodes to
	strToID   map[string]int // token string (tokenizer.json form) -> id, added tokens first
	rawToID   map[string]int // raw bytes -> model id, for byte-level lookup
	byteID    [256]int32     // model id of each single byte, -1 when absent
	merges    map[uint64]mergeRule
	unkID     int32 // -1 when the model has no unk_token

	ignoreMerges bool
	steps        []preStep

	added     []AddedToken
	addedByID map[int]int // id -> index in added
	special   []bool      // id -> special
	rawTrie   *matcher    // added tokens with normalized=false
	normTrie  *matcher    // added tokens with normalized=true

	cache *wordCache
}

// MaxFileSize bounds the tokenizer.json that Load (and ndbg.Open) reads:
// Llama-3's is 9 MB, the largest real ones (256k-token vocabularies) about
// 35 MB.
const MaxFileSize = 128 << 20

// Load reads a tokenizer.json file: a regular file (a FIFO or a device is
// refused without blocking) of at most MaxFileSize bytes.
func Load(path string) (*Tokenizer, error) {
	data, err := regfile.Read(path, MaxFileSize)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: load %s: %w", path, err)
	}
	return t, nil
}

// Parse builds a Tokenizer from the contents of a tokenizer.json file.
// Configurations it cannot reproduce exactly are rejected with an error
// naming the field.
func Parse(data []byte) (*Tokenizer, error) {
	var f fileJSON
	if err := jsonUnmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	m := f.Model
	if m.Type != "BPE" && !(m.Type == "" && !isNull(m.Vocab)) {
		return nil, fmt.Errorf("model.type: %q unsupported (only BPE)", m.Type)
	}
	if m.Dropout != nil && *m.Dropout != 0 {
		return nil, fmt.Errorf("model.dropout: %v unsupported", *m.Dropout)
	}
	if m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "" {
		return nil, fmt.Errorf("model.continuing_subword_prefix: %q unsupported", *m.ContinuingSubwordPrefix)
	}
	if m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "" {
		return nil, fmt.Errorf("model.end_of_word_suffix: %q unsupported", *m.EndOfWordSuffix)
	}
	if m.ByteFallback {
		return nil, fmt.Errorf("model.byte_fallback: true unsupported (byte-level BPE needs no fallback)")
	}
	if err := checkNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if err := checkDecoder(f.Decoder); err != nil {
		return nil, err
	}
	steps, err := parsePreTokenizer(f.PreTokenizer)
	if err != nil {
		return nil, err
	}
	vocab, err := parseVocab(m.Vocab)
	if err != nil {
		return nil, err
	}
	merges, err := parseMerges(m.Merges)
	if err != nil {
		return nil, err
	}

	t := &Tokenizer{
		steps:        steps,
		ignoreMerges: m.IgnoreMerges,
		strToID:      make(map[string]int, len(vocab)+len(f.AddedTokens)),
		rawToID:      make(map[string]int, len(vocab)),
		merges:       make(map[uint64]mergeRule, len(merges)),
		addedByID:    make(map[int]int, len(f.AddedTokens)),
		unkID:        -1,
		cache:        newWordCache(),
	}
	for _, e := range vocab {
		if e.id < 0 || e.id >= math.MaxInt32 {
			return nil, fmt.Errorf("model.vocab[%q]: id %d out of range", e.token, e.id)
		}
		t.strToID[e.token] = e.id // a repeated key: the last one wins, as in HF
		t.vocabSize = max(t.vocabSize, e.id+1)
	}
	modelVocab := t.strToID // added tokens join it below
	addedIDs, err := assignAddedIDs(f.AddedTokens, modelVocab)
	if err != nil {
		return nil, err
	}
	for _, id := range addedIDs {
		t.vocabSize = max(t.vocabSize, id+1)
	}
	// Ids index dense tables: refuse absurdly sparse ones (real files are
	// dense) rather than allocate gigabytes for a hostile file.
	if entries := len(modelVocab) + len(f.AddedTokens); t.vocabSize > 4*entries+1024 {
		return nil, fmt.Errorf("model.vocab: ids up to %d for %d tokens are too sparse", t.vocabSize-1, entries)
	}
	t.tokenStr = make([]string, t.vocabSize)
	t.tokenRaw = make([][]byte, t.vocabSize)
	t.special = make([]bool, t.vocabSize)
	for i := range t.byteID {
		t.byteID[i] = -1
	}

	bl := newByteLevel()
	for s, id := range modelVocab {
		raw, ok := bl.decodeToken(s)
		if ok {
			t.rawToID[string(raw)] = id
			if len(raw) == 1 {
				t.byteID[raw[0]] = int32(id)
			}
		}
		// Two strings with one id: keep the smaller, for a deterministic outcome.
		if t.tokenRaw[id] == nil || s < t.tokenStr[id] {
			t.tokenStr[id] = s
			t.tokenRaw[id] = raw
		}
	}
	if m.UnkToken != nil {
		id, ok := modelVocab[*m.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model.unk_token: %q not in vocab", *m.UnkToken)
		}
		t.unkID = int32(id)
	}
	var buf []byte
	for i, mg := range merges {
		a, okA := modelVocab[mg[0]]
		b, okB := modelVocab[mg[1]]
		buf = append(append(buf[:0], mg[0]...), mg[1]...)
		c, okC := modelVocab[string(buf)]
		if !okA || !okB || !okC {
			return nil, fmt.Errorf("model.merges[%d]: %q %q: token or merge result missing from vocab", i, mg[0], mg[1])
		}
		key := pairKey(int32(a), int32(b))
		if _, dup := t.merges[key]; !dup {
			t.merges[key] = mergeRule{rank: int32(i), id: int32(c)}
		}
	}

	var rawTokens, normTokens []AddedToken
	for i, a := range f.AddedTokens {
		id := addedIDs[i]
		if _, dup := t.addedByID[id]; dup {
			continue // same content listed twice: HF keeps the first
		}
		at := AddedToken{ID: id, Content: a.Content, Special: a.Special, SingleWord: a.SingleWord,
			LStrip: a.LStrip, RStrip: a.RStrip, Normalized: a.Normalized}
		t.addedByID[id] = len(t.added)
		t.added = append(t.added, at)
		t.tokenStr[id] = a.Content
		// HF's ByteLevel decoder maps an added token's runes through the byte
		// table when all of them are in it, else keeps its UTF-8 bytes.
		t.tokenRaw[id], _ = bl.decodeToken(a.Content)
		t.strToID[a.Content] = id
		t.special[id] = a.Special
		if a.Normalized {
			normTokens = append(normTokens, at)
		} else {
			rawTokens = append(rawTokens, at)
		}
	}
	t.rawTrie = newMatcher(rawTokens)
	t.normTrie = newMatcher(normTokens)
	return t, nil
}

// assignAddedIDs gives added tokens the ids Hugging Face gives them when it
// loads a tokenizer.json: the "id" fields are not used; a token whose
// content is already known keeps that id, a new one gets the next free id
// after the model vocabulary (AddedVocabulary::add_tokens).
func assignAddedIDs(tokens []addedTokenJSON, vocab map[string]int) ([]int, error) {
	ids := make([]int, len(tokens))
	known := make(map[string]int, len(tokens))
	maxAdded := -1
	for i, a := range tokens {
		if a.Content == "" {
			return nil, fmt.Errorf("added_tokens[%d]: empty content", i)
		}
		id, ok := known[a.Content]
		if !ok {
			id, ok = vocab[a.Content]
		}
		if !ok {
			switch {
			case maxAdded < 0:
				id = len(vocab)
			case maxAdded >= len(vocab) || len(vocab) == 0:
				id = maxAdded + 1
			default:
				id = len(vocab)
			}
		}
		if id >= 1<<24 {
			return nil, fmt.Errorf("added_tokens[%d]: id %d out of range", i, id)
		}
		ids[i] = id
		known[a.Content] = id
		maxAdded = max(maxAdded, id)
	}
	return ids, nil
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// VocabSize is one more than the largest id of the model vocabulary and the
// added tokens: the size of the model's embedding and output layers.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID returns the id of a token given as written in tokenizer.json (the
// byte-level form for model tokens, e.g. "Ġself"; the content for added
// tokens, e.g. "<|frame_sep|>"), like Hugging Face's token_to_id.
func (t *Tokenizer) TokenID(s string) (int, bool) {
	id, ok := t.strToID[s]
	return id, ok
}

// BytesID returns the id of the model token whose raw bytes are b.
func (t *Tokenizer) BytesID(b []byte) (int, bool) {
	id, ok := t.rawToID[string(b)]
	return id, ok
}

// TokenString returns the token as written in tokenizer.json, or "" for an
// unknown id.
func (t *Tokenizer) TokenString(id int) string {
	if id < 0 || id >= len(t.tokenStr) {
		return ""
	}
	return t.tokenStr[id]
}

// TokenBytes returns the raw bytes token id stands for (what Decode emits
// for it; possibly an incomplete UTF-8 sequence), or nil for an unknown id.
// The slice must not be modified.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.tokenRaw) {
		return nil
	}
	return t.tokenRaw[id]
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < len(t.special) && t.special[id]
}

// AddedTokens returns the added tokens in tokenizer.json order.
func (t *Tokenizer) AddedTokens() []AddedToken {
	return append([]AddedToken(nil), t.added...)
}

// SpecialTokens maps the content of every special token to its id.
func (t *Tokenizer) SpecialTokens() map[string]int {
	m := make(map[string]int)
	for _, a := range t.added {
		if a.Special {
			m[a.Content] = a.ID
		}
	}
	return m
}

// Encode returns the token ids of text. Added tokens are matched first
// (special ones included), the rest is pre-tokenized and BPE-encoded.
// Invalid UTF-8 (which Hugging Face cannot take) is encoded as bytes too,
// so Decode(Encode(s)) is s with invalid sequences replaced by U+FFFD.
// Bytes missing from the vocabulary (possible only in incomplete
// vocabularies) become unk_token or are dropped, as in Hugging Face.
func (t *Tokenizer) Encode(text string) []int {
	ids := make([]int, 0, len(text)/3+4)
	return t.AppendEncode(ids, text)
}

// AppendEncode appends the ids of text to ids and returns the result.
func (t *Tokenizer) AppendEncode(ids []int, text string) []int {
	return t.appendEncode(ids, text, false)
}

// EncodeOrdinary is Encode with special tokens treated as plain text (HF's
// encode_special_tokens): for untrusted text such as a program's source,
// where a literal "<|frame_sep|>" must not become a control token.
// Non-special added tokens are still matched.
func (t *Tokenizer) EncodeOrdinary(text string) []int {
	return t.appendEncode(make([]int, 0, len(text)/3+4), text, true)
}

func (t *Tokenizer) appendEncode(ids []int, text string, skipSpecial bool) []int {
	e := encoder{t: t, ids: ids}
	t.rawTrie.split(text, skipSpecial, func(seg string, id int) {
		if id >= 0 {
			e.ids = append(e.ids, id)
			return
		}
		t.normTrie.split(seg, skipSpecial, func(seg2 string, id2 int) {
			if id2 >= 0 {
				e.ids = append(e.ids, id2)
				return
			}
			e.preTokenize(seg2, 0)
		})
	})
	return e.ids
}

// encoder holds the state of one Encode call.
type encoder struct {
	t       *Tokenizer
	ids     []int
	scratch []int32 // BPE working space, reused across words
}

// preTokenize applies pre-tokenizer steps from step on and encodes the
// resulting words.
func (e *encoder) preTokenize(s string, step int) {
	if step == len(e.t.steps) {
		e.word(s)
		return
	}
	st := e.t.steps[step]
	if s == "" {
		return
	}
	if st.prefixSpace && s[0] != ' ' {
		s = " " + s
	}
	if st.split == 0 {
		e.preTokenize(s, step+1)
		return
	}
	for i := 0; i < len(s); {
		j := st.split.next(s, i)
		e.preTokenize(s[i:j], step+1)
		i = j
	}
}

// word BPE-encodes one pre-token.
func (e *encoder) word(w string) {
	if w == "" {
		return
	}
	t := e.t
	ids, ok := t.cache.get(w)
	if !ok {
		if id, found := t.rawToID[w]; t.ignoreMerges && found {
			ids = append(e.scratch[:0], int32(id)) // ignore_merges: a word in the vocabulary is one token
		} else {
			ids = t.bpe(w, e.scratch[:0])
		}
		e.scratch = ids[:0]
		t.cache.put(w, ids)
	}
	for _, id := range ids {
		e.ids = append(e.ids, int(id))
	}
}

// bpe merges the bytes of w by rank: repeatedly the lowest-ranked adjacent
// pair, the leftmost on ties, exactly as Hugging Face's BPE model does. It
// works in syms (appending to it) and returns the ids.
func (t *Tokenizer) bpe(w string, syms []int32) []int32 {
	for i := 0; i < len(w); i++ {
		id := t.byteID[w[i]]
		if id < 0 {
			id = t.unkID
			if id < 0 {
				continue // HF drops bytes it cannot represent when there is no unk (fuse_unk is not modelled)
			}
		}
		syms = append(syms, id)
	}
	if len(syms) > 64 {
		return t.bpeLong(syms)
	}
	if len(syms) < 2 {
		return syms
	}
	// ranks[i] is the merge of the pair (syms[i], syms[i+1]); only the
	// neighbours of a merge need a new lookup.
	var buf [64]mergeRule
	ranks := buf[:len(syms)-1]
	for i := range ranks {
		ranks[i] = t.rule(syms[i], syms[i+1])
	}
	for {
		best := 0
		for i := 1; i < len(ranks); i++ {
			if ranks[i].rank < ranks[best].rank {
				best = i
			}
		}
		if ranks[best].rank == math.MaxInt32 {
			break
		}
		syms[best] = ranks[best].id
		syms = append(syms[:best+1], syms[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		if best > 0 {
			ranks[best-1] = t.rule(syms[best-1], syms[best])
		}
		if best < len(ranks) {
			ranks[best] = t.rule(syms[best], syms[best+1])
		}
		if len(ranks) == 0 {
			break
		}
	}
	return syms
}

// rule returns the merge of the pair (a, b), or rank math.MaxInt32.
func (t *Tokenizer) rule(a, b int32) mergeRule {
	if r, ok := t.merges[pairKey(a, b)]; ok {
		return r
	}
	return mergeRule{rank: math.MaxInt32}
}

// Decode returns the text of ids, special tokens included. Byte sequences
// that are not valid UTF-8 become U+FFFD (one per maximal invalid subpart,
// as Rust's from_utf8_lossy does). Unknown ids are skipped.
func (t *Tokenizer) Decode(ids []int) string {
	buf := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		buf = append(buf, t.TokenBytes(id)...)
	}
	if utf8.Valid(buf) {
		return string(buf)
	}
	return string(appendLossy(make([]byte, 0, len(buf)+16), buf))
}

// isWordRune reports whether r matches Rust regex's Unicode \w.
func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Pc, r) || r == 0x200C || r == 0x200D
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordRune(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordRune(r)
}

// CheckModel checks that t can be the tokenizer of a model whose embedding
// has vocabSize rows and whose config.json names bos and eos (nil and
// empty: none): every id t writes must be a row of the embedding (a larger
// vocabulary writes ids the model has no row for), and the BOS and EOS ids
// the config names must be special tokens of t (another model's tokenizer
// has ordinary text there, or no token at all). It cannot tell a same-sized
// tokenizer with other merges apart: that is what the config's special ids
// are for.
func (t *Tokenizer) CheckModel(vocabSize int, bos *int, eos []int) error {
	if t.VocabSize() > vocabSize {
		return fmt.Errorf("tokenizer: tokenizer.json has %d tokens, but the model's embedding has %d rows (vocab_size): "+
			"it is not this model's tokenizer", t.VocabSize(), vocabSize)
	}
	ids := map[string][]int{"eos_token_id": eos}
	if bos != nil {
		ids["bos_token_id"] = []int{*bos}
	}
	for _, field := range []string{"bos_token_id", "eos_token_id"} {
		for _, id := range ids[field] {
			if !t.IsSpecial(id) {
				what := fmt.Sprintf("the ordinary token %q", t.TokenString(id))
				if id >= t.VocabSize() {
					what = fmt.Sprintf("no token (it has %d)", t.VocabSize())
				}
				return fmt.Errorf("tokenizer: config.json's %s is %d, which in tokenizer.json is %s, not a special token: "+
					"it is not this model's tokenizer", field, id, what)
			}
		}
	}
	return nil
}
