package model_test

import (
	"context"
	"fmt"
	"log"

	"github.com/ndbg/ndbg/model"
	"github.com/ndbg/ndbg/sample"
)

// Prefill a shared prefix once, then continue it in two forks.
func Example() {
	ctx := context.Background()
	m, err := model.Load(ctx, "testdata/mha_f32", model.Options{Threads: 1})
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()

	base := m.NewSession()
	if _, err := base.Forward(ctx, []int{10, 20, 30, 40}, false); err != nil {
		log.Fatal(err)
	}
	greedy, err := sample.New(sample.Params{})
	if err != nil {
		log.Fatal(err)
	}
	for _, next := range [][]int{{1}, {2}} {
		s := base.Fork() // shares the prefix's KV cache
		g, err := model.Generate(ctx, s, next, greedy, model.GenerateOptions{MaxTokens: 3})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(len(g.Tokens), s.Len())
	}
	// Output:
	// 3 7
	// 3 7
}
