package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// fileJSON mirrors the parts of a Hugging Face tokenizer.json this package
// reads. Fields that change encoding are decoded as raw JSON so that an
// unsupported value can be reported by name.
type fileJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         modelJSON        `json:"model"`
}

type addedTokenJSON struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type modelJSON struct {
	Type                    string          `json:"type"`
	Dropout                 *float64        `json:"dropout"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Vocab                   json.RawMessage `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
}

// componentJSON is a pre-tokenizer, decoder, normalizer or post-processor.
type componentJSON struct {
	Type           string          `json:"type"`
	AddPrefixSpace bool            `json:"add_prefix_space"`
	UseRegex       *bool           `json:"use_regex"`
	Pattern        *patternJSON    `json:"pattern"`
	Behavior       string          `json:"behavior"`
	Invert         bool            `json:"invert"`
	PreTokenizers  []componentJSON `json:"pretokenizers"`
	Decoders       []componentJSON `json:"decoders"`
}

type patternJSON struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

// isNull reports whether a raw JSON value is absent or null.
func isNull(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// preStep is one stage of pre-tokenization: an optional prefix space
// (ByteLevel add_prefix_space) followed by an optional pattern split.
type preStep struct {
	prefixSpace bool
	split       pattern // 0: no split
}

// parsePreTokenizer turns the pre_tokenizer field into steps. It accepts
// ByteLevel, Split with the GPT-2 or Llama-3 regex (behavior Isolated), and a
// Sequence of those; at least one ByteLevel is required since the model is
// byte-level.
func parsePreTokenizer(raw json.RawMessage) ([]preStep, error) {
	if isNull(raw) {
		return nil, fmt.Errorf("pre_tokenizer: null is unsupported (need ByteLevel)")
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	var steps []preStep
	byteLevel := false
	var add func(c componentJSON, field string) error
	add = func(c componentJSON, field string) error {
		switch c.Type {
		case "Sequence":
			for i, sub := range c.PreTokenizers {
				if err := add(sub, fmt.Sprintf("%s.pretokenizers[%d]", field, i)); err != nil {
					return err
				}
			}
		case "ByteLevel":
			byteLevel = true
			st := preStep{prefixSpace: c.AddPrefixSpace}
			if c.UseRegex == nil || *c.UseRegex {
				st.split = patGPT2
			}
			if st.prefixSpace || st.split != 0 { // else a no-op: bytes map 1:1
				steps = append(steps, st)
			}
		case "Split":
			if c.Pattern == nil || c.Pattern.Regex == nil {
				return fmt.Errorf("%s.pattern: only a Regex pattern is supported", field)
			}
			if c.Behavior != "Isolated" {
				return fmt.Errorf("%s.behavior: %q unsupported (only Isolated)", field, c.Behavior)
			}
			if c.Invert {
				return fmt.Errorf("%s.invert: true unsupported", field)
			}
			switch *c.Pattern.Regex {
			case gpt2Regex:
				steps = append(steps, preStep{split: patGPT2})
			case llama3Regex:
				steps = append(steps, preStep{split: patLlama3})
			default:
				return fmt.Errorf("%s.pattern.Regex: %q unsupported (only the GPT-2 and Llama-3 patterns)", field, *c.Pattern.Regex)
			}
		default:
			return fmt.Errorf("%s.type: %q unsupported", field, c.Type)
		}
		return nil
	}
	if err := add(c, "pre_tokenizer"); err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, fmt.Errorf("pre_tokenizer: no ByteLevel pre-tokenizer (only byte-level BPE is supported)")
	}
	return steps, nil
}

// checkDecoder accepts a ByteLevel decoder, alone or as the only member of a
// Sequence.
func checkDecoder(raw json.RawMessage) error {
	if isNull(raw) {
		return fmt.Errorf("decoder: null unsupported (need ByteLevel)")
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	if c.Type == "Sequence" && len(c.Decoders) == 1 {
		c = c.Decoders[0]
	}
	if c.Type != "ByteLevel" {
		return fmt.Errorf("decoder.type: %q unsupported (only ByteLevel)", c.Type)
	}
	return nil
}

// checkNormalizer accepts only the absence of a normalizer.
func checkNormalizer(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var c componentJSON
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("normalizer: %w", err)
	}
	return fmt.Errorf("normalizer.type: %q unsupported (only null)", c.Type)
}
