// Package statetree is ndbg's real debugger: the state tree of one traced
// call and every debugger action as an exact transition on it, plus the
// stochastic policy that samples training trajectories over trees.
package statetree
