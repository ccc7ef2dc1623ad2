// Package neural is the neural debugger's decoding engine: a Model (an
// inference engine, its tokenizer, the constrained decoder's vocabulary,
// each program's compiled grammar and the model state after its source,
// shared by every session) and the Engines that predict one session's
// states frame by frame under the grammar (Start, StartAt), with their
// confidence, the session's history that answers the actions it decides
// (history.go: a step back to the stop shown before, steps back after the
// end), the prompt that shows a long program in part (prompt.go), and the
// emulation of CWM's debugger over plain trace text (CWMEngine), only for
// models without the DSL's action tokens (CheckCWM).
// The root package ndbg wraps it as the Neural and CWM backends.
package neural
