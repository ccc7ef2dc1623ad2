package weights_test

import (
	"fmt"
	"log"
	"os"

	"github.com/ndbg/ndbg/weights"
)

// Example writes a two-layer checkpoint the way a test or the training
// export would, then opens it the way the model does.
func Example() {
	dir, err := os.MkdirTemp("", "ckpt")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	cfg := &weights.Config{
		HiddenSize: 8, IntermediateSize: 16, NumHiddenLayers: 2,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 4,
		VocabSize: 10, MaxPositionEmbeddings: 32, RMSNormEps: 1e-5, RopeTheta: 10000,
	}
	emb, err := weights.NewTensor("model.embed_tokens.weight", weights.BF16, []int{10, 8}, make([]float32, 80))
	if err != nil {
		log.Fatal(err)
	}
	norm, err := weights.NewTensor("model.norm.weight", weights.F32, []int{8}, []float32{1, 1, 1, 1, 1, 1, 1, 1})
	if err != nil {
		log.Fatal(err)
	}
	if err := weights.WriteCheckpoint(dir, cfg, []weights.Tensor{emb, norm}, 0, nil); err != nil {
		log.Fatal(err)
	}

	ck, err := weights.Open(dir)
	if err != nil {
		log.Fatal(err)
	}
	defer ck.Close()
	t, err := ck.Require("model.norm.weight", ck.Config.HiddenSize)
	if err != nil {
		log.Fatal(err)
	}
	v, err := t.F32() // zero-copy view of the mapped file
	if err != nil {
		log.Fatal(err)
	}
	_, err = ck.Require("lm_head.weight", ck.Config.VocabSize, ck.Config.HiddenSize)
	fmt.Println(ck.Names(), v[0], ck.Config.LayerTypes)
	fmt.Println(err != nil, ck.Unused())
	// Output:
	// [model.embed_tokens.weight model.norm.weight] 1 [full_attention full_attention]
	// true [model.embed_tokens.weight]
}
