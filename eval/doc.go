// Package eval measures a neural debugger the way the paper does
// (docs/neural-debugger.md), against the real debugger as ground truth:
//
//   - Next-state exact match (NextState): held-out programs (progen with a
//     seed never used for training, or CRUXEval-style JSONL) are traced for
//     real in batch mode; (state, action) pairs are drawn over each state
//     tree with the training data's policy (or every state with the six
//     line-free actions); the backend starts at the real state (StartAt: one
//     action from a real state, no earlier history) and its next state is
//     compared with the real one. Results are split by action kind, by
//     component (event, line, locals, value) and by horizon (states skipped).
//   - CRUXEval-O and -I pass@1 (CRUXEval), scored the official way by
//     executing the item's code and an assert in a fresh sandboxed python3
//     with a 3 s limit (Scorer). -O predicts f's return value from its call
//     by step_return, by breakpoints on f's return lines, or by step_over
//     steps; -I starts at a return state of f carrying the reference output,
//     steps back with inv_step_return and calls f with the predicted
//     arguments. Greedy decoding gives pass@1 from one sample; with several
//     samples pass@1 is the unbiased estimate (mean of correct/samples).
//   - A Summary renders both as JSON and as a Markdown report with PNG
//     charts drawn with the standard library (a hand-drawn 5x7 font).
//
// Files: nextstate.go drives the next-state evaluation and grade.go grades
// one prediction and tallies the grades; cruxeval.go drives CRUXEval,
// strategy.go answers one item (forward to the return, or inverse from it)
// and score.go executes the official assert; items.go reads items and
// signature.go the entry function's signature, return lines and call
// arguments; backend.go holds the neural and real backends; report.go,
// calibration.go, plot.go and font.go render the results.
//
// The Real backend grades the real debugger against itself: it must score
// 100% on next states and CRUXEval-O, which checks the harness end to end.
// Sessions of one model run concurrently, one item per worker.
package eval
