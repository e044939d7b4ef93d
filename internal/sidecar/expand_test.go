package sidecar

import (
	"slices"
	"testing"
)

func TestExpandRuntime(t *testing.T) {
	t.Parallel()
	in := []string{"./server", "--port=${SIDECAR_PORT}", "$SIDECAR_PORT", "--name", "${SIDECAR_SKILL}-x", "$$HOME", "${OTHER}"}
	got := ExpandRuntime(in, 41234, "echo")
	want := []string{"./server", "--port=41234", "41234", "--name", "echo-x", "$$HOME", "${OTHER}"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if in[1] != "--port=${SIDECAR_PORT}" {
		t.Error("ExpandRuntime changed its input")
	}
}
