package tokenizer

import "encoding/json"

// jsonUnmarshal decodes tokenizer.json.
func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }
