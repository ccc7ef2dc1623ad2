package dsl

import "strings"

// The special tokens of the DSL, as text. Each is one token in CWM's
// vocabulary (ids below); content (source, line texts, JSON) never contains
// any of them, so the text splits into tokens unambiguously.
const (
	BeginOfText       = "<|begin_of_text|>"
	EndOfText         = "<|end_of_text|>"
	FrameSep          = "<|frame_sep|>"
	ActionSep         = "<|action_sep|>"
	ReturnSep         = "<|return_sep|>"
	CallSep           = "<|call_sep|>"
	LineSep           = "<|line_sep|>"
	ExceptionSep      = "<|exception_sep|>"
	ArgSep            = "<|arg_sep|>"
	TraceContextStart = "<|trace_context_start|>"
)

// SpecialToken is one special token: its text and its id in CWM's
// 128256-token vocabulary (Llama-3's byte-level BPE plus 256 reserved slots
// from 128000).
type SpecialToken struct {
	Text string
	ID   int
}

// firstActionID is the id of <|step_into|>: the action tokens fill CWM's
// reserved slots after <|trace_context_start|> (128107), in ActionKind order.
const firstActionID = 128108

// specialTokens is the fixed order SpecialTokens returns: CWM's tokens by
// id, then the action tokens by ActionKind.
var specialTokens = [...]SpecialToken{
	{BeginOfText, 128000},
	{EndOfText, 128001},
	{FrameSep, 128100},
	{ActionSep, 128101},
	{ReturnSep, 128102},
	{CallSep, 128103},
	{LineSep, 128104},
	{ExceptionSep, 128105},
	{ArgSep, 128106},
	{TraceContextStart, 128107},
	{"<|step_into|>", firstActionID + 0},
	{"<|step_over|>", firstActionID + 1},
	{"<|step_return|>", firstActionID + 2},
	{"<|breakpoint|>", firstActionID + 3},
	{"<|continue|>", firstActionID + 4},
	{"<|inv_step_into|>", firstActionID + 5},
	{"<|inv_step_over|>", firstActionID + 6},
	{"<|inv_step_return|>", firstActionID + 7},
	{"<|inv_breakpoint|>", firstActionID + 8},
	{"<|inv_continue|>", firstActionID + 9},
}

// SpecialTokens returns every special token of the DSL with its CWM id, in a
// fixed order: <|begin_of_text|>, <|end_of_text|>, CWM's eight trace tokens
// by id (128100-128107), then one action token per ActionKind from
// StepInto to InvContinue (128108-128117). The slice is a fresh copy.
func SpecialTokens() []SpecialToken {
	out := make([]SpecialToken, len(specialTokens))
	copy(out, specialTokens[:])
	return out
}

// Token returns the action's special token, "<|step_into|>" etc., or ""
// for an invalid kind.
func (k ActionKind) Token() string {
	if k < StepInto || k > InvContinue {
		return ""
	}
	return specialTokens[10+int(k-StepInto)].Text
}

// Token returns the event's frame token (<|call_sep|>, ...), or "" for an
// invalid event.
func (e Event) Token() string {
	switch e {
	case Call:
		return CallSep
	case Line:
		return LineSep
	case Return:
		return ReturnSep
	case Exception:
		return ExceptionSep
	}
	return ""
}

// tok identifies a special token found in text: its index in specialTokens.
type tok int8

const (
	tokNone tok = iota - 1
	tokBegin
	tokEnd
	tokFrame
	tokAction
	tokReturn
	tokCall
	tokLine
	tokException
	tokArg
	tokContext
	tokFirstAction // StepInto; the others follow in ActionKind order
)

// maxTokenLen is the length of the longest special token text.
const maxTokenLen = len(TraceContextStart)

// tokenAt reports which special token starts at s[i:], or tokNone.
func tokenAt(s string, i int) tok {
	if i+4 > len(s) || s[i] != '<' || s[i+1] != '|' {
		return tokNone
	}
	// The name is [a-z_]+ and is closed by "|>" within maxTokenLen bytes.
	end := i + 2
	lim := min(len(s), i+maxTokenLen)
	for end < lim && (s[end] >= 'a' && s[end] <= 'z' || s[end] == '_') {
		end++
	}
	if end+2 > len(s) || s[end] != '|' || s[end+1] != '>' {
		return tokNone
	}
	return lookupToken(s[i : end+2])
}

// lookupToken maps the text of a special token to its tok, or tokNone.
func lookupToken(t string) tok {
	for i := range specialTokens {
		if specialTokens[i].Text == t {
			return tok(i)
		}
	}
	return tokNone
}

// specialIndex returns the byte offset of the first special token inside s,
// or -1.
func specialIndex(s string) int {
	off := 0
	for {
		j := strings.Index(s[off:], "<|")
		if j < 0 {
			return -1
		}
		if tokenAt(s, off+j) != tokNone {
			return off + j
		}
		off += j + 2
	}
}
