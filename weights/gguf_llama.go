package weights

import (
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A LLaMA model in GGUF, as llama.cpp's convert_hf_to_gguf.py writes it:
// metadata under "llama.", tensors named token_embd, blk.N.attn_q, ...,
// and the rows of the q and k projections permuted so that each head's
// rotary pairs are adjacent (llama.cpp rotates pairs (2i, 2i+1); Hugging
// Face, whose layout this engine computes in, rotates (i, i + d/2)).
// OpenGGUFCheckpoint maps all of it back: the config from the metadata,
// the tensors by their Hugging Face names, q and k un-permuted (a copy of
// those two; every other tensor aliases the mapping).
//
// What llama.cpp's llama architecture cannot say is kept in keys of ndbg's
// own (which llama.cpp ignores): ndbg.sliding_window and ndbg.layer_types
// (a model with sliding-window layers: llama.cpp attends over the whole
// context instead, so its results differ past the window), and
// ndbg.rope_scaling.* for llama3 RoPE scaling, which llama.cpp reads as the
// per-frequency factors of the rope_freqs tensor that WriteLlamaGGUF
// writes beside them.

// GGUF metadata keys of a LLaMA model.
const (
	ggufArch        = "general.architecture"
	ggufFileType    = "general.file_type"
	ggufQuantVer    = "general.quantization_version"
	ggufName        = "general.name"
	ggufLayerTypes  = "ndbg.layer_types"
	ggufSliding     = "ndbg.sliding_window"
	ggufRopeType    = "ndbg.rope_scaling.type"
	ggufRopeFactor  = "ndbg.rope_scaling.factor"
	ggufRopeLow     = "ndbg.rope_scaling.low_freq_factor"
	ggufRopeHigh    = "ndbg.rope_scaling.high_freq_factor"
	ggufRopeOrig    = "ndbg.rope_scaling.original_max_position_embeddings"
	ggufRopeFreqs   = "rope_freqs.weight"
	ggufTokenModel  = "tokenizer.ggml.model"
	ggufTokens      = "tokenizer.ggml.tokens"
	ggufBOS         = "tokenizer.ggml.bos_token_id"
	ggufEOS         = "tokenizer.ggml.eos_token_id"
	ggufLlamaPrefix = "llama."
)

// GGUF file types (llama_ftype) of the files ndbg writes.
const (
	GGUFFileF32   = 0
	GGUFFileQ4_0  = 2
	GGUFFileQ8_0  = 7
	GGUFFileQ4_KM = 15
	GGUFFileBF16  = 32
)

var ggufLayerName = regexp.MustCompile(`^blk\.(\d+)\.([a-z_]+)\.weight$`)

// ggufLayerSuffix maps llama.cpp's per-layer tensor names to Hugging Face's.
var ggufLayerSuffix = map[string]string{
	"attn_norm": InputNorm, "attn_q": QProj, "attn_k": KProj, "attn_v": VProj, "attn_output": OProj,
	"ffn_norm": PostNorm, "ffn_gate": GateProj, "ffn_up": UpProj, "ffn_down": DownProj,
}

// HFToGGUFName returns llama.cpp's name of a LLaMA tensor's Hugging Face
// name (false for a name it has none for).
func HFToGGUFName(hf string) (string, bool) {
	switch hf {
	case EmbedTokens:
		return "token_embd.weight", true
	case FinalNorm:
		return "output_norm.weight", true
	case LMHead:
		return "output.weight", true
	}
	rest, ok := strings.CutPrefix(hf, "model.layers.")
	if !ok {
		return "", false
	}
	l, suffix, ok := strings.Cut(rest, ".")
	if !ok {
		return "", false
	}
	if n, err := strconv.Atoi(l); err != nil || n < 0 || strconv.Itoa(n) != l {
		return "", false
	}
	for g, h := range ggufLayerSuffix {
		if h == suffix {
			return "blk." + l + "." + g + ".weight", true
		}
	}
	return "", false
}

// ggufToHFName is HFToGGUFName's inverse.
func ggufToHFName(g string) (string, bool) {
	switch g {
	case "token_embd.weight":
		return EmbedTokens, true
	case "output_norm.weight":
		return FinalNorm, true
	case "output.weight":
		return LMHead, true
	}
	m := ggufLayerName.FindStringSubmatch(g)
	if m == nil {
		return "", false
	}
	suffix, ok := ggufLayerSuffix[m[2]]
	if !ok {
		return "", false
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || strconv.Itoa(n) != m[1] {
		return "", false
	}
	return LayerTensor(n, suffix), true
}

// ggufInt reads an integer metadata value of key into dst, checking its
// range; absent keys leave dst as it is and report whether it was there.
func (g *GGUFFile) ggufInt(key string, dst *int, required bool) error {
	v, ok := g.meta[key]
	if !ok {
		if required {
			return fmt.Errorf("metadata %s is missing", key)
		}
		return nil
	}
	n, isInt := v.Int()
	if !isInt || n < 0 || n > math.MaxInt32 {
		return fmt.Errorf("metadata %s must be a non-negative integer below 2³¹", key)
	}
	*dst = int(n)
	return nil
}

func (g *GGUFFile) ggufFloat(key string, dst *float64) error {
	v, ok := g.meta[key]
	if !ok {
		return nil
	}
	f, isFloat := v.Float()
	if !isFloat {
		return fmt.Errorf("metadata %s must be a float", key)
	}
	*dst = f
	return nil
}

// LlamaConfig returns the Hugging Face config of a LLaMA model in GGUF
// (general.architecture "llama"), defaulted and validated as a config.json
// is (Config.Validate); keys the engine would compute differently from
// llama.cpp (partial rotary, linear or YaRN scaling, experts) are errors.
func (g *GGUFFile) LlamaConfig() (*Config, error) {
	arch, _ := g.meta[ggufArch].String()
	if arch != "llama" {
		return nil, fmt.Errorf("weights: %s: general.architecture is %q, not \"llama\"", g.path, truncate(arch, 32))
	}
	c := &Config{Architectures: []string{"LlamaForCausalLM"}, ModelType: "llama", HiddenAct: "silu", RopeTheta: 10000, RMSNormEps: 1e-5}
	errf := func(err error) (*Config, error) { return nil, fmt.Errorf("weights: %s: %w", g.path, err) }
	p := ggufLlamaPrefix
	for _, f := range []struct {
		key string
		dst *int
	}{
		{p + "context_length", &c.MaxPositionEmbeddings},
		{p + "embedding_length", &c.HiddenSize},
		{p + "block_count", &c.NumHiddenLayers},
		{p + "feed_forward_length", &c.IntermediateSize},
		{p + "attention.head_count", &c.NumAttentionHeads},
	} {
		if err := g.ggufInt(f.key, f.dst, true); err != nil {
			return errf(err)
		}
	}
	c.NumKeyValueHeads = c.NumAttentionHeads
	if err := g.ggufInt(p+"attention.head_count_kv", &c.NumKeyValueHeads, false); err != nil {
		return errf(err)
	}
	if c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if err := g.ggufInt(p+"attention.key_length", &c.HeadDim, false); err != nil {
		return errf(err)
	}
	vdim, rdim := c.HeadDim, c.HeadDim
	if err := g.ggufInt(p+"attention.value_length", &vdim, false); err != nil {
		return errf(err)
	}
	if err := g.ggufInt(p+"rope.dimension_count", &rdim, false); err != nil {
		return errf(err)
	}
	if vdim != c.HeadDim {
		return errf(fmt.Errorf("attention.value_length %d differs from key_length %d (not supported)", vdim, c.HeadDim))
	}
	if rdim != c.HeadDim {
		return errf(fmt.Errorf("rope.dimension_count %d differs from the head dimension %d (partial rotary is not supported)", rdim, c.HeadDim))
	}
	if err := g.ggufFloat(p+"rope.freq_base", &c.RopeTheta); err != nil {
		return errf(err)
	}
	if err := g.ggufFloat(p+"attention.layer_norm_rms_epsilon", &c.RMSNormEps); err != nil {
		return errf(err)
	}
	experts := 0
	if err := g.ggufInt(p+"expert_count", &experts, false); err != nil {
		return errf(err)
	}
	if experts > 0 {
		return errf(fmt.Errorf("expert_count %d: mixture-of-experts models are not supported", experts))
	}
	if v, ok := g.meta[p+"rope.scaling.type"]; ok {
		if s, _ := v.String(); s != "none" {
			return errf(fmt.Errorf("rope.scaling.type %q is not supported", truncate(s, 32)))
		}
	}
	// The vocabulary: llama.vocab_size, else the tokenizer's tokens, else
	// the embedding's rows.
	if toks, ok := g.meta[ggufTokens].Strings(); ok {
		c.VocabSize = len(toks)
	}
	if err := g.ggufInt(p+"vocab_size", &c.VocabSize, false); err != nil {
		return errf(err)
	}
	if i, ok := g.byName["token_embd.weight"]; ok && c.VocabSize == 0 && len(g.tensors[i].shape) == 2 {
		c.VocabSize = g.tensors[i].shape[0]
	}
	_, hasOutput := g.byName["output.weight"]
	c.TieWordEmbeddings = !hasOutput
	for _, id := range []struct {
		key string
		bos bool
	}{{ggufBOS, true}, {ggufEOS, false}} {
		n := -1
		if err := g.ggufInt(id.key, &n, false); err != nil {
			return errf(err)
		}
		if n < 0 {
			continue
		}
		if id.bos {
			c.BOSTokenID = &n
		} else {
			c.EOSTokenIDs = []int{n}
		}
	}
	if err := g.ggufInt(ggufSliding, &c.SlidingWindow, false); err != nil {
		return errf(err)
	}
	if v, ok := g.meta[ggufLayerTypes]; ok {
		lt, isStrings := v.Strings()
		if !isStrings {
			return errf(fmt.Errorf("metadata %s must be an array of strings", ggufLayerTypes))
		}
		c.LayerTypes = lt
	} else if c.NumHiddenLayers > 0 && c.NumHiddenLayers <= maxLayers {
		c.LayerTypes = make([]string, c.NumHiddenLayers)
		for i := range c.LayerTypes {
			c.LayerTypes[i] = FullAttention
		}
	}
	if v, ok := g.meta[ggufRopeType]; ok {
		rt, _ := v.String()
		c.RopeScaling = &RopeScaling{RopeType: rt}
		for _, f := range []struct {
			key string
			dst *float64
		}{{ggufRopeFactor, &c.RopeScaling.Factor}, {ggufRopeLow, &c.RopeScaling.LowFreqFactor}, {ggufRopeHigh, &c.RopeScaling.HighFreqFactor}} {
			if err := g.ggufFloat(f.key, f.dst); err != nil {
				return errf(err)
			}
		}
		if err := g.ggufInt(ggufRopeOrig, &c.RopeScaling.OriginalMaxPositionEmbeddings, false); err != nil {
			return errf(err)
		}
		if rt != "llama3" {
			return errf(fmt.Errorf("metadata %s %q: only llama3 scaling is written to GGUF", ggufRopeType, truncate(rt, 32)))
		}
	} else if _, ok := g.byName[ggufRopeFreqs]; ok {
		return errf(fmt.Errorf("a %s tensor without %s: the RoPE scaling it encodes is not known here", ggufRopeFreqs, ggufRopeType))
	}
	if err := c.Validate(); err != nil {
		return errf(err)
	}
	return c, nil
}

// OpenGGUFCheckpoint opens a LLaMA model in GGUF as a Checkpoint: its
// config from the metadata (LlamaConfig), its tensors by their Hugging Face
// names (the q and k projections un-permuted into copies, every other
// tensor aliasing the mapping). A tensor that is not one of a LLaMA
// model's (by llama.cpp's names) is an error, as an unknown tensor in a
// safetensors checkpoint is for the model.
func OpenGGUFCheckpoint(path string) (*Checkpoint, error) {
	g, err := OpenGGUF(path)
	if err != nil {
		return nil, err
	}
	ck, err := ggufCheckpoint(g)
	if err != nil {
		g.Close()
		return nil, err
	}
	return ck, nil
}

// GGUFCheckpoint is OpenGGUFCheckpoint on a parsed file (ParseGGUF), which
// the checkpoint then owns.
func GGUFCheckpoint(g *GGUFFile) (*Checkpoint, error) { return ggufCheckpoint(g) }

func ggufCheckpoint(g *GGUFFile) (*Checkpoint, error) {
	cfg, err := g.LlamaConfig()
	if err != nil {
		return nil, err
	}
	ck := &Checkpoint{Dir: g.path, Config: cfg, gguf: g, ggufNames: map[string]string{}, used: map[string]bool{}}
	for _, t := range g.tensors {
		if t.name == ggufRopeFreqs {
			continue // the llama3 factors, which the config has (checked below)
		}
		hf, ok := ggufToHFName(t.name)
		if !ok {
			hf = "gguf:" + t.name // reported as unused by the model
		}
		ck.ggufNames[hf] = t.name
	}
	if i, ok := g.byName[ggufRopeFreqs]; ok {
		if err := checkRopeFreqs(g, g.tensors[i], cfg); err != nil {
			return nil, fmt.Errorf("weights: %s: %w", g.path, err)
		}
	}
	return ck, nil
}

// GGUF returns the GGUF file of a checkpoint opened from one (nil for a
// safetensors checkpoint): its metadata holds the tokenizer.
func (ck *Checkpoint) GGUF() *GGUFFile { return ck.gguf }

// ggufTensor returns the tensor of Hugging Face name hf from the GGUF
// file, with the q and k projections' rows un-permuted (a copy).
func (ck *Checkpoint) ggufTensor(hf string) (*Tensor, error) {
	name, ok := ck.ggufNames[hf]
	if !ok {
		return nil, fmt.Errorf("weights: %s: no tensor %q", ck.Dir, truncate(hf, 64))
	}
	t, err := ck.gguf.Tensor(name)
	if err != nil {
		return nil, err
	}
	t.Name = hf
	heads := 0
	switch {
	case strings.HasSuffix(hf, "."+QProj):
		heads = ck.Config.NumAttentionHeads
	case strings.HasSuffix(hf, "."+KProj):
		heads = ck.Config.NumKeyValueHeads
	}
	if heads == 0 {
		return t, nil
	}
	perm, err := PermuteRoPERows(t, heads, false)
	if err != nil {
		return nil, fmt.Errorf("weights: %s: %w", ck.Dir, err)
	}
	return perm, nil
}

// PermuteRoPERows returns a copy of a 2-D q or k projection of heads heads
// with its rows reordered between Hugging Face's layout and llama.cpp's:
// toGGUF moves row h·d + s·d/2 + i (half s of head h, pair i) to row
// h·d + 2i + s, as convert_hf_to_gguf.py does; !toGGUF moves it back. Rows
// are moved whole, so a quantized tensor is permuted exactly.
func PermuteRoPERows(t *Tensor, heads int, toGGUF bool) (*Tensor, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	if len(t.Shape) != 2 || heads <= 0 || t.Shape[0]%heads != 0 || (t.Shape[0]/heads)%2 != 0 {
		return nil, fmt.Errorf("tensor %q: shape %v is not %d heads of an even dimension", t.Name, t.Shape, heads)
	}
	rows := t.Shape[0]
	rb := len(t.Data) / rows
	d := rows / heads
	out := &Tensor{Name: t.Name, DType: t.DType, Shape: []int{rows, t.Shape[1]}, Data: make([]byte, len(t.Data))}
	for h := range heads {
		for s := range 2 {
			for i := range d / 2 {
				hf := h*d + s*d/2 + i
				gg := h*d + 2*i + s
				src, dst := gg, hf
				if toGGUF {
					src, dst = hf, gg
				}
				copy(out.Data[dst*rb:(dst+1)*rb], t.Data[src*rb:(src+1)*rb])
			}
		}
	}
	return out, nil
}

// RopeFreqFactors returns llama.cpp's rope_freqs tensor values for llama3
// scaling: per rotary pair, the factor its frequency is divided by
// (convert_hf_to_gguf.py's LlamaModel), so that llama.cpp rotates as the
// Hugging Face config says.
func RopeFreqFactors(c *Config) []float32 {
	s := c.RopeScaling
	half := c.HeadDim / 2
	out := make([]float32, half)
	lowWavelen := float64(s.OriginalMaxPositionEmbeddings) / s.LowFreqFactor
	highWavelen := float64(s.OriginalMaxPositionEmbeddings) / s.HighFreqFactor
	for i := range out {
		freq := 1 / math.Pow(c.RopeTheta, float64(2*i)/float64(c.HeadDim))
		wavelen := 2 * math.Pi / freq
		switch {
		case wavelen < highWavelen:
			out[i] = 1
		case wavelen > lowWavelen:
			out[i] = float32(s.Factor)
		default:
			smooth := (float64(s.OriginalMaxPositionEmbeddings)/wavelen - s.LowFreqFactor) / (s.HighFreqFactor - s.LowFreqFactor)
			out[i] = float32(1 / ((1-smooth)/s.Factor + smooth))
		}
	}
	return out
}

// checkRopeFreqs checks that a file's rope_freqs tensor is what its
// ndbg.rope_scaling keys say (else llama.cpp and ndbg would rotate apart).
func checkRopeFreqs(g *GGUFFile, t ggufTensor, c *Config) error {
	if t.dtype != F32 || len(t.shape) != 1 || t.shape[0] != c.HeadDim/2 {
		return fmt.Errorf("%s is %v of shape %v, want F32 of [%d]", ggufRopeFreqs, t.dtype, t.shape, c.HeadDim/2)
	}
	tt, err := g.Tensor(t.name)
	if err != nil {
		return err
	}
	got, err := tt.F32()
	if err != nil {
		return err
	}
	for i, want := range RopeFreqFactors(c) {
		if math.Abs(float64(got[i]-want)) > 1e-5*math.Abs(float64(want)) {
			return fmt.Errorf("%s[%d] is %v, but %s says %v", ggufRopeFreqs, i, got[i], ggufRopeType, want)
		}
	}
	return nil
}

// LlamaGGUFMetadata returns the metadata of a LLaMA model of config c as
// llama.cpp's converter writes it (general.*, llama.*), with ndbg's own
// keys for what llama.cpp's llama architecture does not hold (see the top
// of this file), fileType as general.file_type, and the begin- and
// end-of-sequence ids (tokenizer.ggml.bos_token_id, eos_token_id: the first
// of several, as llama.cpp has one). The tokenizer's other keys are the
// caller's to add.
func LlamaGGUFMetadata(c *Config, name string, fileType uint32) []GGUFKV {
	p := ggufLlamaPrefix
	kvs := []GGUFKV{
		{ggufArch, GGUFString("llama")},
		{ggufName, GGUFString(name)},
		{p + "context_length", GGUFUint32(uint32(c.MaxPositionEmbeddings))},
		{p + "embedding_length", GGUFUint32(uint32(c.HiddenSize))},
		{p + "block_count", GGUFUint32(uint32(c.NumHiddenLayers))},
		{p + "feed_forward_length", GGUFUint32(uint32(c.IntermediateSize))},
		{p + "attention.head_count", GGUFUint32(uint32(c.NumAttentionHeads))},
		{p + "attention.head_count_kv", GGUFUint32(uint32(c.NumKeyValueHeads))},
		{p + "attention.key_length", GGUFUint32(uint32(c.HeadDim))},
		{p + "attention.value_length", GGUFUint32(uint32(c.HeadDim))},
		{p + "rope.dimension_count", GGUFUint32(uint32(c.HeadDim))},
		{p + "rope.freq_base", GGUFFloat32(float32(c.RopeTheta))},
		{p + "attention.layer_norm_rms_epsilon", GGUFFloat32(float32(c.RMSNormEps))},
		{p + "vocab_size", GGUFUint32(uint32(c.VocabSize))},
		{ggufFileType, GGUFUint32(fileType)},
	}
	if c.BOSTokenID != nil {
		kvs = append(kvs, GGUFKV{ggufBOS, GGUFUint32(uint32(*c.BOSTokenID))})
	}
	if len(c.EOSTokenIDs) > 0 { // llama.cpp has one end-of-sequence id: the first
		kvs = append(kvs, GGUFKV{ggufEOS, GGUFUint32(uint32(c.EOSTokenIDs[0]))})
	}
	if fileType != GGUFFileF32 && fileType != GGUFFileBF16 {
		kvs = append(kvs, GGUFKV{ggufQuantVer, GGUFUint32(2)})
	}
	sliding := false
	for _, t := range c.LayerTypes {
		sliding = sliding || t == SlidingAttention
	}
	if sliding {
		kvs = append(kvs, GGUFKV{ggufSliding, GGUFUint32(uint32(c.SlidingWindow))}, GGUFKV{ggufLayerTypes, GGUFStrings(c.LayerTypes)})
	}
	if s := c.RopeScaling; s != nil && s.RopeType == "llama3" {
		kvs = append(kvs,
			GGUFKV{ggufRopeType, GGUFString("llama3")},
			GGUFKV{ggufRopeFactor, GGUFFloat32(float32(s.Factor))},
			GGUFKV{ggufRopeLow, GGUFFloat32(float32(s.LowFreqFactor))},
			GGUFKV{ggufRopeHigh, GGUFFloat32(float32(s.HighFreqFactor))},
			GGUFKV{ggufRopeOrig, GGUFUint32(uint32(s.OriginalMaxPositionEmbeddings))})
	}
	return kvs
}

// WriteLlamaGGUF writes a LLaMA model of config c as llama.cpp reads it:
// LlamaGGUFMetadata(c, name, fileType) then extra (the tokenizer's keys),
// and the tensors, given by their Hugging Face names (LlamaTensors' names;
// shapes and dtypes as they are to be written), whose data data(i) returns
// in Hugging Face layout, one at a time; the q and k projections are
// permuted into llama.cpp's row order here, and a rope_freqs tensor is
// added for llama3 RoPE scaling.
func WriteLlamaGGUF(w io.Writer, c *Config, name string, fileType uint32, extra []GGUFKV, tensors []GGUFTensorInfo, data func(i int) (*Tensor, error)) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("weights: GGUF: %w", err)
	}
	if s := c.RopeScaling; s != nil && s.RopeType != "llama3" && s.RopeType != "default" {
		return fmt.Errorf("weights: GGUF: rope_scaling %q cannot be written for llama.cpp", s.RopeType)
	}
	if c.AttentionBias || c.MLPBias {
		return errors.New("weights: GGUF: biases are not written (llama.cpp's llama architecture has none here)")
	}
	kvs := append(LlamaGGUFMetadata(c, name, fileType), extra...)
	infos := make([]GGUFTensorInfo, 0, len(tensors)+1)
	for _, t := range tensors {
		g, ok := HFToGGUFName(t.Name)
		if !ok {
			return fmt.Errorf("weights: GGUF: tensor %q has no llama.cpp name", t.Name)
		}
		infos = append(infos, GGUFTensorInfo{Name: g, DType: t.DType, Shape: t.Shape})
	}
	var freqs []float32
	if s := c.RopeScaling; s != nil && s.RopeType == "llama3" {
		freqs = RopeFreqFactors(c)
		infos = append(infos, GGUFTensorInfo{Name: ggufRopeFreqs, DType: F32, Shape: []int{len(freqs)}})
	}
	return WriteGGUF(w, kvs, infos, func(i int, w io.Writer) error {
		if i == len(tensors) { // rope_freqs
			t, err := NewTensor(ggufRopeFreqs, F32, []int{len(freqs)}, freqs)
			if err != nil {
				return err
			}
			_, err = w.Write(t.Data)
			return err
		}
		t, err := data(i)
		if err != nil {
			return err
		}
		if t.DType != tensors[i].DType || !slices.Equal(t.Shape, tensors[i].Shape) {
			return fmt.Errorf("data is %v of shape %v, want %v of %v", t.DType, t.Shape, tensors[i].DType, tensors[i].Shape)
		}
		heads := 0
		switch {
		case strings.HasSuffix(t.Name, "."+QProj):
			heads = c.NumAttentionHeads
		case strings.HasSuffix(t.Name, "."+KProj):
			heads = c.NumKeyValueHeads
		}
		if heads > 0 {
			if t, err = PermuteRoPERows(t, heads, true); err != nil {
				return err
			}
		}
		_, err = w.Write(t.Data)
		return err
	})
}
