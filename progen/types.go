package progen

import "strings"

// Types are written as Python type hints ("int", "list[str]",
// "dict[str,int]", "tuple[int,str]"): comparable, printable, and enough for
// the handful of shapes the generator builds. "fn" is a one-argument
// int -> int lambda held in a variable.
const (
	tInt   = "int"
	tFloat = "float"
	tBool  = "bool"
	tStr   = "str"
	tLI    = "list[int]"
	tLS    = "list[str]"
	tLLI   = "list[list[int]]"
	tLTIS  = "list[tuple[int,str]]"
	tLTSI  = "list[tuple[str,int]]"
	tDSI   = "dict[str,int]"
	tDII   = "dict[int,int]"
	tDSS   = "dict[str,str]"
	tDIS   = "dict[int,str]"
	tDSLI  = "dict[str,list[int]]"
	tSI    = "set[int]"
	tTII   = "tuple[int,int]"
	tTSI   = "tuple[str,int]"
	tTIS   = "tuple[int,str]"
	tFn    = "fn"
)

func isList(t string) bool  { return strings.HasPrefix(t, "list[") }
func isDict(t string) bool  { return strings.HasPrefix(t, "dict[") }
func isSet(t string) bool   { return strings.HasPrefix(t, "set[") }
func isTuple(t string) bool { return strings.HasPrefix(t, "tuple[") }

// args splits the top-level type arguments of t: "dict[str,list[int]]" ->
// ["str", "list[int]"].
func args(t string) []string {
	i := strings.IndexByte(t, '[')
	if i < 0 || !strings.HasSuffix(t, "]") {
		return nil
	}
	inner := t[i+1 : len(t)-1]
	var out []string
	depth, start := 0, 0
	for j := 0; j < len(inner); j++ {
		switch inner[j] {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, inner[start:j])
				start = j + 1
			}
		}
	}
	return append(out, inner[start:])
}

// elem is the element type of a list or set, the item type of a str.
func elem(t string) string {
	if t == tStr {
		return tStr
	}
	a := args(t)
	if len(a) == 1 {
		return a[0]
	}
	return ""
}

// keyT and valT are a dict's key and value types.
func keyT(t string) string { return args(t)[0] }
func valT(t string) string { return args(t)[1] }

// iterElem is what a for loop over a value of type t binds.
func iterElem(t string) string {
	switch {
	case t == tStr:
		return tStr
	case isList(t), isSet(t):
		return elem(t)
	case isDict(t):
		return keyT(t)
	}
	return ""
}

// orderable types can be compared with < and sorted.
func orderable(t string) bool {
	return t == tInt || t == tFloat || t == tStr || isTuple(t)
}

// mutable types must never be aliased by plain assignment, so that a loop
// over one cannot be lengthened through another name.
func mutable(t string) bool { return isList(t) || isDict(t) || isSet(t) }
