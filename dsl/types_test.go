package dsl

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestActionKindNamesRoundTrip(t *testing.T) {
	for k := StepInto; k <= InvContinue; k++ {
		got, err := ParseActionKind(k.String())
		require.NoError(t, err)
		require.Equal(t, k, got)
		require.Equal(t, k >= InvStepInto, k.Inverse())
	}
	_, err := ParseActionKind("jump")
	require.Error(t, err)
}

func TestEventNamesRoundTrip(t *testing.T) {
	for e := Call; e <= Exception; e++ {
		got, err := ParseEvent(e.String())
		require.NoError(t, err)
		require.Equal(t, e, got)
	}
	_, err := ParseEvent("opcode")
	require.Error(t, err)
}
