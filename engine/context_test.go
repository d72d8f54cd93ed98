package engine

import (
	"context"
	"errors"
	"testing"
)

// TestContext: a cancelled Options.Context stops New, forward calls and
// TimeLinear with context.Canceled, and a stopped forward call leaves the
// slot's position as it was.
func TestContext(t *testing.T) {
	c := tinyConfig("qwen3")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := New(tinyWeights(c, 1), Options{Threads: 1, Context: ctx}); !errors.Is(err, context.Canceled) {
		t.Fatalf("New with a cancelled context: %v", err)
	}

	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	m, err := New(tinyWeights(c, 1), Options{Threads: 1, Context: ctx})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := m.NewBatch(2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Prefill(0, []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := b.Prefill(1, []int{1, 2}); !errors.Is(err, context.Canceled) {
		t.Errorf("Prefill after cancel: %v", err)
	}
	if _, err := b.Decode([]int{0}, []int{4}); !errors.Is(err, context.Canceled) {
		t.Errorf("Decode after cancel: %v", err)
	}
	if b.Pos(0) != 3 || b.Pos(1) != 0 {
		t.Errorf("positions %d, %d after stopped calls; want 3, 0", b.Pos(0), b.Pos(1))
	}
	if _, err := m.TimeLinear(0, OpQProj, 4, 3); !errors.Is(err, context.Canceled) {
		t.Errorf("TimeLinear after cancel: %v", err)
	}
}
