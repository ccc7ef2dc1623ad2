// Command specials prints the DSL's special tokens, comma-separated, for the
// tokenizer trainer (train/make_default.sh).
package main

import (
	"fmt"
	"strings"

	"github.com/ndbg/ndbg/dsl"
)

func main() {
	var names []string
	for _, s := range dsl.SpecialTokens() {
		names = append(names, s.Text)
	}
	fmt.Println(strings.Join(names, ","))
}
