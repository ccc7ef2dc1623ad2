package model

import (
	"github.com/ndbg/ndbg/kernels"
)

// Device is where the forward pass computes: this machine's cores (CPU)
// or a GPU (package cuda, build tag cuda). The forward pass itself is
// written once, in forward, as a sequence of ops on a Pass (a Seq, or a
// Batch of several sequences' next positions); a device
// owns what those ops read and write:
//
//   - the weights: Load makes a model's weights resident on the device
//     once (the CPU uses the host weights in place; a GPU uploads them);
//   - each sequence's KV cache and activations (Resident.NewSeq);
//   - the kernels: matrix products, RMSNorm, RoPE with the KV-cache write,
//     attention, SwiGLU, the residual add, the output head.
//
// Only token ids go in and logits come out (Seq.Logits), so a GPU moves no
// activations or cache rows across the bus. (ollama's model/backend split
// and llama2.c's one forward function are the models followed.)
//
// Implementations must be safe for concurrent use by several sequences.
type Device interface {
	// Name identifies the device in logs and benchmarks ("cpu/avx512").
	Name() string
	// Load makes w, the weights of a model of shape cfg, resident on the
	// device. The host weights must stay unchanged while the Resident is
	// used (the CPU reads them in place).
	Load(cfg Config, w *Weights) (Resident, error)
	// Close releases the device's threads or its context; every Resident
	// must be closed first.
	Close() error
}

// Weights are a model's parameters in host memory, as bound from a
// checkpoint or filled randomly, with the RoPE tables of its context: what
// Device.Load makes resident.
type Weights struct {
	Embed, Head *kernels.Mat // Vocab × Hidden; Head is Embed when the embeddings are tied
	Norm        []float32
	Layers      []LayerWeights
	Rope        *RopeTable
}

// LayerWeights are one decoder layer's weights. The q, k and v projections
// are stored as one matrix (rows q then k then v) and gate and up as
// another, so each takes one pass over the activations.
type LayerWeights struct {
	AttnNorm, FFNNorm []float32
	QKV, O            *kernels.Mat
	GateUp, Down      *kernels.Mat
}

// Resident is a model's weights made resident on a device; sequences
// computing on them start from NewSeq. Safe for concurrent use.
type Resident interface {
	// NewSeq returns an empty sequence. Device memory is taken on first
	// use, so a failure to get it is reported by the sequence's Err.
	NewSeq() Seq
	// Close releases the device copy of the weights; the sequences must
	// not be used afterwards.
	Close() error
}

// Act names one of a sequence's activation buffers; each holds up to the
// rows reserved by Seq.Reserve, of the width given.
type Act uint8

const (
	ActX    Act = iota // the residual stream (Hidden)
	ActXB              // a normalised copy of it (Hidden)
	ActQKV             // the fused q, k, v projection (QDim + 2·KVDim)
	ActQ               // the rotated queries (QDim)
	ActAtt             // the attention output (QDim)
	ActTmp             // a projection back to the stream (Hidden)
	ActGU              // the fused gate and up projection, gate then up per row (2·FFN)
	ActFFN             // silu(gate)·up (FFN)
	NumActs            // the number of activation buffers
)

// Param names one of a layer's weights.
type Param uint8

const (
	AttnNorm Param = iota // input_layernorm
	QKV                   // q_proj, k_proj, v_proj stacked
	O                     // o_proj
	FFNNorm               // post_attention_layernorm
	GateUp                // gate_proj, up_proj stacked
	Down                  // down_proj
)

// Width returns the row width of activation a for cfg.
func (a Act) Width(c *Config) int {
	switch a {
	case ActQKV:
		return c.QDim() + 2*c.KVDim()
	case ActQ, ActAtt:
		return c.QDim()
	case ActGU:
		return 2 * c.IntermediateSize
	case ActFFN:
		return c.IntermediateSize
	}
	return c.HiddenSize
}

// Pass is the ops of one forward pass over rows of activations, in the
// order Session's forward pass queues them: a Seq's new positions, or a
// Batch's one new position of each of several sequences. The ops queue
// work in order; an op that fails records the error, later ops do nothing,
// and Err returns it.
type Pass interface {
	// Embed writes the embedding rows of tokens (already checked against
	// the vocabulary) into the first len(tokens) rows of ActX.
	Embed(tokens []int)
	// RMSNorm normalises n rows of src into dst with layer's weight p
	// (AttnNorm or FFNNorm).
	RMSNorm(dst, src Act, n, layer int, p Param)
	// MatMul sets n rows of dst to src · Wᵀ, W being layer's weight p (QKV,
	// O, GateUp or Down).
	MatMul(dst, src Act, n, layer int, p Param)
	// RoPE splits n rows of ActQKV for positions pos0 …: the queries,
	// rotated, into ActQ; the keys, rotated, and the values into layer's
	// cache rows.
	RoPE(layer, pos0, n int)
	// Attention sets n rows of ActAtt to the causal (for a sliding-window
	// layer, windowed) GQA attention of ActQ's queries at positions pos0 …
	// over layer's cache.
	Attention(layer, pos0, n int)
	// Add adds n rows of src to dst.
	Add(dst, src Act, n int)
	// SwiGLU sets n rows of ActFFN to silu(gate)·up of ActGU's rows.
	SwiGLU(n int)
	// Logits applies the final norm and the output head to the last rows
	// of the first n rows of ActX and copies the rows × Vocab logits into
	// dst, waiting for the queued work.
	Logits(dst []float32, n, rows int)
	// Err returns the first error of an op since the pass began (for a
	// Seq: since the sequence began or was last truncated).
	Err() error
}

// Seq is one sequence on a device: its KV cache (positions 0 … Len()-1)
// and its activations, computed on by the ops of Pass. A Seq is not safe
// for concurrent use; sequences of one Resident may run concurrently.
type Seq interface {
	Pass
	// Len returns the number of cached positions.
	Len() int
	// Reserve makes room for n more positions (counted in Len from now
	// on) and sizes the activations for n rows.
	Reserve(n int)
	// Truncate drops every position ≥ n and clears the recorded error.
	Truncate(n int) error
	// Fork returns a sequence holding the same positions that neither
	// sees the other's later writes. (A failure to fork is the fork's Err.)
	Fork() Seq
	// Close releases the sequence's device memory now rather than when it
	// is garbage collected; the sequence must not be used afterwards.
	Close() error
}

// Batch is one decode step of several sequences of one Resident as one
// Pass over a matrix of activations, a row per sequence: each weight is
// read once for all rows, which is what makes decoding many sessions
// cheaper than decoding them in turn. Row i is the last position of the
// i-th sequence, which reserved it (Seq.Reserve(1)) before the batch was
// made; RoPE and Attention therefore ignore pos0 and use each row's own
// position and KV cache, and n is always the number of sequences. The
// batch has activations of its own; the sequences' are not touched. A
// Batch is for one step: it is not safe for concurrent use, and its
// sequences must not be used by anything else until it is done.
type Batch interface {
	Pass
}

// BatchResident is a Resident whose device can run a Batch (the CPU).
// DecodeBatch falls back to one step per sequence on a Resident that is
// not one (a GPU today).
type BatchResident interface {
	Resident
	// NewBatch returns a batch over seqs, which are distinct sequences of
	// this Resident that have each reserved their next position. A
	// sequence of another Resident is an error reported by the batch's Err.
	NewBatch(seqs []Seq) Batch
}
