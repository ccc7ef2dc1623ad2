package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ndbg/ndbg/weights"
)

// GGUFVocab is a byte-level BPE tokenizer as a GGUF file holds it
// (llama.cpp's "gpt2" tokenizer model): the tokenizer.ggml.* keys.
type GGUFVocab struct {
	// Tokens are the tokens by id, in tokenizer.json's byte-level spelling
	// (tokenizer.ggml.tokens).
	Tokens []string
	// Types are llama.cpp's token types by id (tokenizer.ggml.token_type):
	// GGUFNormal, GGUFControl (a special added token), GGUFUserDefined (an
	// added token that is not special), GGUFUnused (an id no token has).
	Types []int32
	// Merges are the BPE merges by rank, "a b" (tokenizer.ggml.merges).
	Merges []string
	// Pre names the pre-tokenizer (tokenizer.ggml.pre): "llama-bpe" for
	// Llama-3's pattern (llama.cpp then ignores merges for a word that is a
	// token), "gpt-2" for GPT-2's.
	Pre string
	// IgnoreMerges is tokenizer.json's model.ignore_merges; llama.cpp
	// implies it from Pre (true for llama-bpe), and a file whose tokenizer
	// says otherwise keeps it in ndbg.tokenizer.ignore_merges.
	IgnoreMerges bool
}

// llama.cpp's token types (llama_token_type).
const (
	GGUFNormal      = 1
	GGUFControl     = 3
	GGUFUserDefined = 4
	GGUFUnused      = 5
)

// GGUF pre-tokenizer names and the patterns they stand for: the names
// llama.cpp's llama-vocab.cpp maps to the Llama-3 and GPT-2 regexes.
var (
	ggufPreLlama3 = []string{"llama-bpe", "llama3", "llama-v3"}
	ggufPreGPT2   = []string{"gpt-2", "gpt2"}
)

// GGUFVocab returns t as a GGUF file holds it. A tokenizer whose
// pre-tokenization llama.cpp has no name for (a prefix space, several
// pattern splits) is an error.
func (t *Tokenizer) GGUFVocab() (*GGUFVocab, error) {
	v := &GGUFVocab{Tokens: make([]string, t.vocabSize), Types: make([]int32, t.vocabSize), IgnoreMerges: t.ignoreMerges}
	var pats []pattern
	for _, st := range t.steps {
		if st.prefixSpace {
			return nil, fmt.Errorf("tokenizer: a ByteLevel prefix space cannot be written to GGUF (llama.cpp has none)")
		}
		if st.split != 0 {
			pats = append(pats, st.split)
		}
	}
	switch {
	case len(pats) == 1 && pats[0] == patLlama3:
		v.Pre = ggufPreLlama3[0]
	case len(pats) == 1 && pats[0] == patGPT2:
		v.Pre = ggufPreGPT2[0]
	default:
		return nil, fmt.Errorf("tokenizer: pre-tokenization by %d pattern(s) has no llama.cpp name (one Llama-3 or GPT-2 pattern)", len(pats))
	}
	for id := range t.vocabSize {
		s := t.tokenStr[id]
		switch {
		case t.tokenRaw[id] == nil && s == "":
			v.Tokens[id], v.Types[id] = fmt.Sprintf("[PAD%d]", id), GGUFUnused
		case t.special[id]:
			v.Tokens[id], v.Types[id] = s, GGUFControl
		default:
			v.Tokens[id], v.Types[id] = s, GGUFNormal
			if _, added := t.addedByID[id]; added {
				v.Types[id] = GGUFUserDefined
			}
		}
	}
	type merge struct {
		rank int32
		a, b int32
	}
	ms := make([]merge, 0, len(t.merges))
	for k, r := range t.merges {
		ms = append(ms, merge{r.rank, int32(k >> 32), int32(uint32(k))})
	}
	slices.SortFunc(ms, func(x, y merge) int { return int(x.rank - y.rank) })
	v.Merges = make([]string, len(ms))
	for i, m := range ms {
		v.Merges[i] = t.tokenStr[m.a] + " " + t.tokenStr[m.b]
	}
	return v, nil
}

// FromGGUFVocab builds the tokenizer a GGUF file holds (llama.cpp's
// "gpt2" model with a Llama-3 or GPT-2 pre-tokenizer), as the
// tokenizer.json it stands for, checked as Parse checks one.
func FromGGUFVocab(v *GGUFVocab) (*Tokenizer, error) {
	var pre any
	switch {
	case slices.Contains(ggufPreLlama3, v.Pre):
		pre = map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": llama3Regex}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": false},
		}}
	case slices.Contains(ggufPreGPT2, v.Pre):
		pre = map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true}
	default:
		return nil, fmt.Errorf("tokenizer: GGUF pre-tokenizer %q is not supported (llama-bpe or gpt-2)", truncate(v.Pre, 32))
	}
	if len(v.Types) != 0 && len(v.Types) != len(v.Tokens) {
		return nil, fmt.Errorf("tokenizer: GGUF has %d tokens and %d token types", len(v.Tokens), len(v.Types))
	}
	vocab := make(map[string]int, len(v.Tokens))
	var added []map[string]any
	for id, s := range v.Tokens {
		typ := int32(GGUFNormal)
		if len(v.Types) > 0 {
			typ = v.Types[id]
		}
		switch typ {
		case GGUFUnused:
			continue
		case GGUFControl, GGUFUserDefined:
			added = append(added, map[string]any{"id": id, "content": s, "single_word": false, "lstrip": false,
				"rstrip": false, "normalized": typ == GGUFUserDefined, "special": typ == GGUFControl})
		case GGUFNormal:
		default:
			return nil, fmt.Errorf("tokenizer: GGUF token %d has type %d (only normal, control, user-defined and unused tokens are read)", id, typ)
		}
		if prev, dup := vocab[s]; dup {
			return nil, fmt.Errorf("tokenizer: GGUF tokens %d and %d are both %q", prev, id, truncate(s, 32))
		}
		vocab[s] = id
	}
	merges := make([][2]string, len(v.Merges))
	for i, m := range v.Merges {
		a, b, ok := strings.Cut(m, " ")
		if !ok || strings.Contains(b, " ") {
			return nil, fmt.Errorf("tokenizer: GGUF merge %d %q is not two tokens", i, truncate(m, 32))
		}
		merges[i] = [2]string{a, b}
	}
	file := map[string]any{
		"version": "1.0", "added_tokens": added, "normalizer": nil, "pre_tokenizer": pre,
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": v.IgnoreMerges,
			"vocab": vocab, "merges": merges},
	}
	data, err := json.Marshal(file)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: GGUF vocabulary: %w", err)
	}
	t, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: GGUF vocabulary: %w", err)
	}
	return t, nil
}

// LlamaCppIgnoresMerges reports whether llama.cpp ignores merges for the
// pre-tokenizer name (as for Llama-3's), so a writer knows when to record
// a tokenizer's own choice beside it.
func LlamaCppIgnoresMerges(pre string) bool { return slices.Contains(ggufPreLlama3, pre) }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// GGUF metadata keys of a tokenizer.
const (
	ggufTokModel  = "tokenizer.ggml.model"
	ggufTokPre    = "tokenizer.ggml.pre"
	ggufTokTokens = "tokenizer.ggml.tokens"
	ggufTokTypes  = "tokenizer.ggml.token_type"
	ggufTokMerges = "tokenizer.ggml.merges"
	ggufTokAddBOS = "tokenizer.ggml.add_bos_token"
	ggufTokIgnore = "ndbg.tokenizer.ignore_merges"
)

// FromGGUF reads the tokenizer a GGUF file holds in its metadata
// (tokenizer.ggml.model "gpt2": byte-level BPE; FromGGUFVocab). A file
// without one, or with another model, is an error that says so.
func FromGGUF(g *weights.GGUFFile) (*Tokenizer, error) {
	str := func(key string) (string, bool) {
		v, ok := g.Value(key)
		if !ok {
			return "", false
		}
		return v.String()
	}
	model, ok := str(ggufTokModel)
	if !ok {
		return nil, fmt.Errorf("tokenizer: %s has no tokenizer (%s)", g.Path(), ggufTokModel)
	}
	if model != "gpt2" {
		return nil, fmt.Errorf("tokenizer: %s: tokenizer model %q is not supported (only byte-level BPE, \"gpt2\")", g.Path(), truncate(model, 32))
	}
	v := &GGUFVocab{}
	v.Pre, _ = str(ggufTokPre)
	val, _ := g.Value(ggufTokTokens)
	if v.Tokens, ok = val.Strings(); !ok {
		return nil, fmt.Errorf("tokenizer: %s: %s is missing or not strings", g.Path(), ggufTokTokens)
	}
	if val, ok := g.Value(ggufTokMerges); ok {
		if v.Merges, ok = val.Strings(); !ok {
			return nil, fmt.Errorf("tokenizer: %s: %s is not strings", g.Path(), ggufTokMerges)
		}
	}
	if val, ok := g.Value(ggufTokTypes); ok {
		ints, isInts := val.Ints()
		if !isInts {
			return nil, fmt.Errorf("tokenizer: %s: %s is not integers", g.Path(), ggufTokTypes)
		}
		v.Types = make([]int32, len(ints))
		for i, n := range ints {
			v.Types[i] = int32(n)
		}
	}
	v.IgnoreMerges = LlamaCppIgnoresMerges(v.Pre)
	if val, ok := g.Value(ggufTokIgnore); ok {
		if v.IgnoreMerges, ok = val.Bool(); !ok {
			return nil, fmt.Errorf("tokenizer: %s: %s is not a bool", g.Path(), ggufTokIgnore)
		}
	}
	t, err := FromGGUFVocab(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", g.Path(), err)
	}
	return t, nil
}

// GGUFMetadata returns the tokenizer.ggml.* keys that hold t in a GGUF file
// (llama.cpp's "gpt2" model), with ndbg.tokenizer.ignore_merges when t's
// choice is not the one llama.cpp implies from the pre-tokenizer.
func (t *Tokenizer) GGUFMetadata() ([]weights.GGUFKV, error) {
	v, err := t.GGUFVocab()
	if err != nil {
		return nil, err
	}
	kvs := []weights.GGUFKV{
		{Key: ggufTokModel, Value: weights.GGUFString("gpt2")},
		{Key: ggufTokPre, Value: weights.GGUFString(v.Pre)},
		{Key: ggufTokTokens, Value: weights.GGUFStrings(v.Tokens)},
		{Key: ggufTokTypes, Value: weights.GGUFInt32s(v.Types)},
		{Key: ggufTokMerges, Value: weights.GGUFStrings(v.Merges)},
		// ndbg writes <|begin_of_text|> itself, as Encode never adds it.
		{Key: ggufTokAddBOS, Value: weights.GGUFBool(false)},
	}
	if v.IgnoreMerges != LlamaCppIgnoresMerges(v.Pre) {
		kvs = append(kvs, weights.GGUFKV{Key: ggufTokIgnore, Value: weights.GGUFBool(v.IgnoreMerges)})
	}
	return kvs, nil
}
