package engine

import (
	"slices"
	"testing"
)

// TestTouch: Batch.Touch spans the embedding table and every slot's KV
// caches, and changes neither the caches nor the positions (a prefill's
// next logits are the same with and without it).
func TestTouch(t *testing.T) {
	m, err := New(tinyWeights(tinyConfig("qwen3"), 1), Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b, err := m.NewBatch(2, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := len(m.embed)
	for _, sl := range b.slots {
		for l := range sl.kc {
			want += len(sl.kc[l]) + len(sl.vc[l])
		}
	}
	if want == len(m.embed) {
		t.Fatal("no KV cache allocated")
	}
	if _, err := b.Prefill(0, []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	kc := slices.Clone(b.slots[0].kc[0])
	if got := b.Touch(); got != int64(want)*4 {
		t.Errorf("Touch spanned %d bytes, want %d", got, want*4)
	}
	if !slices.Equal(kc, b.slots[0].kc[0]) || b.Pos(0) != 3 || b.Pos(1) != 0 {
		t.Errorf("Touch changed the caches or the positions (%d, %d)", b.Pos(0), b.Pos(1))
	}
	got, err := b.Decode([]int{0}, []int{4})
	if err != nil {
		t.Fatal(err)
	}
	got = slices.Clone(got)
	b2, err := m.NewBatch(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b2.Prefill(0, []int{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	ref, err := b2.Decode([]int{0}, []int{4})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, ref) {
		t.Errorf("logits after Touch %v, without %v", got[:4], ref[:4])
	}
}
