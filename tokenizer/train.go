package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
)

// TrainOptions configures Train.
type TrainOptions struct {
	// VocabSize is the size of the result: special tokens, 256 bytes, merges.
	VocabSize int
	// Special tokens get ids 0..len-1; they are set apart in the training
	// text and never learnt from.
	Special []string
	// Pattern is the pre-tokenizer: "llama3" (the default: Split with the
	// Llama-3 regex, then ByteLevel, ignore_merges) or "gpt2".
	Pattern string
	// MinFrequency stops training when the best pair is seen fewer times
	// (default 2).
	MinFrequency int
}

// Train learns a byte-level BPE from texts and returns it as a Hugging Face
// tokenizer.json. Ids: the special tokens, then byte b at len(Special)+b,
// then one token per merge. Each step merges the most frequent adjacent
// pair of the pre-tokens of texts (ties: the pair of smaller ids, as the
// Hugging Face trainer does). Unlike that trainer's file input, texts are
// not split into lines, so tokens like "\n\n" can be learnt.
func Train(texts []string, opts TrainOptions) ([]byte, error) {
	if opts.Pattern == "" {
		opts.Pattern = "llama3"
	}
	if opts.MinFrequency == 0 {
		opts.MinFrequency = 2
	}
	var pat pattern
	switch opts.Pattern {
	case "llama3":
		pat = patLlama3
	case "gpt2":
		pat = patGPT2
	default:
		return nil, fmt.Errorf("tokenizer: train: pattern %q unknown (llama3 or gpt2)", opts.Pattern)
	}
	k := len(opts.Special)
	if opts.VocabSize <= k+256 {
		return nil, fmt.Errorf("tokenizer: train: vocab size %d leaves no room for merges after %d special tokens and 256 bytes", opts.VocabSize, k)
	}
	specials := make([]AddedToken, k)
	seen := make(map[string]bool, k)
	for i, s := range opts.Special {
		if s == "" || seen[s] {
			return nil, fmt.Errorf("tokenizer: train: special token %d %q is empty or repeated", i, s)
		}
		seen[s] = true
		specials[i] = AddedToken{ID: i, Content: s, Special: true}
	}

	// Count pre-tokens.
	counts := make(map[string]int64)
	m := newMatcher(specials)
	for _, text := range texts {
		m.split(text, false, func(seg string, id int) {
			if id >= 0 {
				return
			}
			for i := 0; i < len(seg); {
				j := pat.next(seg, i)
				counts[seg[i:j]]++
				i = j
			}
		})
	}
	tr := newTrainer(k, counts)
	merges := tr.run(opts.VocabSize-k, int64(opts.MinFrequency))
	return tr.tokenizerJSON(opts, merges)
}

// trainer holds the state of BPE training.
type trainer struct {
	base   int32            // id of byte 0
	tokens [][]byte         // raw bytes of id base+i
	ids    map[string]int32 // raw bytes -> id
	words  [][]int32        // symbols of each distinct pre-token
	freq   []int64          // its count
	pairs  map[uint64]int64
	where  map[uint64][]int32 // words that contain (or contained) the pair
	heap   trainHeap
}

func newTrainer(k int, counts map[string]int64) *trainer {
	tr := &trainer{base: int32(k), ids: make(map[string]int32), pairs: make(map[uint64]int64), where: make(map[uint64][]int32)}
	for b := 0; b < 256; b++ {
		tr.tokens = append(tr.tokens, []byte{byte(b)})
		tr.ids[string([]byte{byte(b)})] = tr.base + int32(b)
	}
	keys := make([]string, 0, len(counts))
	for w := range counts {
		keys = append(keys, w)
	}
	sort.Strings(keys) // deterministic word order
	for _, w := range keys {
		syms := make([]int32, len(w))
		for i := 0; i < len(w); i++ {
			syms[i] = tr.base + int32(w[i])
		}
		wi := int32(len(tr.words))
		tr.words = append(tr.words, syms)
		tr.freq = append(tr.freq, counts[w])
		for i := 0; i+1 < len(syms); i++ {
			p := pairKey(syms[i], syms[i+1])
			tr.pairs[p] += counts[w]
			tr.where[p] = append(tr.where[p], wi)
		}
	}
	for p, c := range tr.pairs {
		tr.heap.push(trainItem{count: c, pair: p})
	}
	return tr
}

// run merges until there are n tokens (bytes included) and returns the
// merges as id pairs. A merge whose result already exists (reached by
// another path) reuses its id, as in Hugging Face's trainer.
func (tr *trainer) run(n int, minFreq int64) [][2]int32 {
	var merges [][2]int32
	for len(tr.tokens) < n && len(tr.heap) > 0 {
		top := tr.heap.pop()
		if cur := tr.pairs[top.pair]; cur != top.count {
			if cur > 0 {
				tr.heap.push(trainItem{count: cur, pair: top.pair})
			}
			continue // stale
		}
		if top.count < minFreq {
			break
		}
		a, b := int32(top.pair>>32), int32(uint32(top.pair))
		raw := append(append([]byte(nil), tr.token(a)...), tr.token(b)...)
		id, ok := tr.ids[string(raw)]
		if !ok {
			id = tr.base + int32(len(tr.tokens))
			tr.tokens = append(tr.tokens, raw)
			tr.ids[string(raw)] = id
		}
		merges = append(merges, [2]int32{a, b})
		changed := make(map[uint64]bool)
		for _, wi := range tr.where[top.pair] {
			tr.mergeWord(wi, a, b, id, changed)
		}
		delete(tr.where, top.pair)
		for p := range changed {
			if c := tr.pairs[p]; c > 0 {
				tr.heap.push(trainItem{count: c, pair: p})
			}
		}
	}
	return merges
}

func (tr *trainer) token(id int32) []byte { return tr.tokens[id-tr.base] }

// mergeWord replaces every (a, b) in word wi, left to right, by id and
// updates the pair counts.
func (tr *trainer) mergeWord(wi, a, b, id int32, changed map[uint64]bool) {
	syms := tr.words[wi]
	found := false
	for i := 0; i+1 < len(syms); i++ {
		if syms[i] == a && syms[i+1] == b {
			found = true
			break
		}
	}
	if !found {
		return // a stale or repeated entry of where
	}
	f := tr.freq[wi]
	for i := 0; i+1 < len(syms); i++ {
		p := pairKey(syms[i], syms[i+1])
		tr.pairs[p] -= f
		changed[p] = true
	}
	out := syms[:0]
	for i := 0; i < len(syms); i++ {
		if i+1 < len(syms) && syms[i] == a && syms[i+1] == b {
			out = append(out, id)
			i++
			continue
		}
		out = append(out, syms[i])
	}
	tr.words[wi] = out
	for i := 0; i+1 < len(out); i++ {
		p := pairKey(out[i], out[i+1])
		tr.pairs[p] += f
		changed[p] = true
		if out[i] == id || out[i+1] == id {
			tr.where[p] = append(tr.where[p], wi)
		}
	}
}

// tokenizerJSON writes the trained model as tokenizer.json.
func (tr *trainer) tokenizerJSON(opts TrainOptions, merges [][2]int32) ([]byte, error) {
	bl := newByteLevel()
	k := len(opts.Special)
	str := func(id int32) string {
		if int(id) < k {
			return opts.Special[id]
		}
		return bl.encodeBytes(tr.token(id))
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<|frame_sep|>" readable
	var err error
	w := func(v any) {
		if err == nil {
			if err = enc.Encode(v); err == nil {
				buf.Truncate(buf.Len() - 1) // Encode's newline
			}
		}
	}
	buf.WriteString(`{"version":"1.0","truncation":null,"padding":null,"added_tokens":[`)
	for i, s := range opts.Special {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `{"id":%d,"content":`, i)
		w(s)
		buf.WriteString(`,"single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}`)
	}
	buf.WriteString(`],"normalizer":null,"pre_tokenizer":`)
	bytelevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	if opts.Pattern == "llama3" {
		bytelevel["use_regex"] = false
		w(map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": llama3Regex}, "behavior": "Isolated", "invert": false},
			bytelevel,
		}})
	} else {
		w(bytelevel)
	}
	buf.WriteString(`,"post_processor":null,"decoder":{"type":"ByteLevel","add_prefix_space":true,"trim_offsets":true,"use_regex":true},`)
	fmt.Fprintf(&buf, `"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":null,"end_of_word_suffix":null,"fuse_unk":false,"byte_fallback":false,"ignore_merges":%v,"vocab":{`, opts.Pattern == "llama3")
	n := tr.base + int32(len(tr.tokens))
	for id := int32(0); id < n; id++ {
		if id > 0 {
			buf.WriteByte(',')
		}
		w(str(id))
		fmt.Fprintf(&buf, ":%d", id)
	}
	buf.WriteString(`},"merges":[`)
	for i, mg := range merges {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.WriteByte('[')
		w(str(mg[0]))
		buf.WriteByte(',')
		w(str(mg[1]))
		buf.WriteByte(']')
	}
	buf.WriteString("]}}\n")
	if err != nil {
		return nil, fmt.Errorf("tokenizer: train: %w", err)
	}
	return buf.Bytes(), nil
}

// trainItem is a pair and its count when pushed.
type trainItem struct {
	count int64
	pair  uint64
}

// trainHeap is a max-heap by count, then by smaller pair.
type trainHeap []trainItem

func (h trainHeap) before(i, j int) bool {
	if h[i].count != h[j].count {
		return h[i].count > h[j].count
	}
	return h[i].pair < h[j].pair
}

func (h *trainHeap) push(x trainItem) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s.before(i, p) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *trainHeap) pop() trainItem {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s.before(l, m) {
			m = l
		}
		if r < len(s) && s.before(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}
