package ndbg_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ndbg/ndbg"
	"github.com/ndbg/ndbg/dsl"
)

func TestCompare(t *testing.T) {
	real := &ndbg.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "it", Repr: "<list_iterator object at 0x7f01>"}, {Name: "x", Repr: "1"}}}
	reordered := &ndbg.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "1"}, {Name: "it", Repr: "<list_iterator object at 0x...>"}}}
	require.True(t, ndbg.Compare(reordered, real).All, "order and addresses are not part of the state")

	wrong := &ndbg.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "2"}, {Name: "it", Repr: "<list_iterator object at 0x...>"}}}
	m := ndbg.Compare(wrong, real)
	require.False(t, m.All)
	require.False(t, m.Locals)
	require.True(t, m.Event && m.Line)

	missing := &ndbg.State{Event: dsl.Line, Line: 3, Locals: []dsl.Local{{Name: "x", Repr: "1"}}}
	require.False(t, ndbg.Compare(missing, real).Locals)

	ret := &ndbg.State{Event: dsl.Return, Line: 5, Value: "3"}
	require.False(t, ndbg.Compare(&ndbg.State{Event: dsl.Return, Line: 5, Value: "4"}, ret).Value)
	require.True(t, ndbg.Compare(nil, nil).All, "two ends match")
	require.False(t, ndbg.Compare(nil, ret).All)
}
