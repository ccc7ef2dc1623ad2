package constrain

import (
	"fmt"

	"github.com/ndbg/ndbg/dsl"
	"github.com/ndbg/ndbg/tokenizer"
)

// VocabOf builds the Vocab of a tokenizer. The DSL's special tokens are
// found by their text; in a CWM-sized vocabulary that lacks them (Llama-3's
// tokenizer.json, whose reserved slots CWM uses) they take their CWM ids.
func VocabOf(tok *tokenizer.Tokenizer) (*Vocab, error) {
	n := tok.VocabSize()
	special := map[string]int{}
	for _, s := range dsl.SpecialTokens() {
		if id, ok := tok.TokenID(s.Text); ok {
			special[s.Text] = id
		} else if n >= 128256 {
			special[s.Text] = s.ID
		}
	}
	tokens := make([][]byte, n)
	for id := range n {
		if !tok.IsSpecial(id) {
			tokens[id] = tok.TokenBytes(id)
		}
	}
	v, err := NewVocab(tokens, special)
	if err != nil {
		return nil, fmt.Errorf("constrain: vocabulary of tokenizer: %w", err)
	}
	return v, nil
}
