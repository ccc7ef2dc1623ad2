// Package statetree is ndbg's real debugger's rules: the state tree of one
// traced call, every debugger action as an exact transition on it, and the
// stochastic policy that samples training trajectories over trees. The
// neural debugger imitates it and is graded against it (ndbg.Recorded walks
// a tree); the live real debugger (ndbg.Real, trace.StartLive) takes every
// action by the same rules on a running program.
//
// # The tree
//
// Build turns trace.Run's events of one call into a Tree. The states are
// the events in execution order, indexed 0..End-1; state 0 is the entry's
// call event. Position End (= the number of states) means the program has
// finished: a forward action that runs past the last state returns End,
// which the DSL writes as <|end_of_text|>. A state's node depth is its call
// depth (0 for the entry). An activation is one run of a frame from a call
// state to its return state: an ordinary call, or one resume of a
// generator up to its next yield (CPython reports each yield as a return
// and each resume as a new call). Depths nest strictly: a call state is one
// level deeper than the state before it unless that is a return (then it
// is a sibling call at the same depth); any other state after a return is
// one level shallower. So between an activation's call and its return
// every state at its depth belongs to it, and the rules below, written
// with depths, mean "this frame or a caller".
//
// # Actions
//
// Forward, from a state s at depth d (what pdb does is checked by the
// conformance test against CPython's bdb, see below):
//
//   - step_into (pdb step): s+1, the next call, line, return or exception
//     state, entering callees.
//   - step_over (pdb next): the first state after s at depth <= d: the next
//     stop in the current activation or a caller, callee subtrees skipped
//     (their results appear in the locals). From a return state that is the
//     very next state: the caller, or a sibling call made by the same line.
//   - step_return (pdb return): from a call, line or exception state, the
//     return state ending the current activation. If an exception escapes
//     the frame that is its return state with value None (CPython's return
//     event after an exception); the exception itself is shown by the
//     exception states, which step_over reaches. From a return state: the
//     first state after s at depth < d, the caller's next stop.
//   - breakpoint:L (pdb break L, continue): the first line state after s at
//     line L, or End. Breakpoints stop at line events only, never at call,
//     return or exception states (as bdb).
//   - continue:L1,...,Lk: the first line state after s at any Li, or End
//     (End at once when k = 0).
//
// Inverse, walking backwards in time from a state t at depth d (or from
// End); each mirrors a forward action:
//
//   - inv_step_into: t-1 (from End: the last state).
//   - inv_step_over: the last state before t at depth <= d (from End: the
//     last state at depth 0, the entry's return): the previous stop in the
//     current activation or a caller, stepping back over callee subtrees.
//     From a call state that is the caller's state that made the call, or
//     the return of a sibling called earlier from the same line.
//   - inv_step_return: from a line, return or exception state, the call
//     state that started the current activation: the frame's inputs. For a
//     generator that is the latest resume (each resume is its own
//     activation, whose call state shows the locals at the resume), not the
//     first call. From a call state: the call state of the caller's
//     activation, so repeating it climbs the stack. From End: state 0.
//   - inv_breakpoint:L: the last line state before t at line L, or 0.
//   - inv_continue:L1,...: the last line state before t at any Li, or 0.
//
// Forward actions from End and inverse actions from 0 are errors
// (ErrFinished, ErrAtStart); every other action moves at least one state.
//
// Breakpoints kept set (ApplyBreakpoints; a debugging session's `break`
// lines, which the real backend passes with every action): as pdb, every
// forward action also stops at the first line state after s at any of the
// lines, if that comes before its own stop. So step_over and step_return
// stop at a breakpoint in a callee or in a comprehension's frame on the
// same line (fact(3) with a breakpoint at `return n * fact(n - 1)`: next
// from there stops at that line again in fact(2), not at the return). The
// inverse actions mirror it, as a reverse debugger does: they stop at the
// last line state before t at any of the lines, if that comes after their
// own stop. Apply is ApplyBreakpoints with none; the DSL's actions carry no
// breakpoints, so training trajectories use Apply.
//
// Properties (tested on real traces, TestInverseProperties): for every s,
// inv_step_into(step_into(s)) = s; step_into(s) <= step_over(s) <=
// step_return(s) and inv_step_into(t) >= inv_step_over(t) >=
// inv_step_return(t); if t = step_over(s) has the depth of s then
// inv_step_over(t) = s (and s = inv_step_over(t) at equal depth gives
// step_over(s) = t), while if t is shallower (s was a return) then
// inv_step_over(t) < s: backwards, the callee's subtree is skipped as a
// whole; every state strictly between s and step_over(s) is deeper than s;
// for a non-return s, step_return(s) is a return state in the same frame at
// the same depth and step_return(inv_step_return(s)) = step_return(s); with
// b = breakpoint:L(s) < End, b is a line state at L and inv_breakpoint:L(b)
// <= s, = s when s is itself a line state at L. With breakpoints kept set
// (TestBreakpointProperties, against a plain scan): each action stops as
// described above; inv_step_into(step_into(s)) = s; step_over and
// inv_step_over remain inverses between states of equal depth, both ways;
// and a step_return that reaches its return is undone by inv_step_return to
// s or earlier in the same activation.
//
// # Differences from pdb
//
// The conformance test (conformance_test.go, testdata/bdbdrive.py) drives
// CPython's bdb.Bdb, the engine under pdb, on hand-written programs
// (loops, recursion, helpers, generators, yield from, comprehensions,
// lambdas, caught and uncaught exceptions, early returns, closures,
// classes, with), the CRUXEval dev items and programs of every progen
// family, with systematic and random
// sessions of step, next, return, break+continue and continue with several
// breakpoints, and compares every stop (event, line, depth, number of calls
// so far, locals, return value) with the tree. TestConformanceBreakpoints
// does the same with 2 to 4 breakpoints kept set for the whole session
// (as a pdb user's break lines stay set while they step: next, return,
// continue and break all stop at them), on programs with recursion,
// loops, nested comprehensions and exceptions through breakpoint lines,
// the hand-written programs and progen's families. Apart from the
// following deliberate differences, each asserted by the test, every stop
// agrees:
//
//  1. Start: the tree starts at the entry's call state (its arguments);
//     pdb's runcall first stops at the entry's first line, which is
//     step_into(0).
//
//  2. End: the tree ends at the entry's return. pdb may stop after it, in
//     generators the entry left suspended, when GeneratorExit is thrown into
//     them as the entry's frame is freed; Build drops such events.
//
//  3. Generators, step_over: the tree stops at the yield (the activation's
//     return state, showing the yielded value). bdb ignores a generator's
//     return events under next and return, so pdb's next runs on to the
//     generator's next line or exception in a later resume, or never stops
//     (or at a breakpoint kept set that it reaches first).
//
//  4. Generators, step_return: the tree stops at the yield (as 3). pdb's
//     return in a generator stops only at a StopIteration or GeneratorExit
//     exception in another frame, or at a breakpoint kept set, or runs to
//     the end.
//
//  5. Order of locals: the same names and values, but CPython 3.11 keeps one
//     f_locals dict per frame and adds a name when a read first sees it, so
//     the tracer (reading at every event) lists locals in order of first
//     assignment, while pdb, reading only at its stops, may list a name
//     bound between two stops in co_varnames order. Not a different stop.
//
// The tree treats every activation alike so that a model can learn one
// rule; pdb's generator behaviour follows its frame object across resumes.
// The live real backend takes pdb's own rule for ndbg debug and ndbg dap
// (ndbg.Session.DoLikePdb, checked against python3 -m pdb by
// TestDebugLikePdb in cmd/ndbg), and the tree's for Session.Do.
// Frames outside the program (library code, a lambda passed in the call's
// arguments) are not in the trace, as with pdb's skip option.
//
// # The sampling policy
//
// A Sampler draws debugging sessions over a tree (Params, DefaultParams):
// a start state (the entry's call with probability StartAtEntry, else
// uniform), then MinSteps..MaxSteps actions drawn by Weights, inverse ones
// never at state 0. Breakpoint lines come from line states that will be hit
// (or were hit, for inverse actions), near (within NearWindow states) with
// probability Near and otherwise anywhere, plus with probability Miss any
// code line, which may never stop; continue takes 1..MaxContinueLines of
// them. A session stops at End. Each Sample carries the dsl.Trajectory
// (return and exception states without locals), the positions and the
// horizon of each step (Horizon: states skipped, |next-pos|-1); Stats
// aggregate counts, horizons and endings by action kind.
package statetree
