package tokenizer_test

import (
	"fmt"

	"github.com/ndbg/ndbg/tokenizer"
)

func Example() {
	tk, err := tokenizer.Load("testdata/code-llama3.tokenizer.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := tk.Encode("<|call_sep|>{\"n\": \"3\"}<|action_sep|>    return n * 2\n<|frame_sep|>")
	fmt.Println(len(ids), ids[0] == tk.SpecialTokens()["<|call_sep|>"])

	// Stream the text back as ids arrive, as a sampler would.
	d := tk.NewStreamDecoder()
	text := ""
	for _, id := range ids {
		text += d.Next(id)
	}
	text += d.Flush()
	fmt.Printf("%q\n", text)
	// Output:
	// 18 true
	// "<|call_sep|>{\"n\": \"3\"}<|action_sep|>    return n * 2\n<|frame_sep|>"
}
