package model

import (
	"fmt"
	"math"
	"runtime"

	"github.com/ndbg/ndbg/internal/sysmem"
	"github.com/ndbg/ndbg/kernels"
)

// Footprint is the host memory a model allocates for itself beyond the
// checkpoint's own bytes (which stay mapped, or embedded, where they are),
// counted from its config before any of it is allocated: a config's sizes
// (max_position_embeddings, head_dim, the layer and vocabulary sizes) are
// numbers in a small file, and a checkpoint of a few hundred kilobytes can
// ask for more than any machine has.
type Footprint struct {
	// Rope is the RoPE table: cos and sin of max_position_embeddings ×
	// head_dim/2 angles, as float32.
	Rope int64
	// Weights are the weights copied at load: the fused QKV and gate/up
	// matrices, F16 matrices widened to F32, the norms.
	Weights int64
	// Session is one session at the full context: its KV cache
	// (max_position_embeddings positions of every layer), the activations
	// of one chunk of a prompt, its logits (vocabulary-sized rows) and the
	// attention scores of every thread.
	Session int64
}

// Total is the sum of the parts (saturated at math.MaxInt64).
func (f Footprint) Total() int64 { return addSat(addSat(f.Rope, f.Weights), f.Session) }

// FootprintOf returns the footprint of a model of shape cfg whose attention
// projections are of element type dt (its KV cache KVCacheDType(dt)), computing on threads threads (≤ 0: one per core), when it copies
// copied bytes of weights at load.
func FootprintOf(cfg *Config, dt kernels.DType, copied int64, threads int) Footprint {
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	pos, layers := int64(cfg.MaxPositionEmbeddings), int64(cfg.NumHiddenLayers)
	kvElem := int64(KVCacheDType(dt).Size())
	var actWidth int64
	for a := range NumActs {
		actWidth = addSat(actWidth, int64(a.Width(cfg)))
	}
	session := mulSat(pos, layers, 2, int64(cfg.KVDim()), kvElem)                           // the KV cache
	session = addSat(session, mulSat(maxChunk, actWidth, 4))                                // activations of a chunk
	session = addSat(session, mulSat(maxChunk+1, int64(cfg.VocabSize), 4))                  // logits of every row of a chunk, the last row's
	session = addSat(session, mulSat(int64(threads), int64(cfg.NumAttentionHeads), pos, 4)) // attention scores
	return Footprint{
		Rope:    mulSat(pos, int64(cfg.HeadDim/2), 2, 4),
		Weights: copied,
		Session: session,
	}
}

// checkMemory refuses a model whose footprint passes budget bytes (0: the
// memory this process may use, sysmem.Total; negative: no check), saying
// which config fields ask for what.
func checkMemory(cfg *Config, f Footprint, budget int64) error {
	what := "the memory of this machine"
	if budget == 0 {
		budget = sysmem.Total()
	} else {
		what = "Options.Memory"
	}
	if budget <= 0 || f.Total() <= budget {
		return nil
	}
	return fmt.Errorf("model: the config asks for %s of memory, more than the %s of %s: a RoPE table of %s "+
		"(max_position_embeddings %d × head_dim %d), %s of weights copied at load, and %s for one session at the full context "+
		"(its KV cache: max_position_embeddings %d × num_hidden_layers %d × num_key_value_heads %d × head_dim %d; activations and logits: vocab_size %d); "+
		"a smaller context (model.Options.Context, ndbg-infer generate --context) needs less",
		bytesText(f.Total()), bytesText(budget), what, bytesText(f.Rope), cfg.MaxPositionEmbeddings, cfg.HeadDim,
		bytesText(f.Weights), bytesText(f.Session), cfg.MaxPositionEmbeddings, cfg.NumHiddenLayers, cfg.NumKeyValueHeads,
		cfg.HeadDim, cfg.VocabSize)
}

// bytesText writes n bytes for a person: "3.2 GiB".
func bytesText(n int64) string {
	switch {
	case n == math.MaxInt64:
		return "more than 8 EiB"
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// mulSat multiplies non-negative factors, saturating at math.MaxInt64.
func mulSat(xs ...int64) int64 {
	p := int64(1)
	for _, x := range xs {
		if x <= 0 {
			return 0
		}
		if p > math.MaxInt64/x {
			return math.MaxInt64
		}
		p *= x
	}
	return p
}

// addSat adds non-negative terms, saturating at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
