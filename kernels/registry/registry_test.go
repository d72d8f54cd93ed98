package registry

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
)

// lacking returns a Lacks that reports why while *missing is true, and
// counts its calls.
func lacking(missing *bool, calls *int, why string) func() string {
	return func() string {
		*calls++
		if *missing {
			return "unavailable: CPU lacks " + why
		}
		return ""
	}
}

func names[T any](es []Entry[T]) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

// Best goes by the capability order, then Rank, then name, never by
// registration order; All keeps registration order.
func TestOrdering(t *testing.T) {
	r := New[int]("test: kernel")
	r.Register(Entry[int]{Name: "amx-x", ISA: "amx", Lacks: func() string { return "unavailable: CPU lacks AMX-TILE" }, Value: 5})
	r.Register(Entry[int]{Name: "avx512", ISA: "avx512", Value: 3})
	r.Register(Entry[int]{Name: "go", ISA: "go", Value: 1})
	r.Register(Entry[int]{Name: "avx2", ISA: "avx2", Value: 2})
	if got, want := names(r.All()), []string{"amx-x", "avx512", "go", "avx2"}; !slices.Equal(got, want) {
		t.Errorf("All = %v, want registration order %v", got, want)
	}
	if got, want := names(r.Available()), []string{"avx512", "go", "avx2"}; !slices.Equal(got, want) {
		t.Errorf("Available = %v, want %v", got, want)
	}
	if e, err := r.Best(); err != nil || e.Name != "avx512" || e.Value != 3 {
		t.Errorf("Best = %s, %v; want avx512 (the unavailable amx-x skipped)", e.Name, err)
	}

	// Rank breaks ties within an ISA, then the name.
	r2 := New[string]("test: kernel")
	r2.Register(Entry[string]{Name: "b-small", ISA: "avx512", Rank: 1})
	r2.Register(Entry[string]{Name: "b-big", ISA: "avx512", Rank: 2})
	r2.Register(Entry[string]{Name: "a-big", ISA: "avx512", Rank: 2})
	r2.Register(Entry[string]{Name: "old", ISA: "avx2", Rank: 99})
	if e, _ := r2.Best(); e.Name != "a-big" {
		t.Errorf("Best = %s, want a-big (highest ISA, highest rank, first name)", e.Name)
	}
	if e, err := r2.BestWhere("small", func(e Entry[string]) bool { return strings.HasSuffix(e.Name, "small") || e.Name == "old" }); err != nil || e.Name != "b-small" {
		t.Errorf("BestWhere(small) = %s, %v", e.Name, err)
	}

	// The order is one list; the gemm and peak ISAs are in it.
	for _, isa := range []string{"go", "sse", "neon", "sve", "avx2", "avx_vnni", "avx512", "avx512vnni", "sme", "amx"} {
		if ISARank(isa) < 0 {
			t.Errorf("ISARank(%q) = -1", isa)
		}
	}
	for _, pair := range [][2]string{{"go", "avx2"}, {"avx2", "avx512"}, {"avx512", "avx512vnni"}, {"avx2", "avx_vnni"}, {"avx_vnni", "avx512"}, {"avx512vnni", "amx"}, {"go", "neon"}, {"neon", "sve"}, {"sve", "sme"}, {"sse", "avx2"}} {
		if ISARank(pair[0]) >= ISARank(pair[1]) {
			t.Errorf("%s ranks at or above %s: order %v", pair[0], pair[1], Order())
		}
	}
}

// MeasureOnly entries are listed and looked up but never chosen.
func TestMeasureOnly(t *testing.T) {
	r := New[int]("test: backend")
	r.Register(Entry[int]{Name: "go", ISA: "go"})
	r.Register(Entry[int]{Name: "sme", ISA: "sme", MeasureOnly: true})
	r.Register(Entry[int]{Name: "neon", ISA: "neon"})
	if e, _ := r.Best(); e.Name != "neon" {
		t.Errorf("Best = %s, want neon (sme is measure-only)", e.Name)
	}
	if _, err := r.ByName("sme"); err != nil {
		t.Errorf("ByName(sme) = %v", err)
	}
	if len(r.Available()) != 3 {
		t.Errorf("Available = %v", names(r.Available()))
	}
}

// Best is chosen once per CPU feature set: Lacks is not called again until
// internal/cpu's features change (cpu.Disable) or Reset.
func TestBestCached(t *testing.T) {
	missing, calls := false, 0
	r := New[int]("test: isa")
	r.Register(Entry[int]{Name: "go", ISA: "go"})
	r.Register(Entry[int]{Name: "avx2", ISA: "avx2", Lacks: lacking(&missing, &calls, "AVX2")})
	for range 3 {
		if e, _ := r.Best(); e.Name != "avx2" {
			t.Fatalf("Best = %s", e.Name)
		}
	}
	if calls != 1 {
		t.Errorf("Lacks called %d times for three Best, want 1 (cached)", calls)
	}
	if allocs := testing.AllocsPerRun(100, func() { r.Best() }); allocs != 0 {
		t.Errorf("cached Best allocates %v times", allocs)
	}

	// Something Lacks reads changes without the CPU features: still cached
	// until Reset.
	missing = true
	if e, _ := r.Best(); e.Name != "avx2" {
		t.Errorf("Best = %s before Reset, want the cached avx2", e.Name)
	}
	r.Reset()
	if e, _ := r.Best(); e.Name != "go" {
		t.Errorf("after Reset, Best = %s, want go", e.Name)
	}

	// A change of internal/cpu's features chooses again, and so does its
	// undo.
	missing = false
	undo, err := cpu.Disable("sme")
	if err != nil {
		t.Fatal(err)
	}
	cpu.ARM64.HasSMEFA64 = !cpu.ARM64.HasSMEFA64 // a change on any CPU
	before := calls
	if e, _ := r.Best(); e.Name != "avx2" {
		t.Errorf("after a feature change, Best = %s, want avx2 again", e.Name)
	}
	undo()
	missing = true
	if e, _ := r.Best(); e.Name != "go" {
		t.Errorf("after the undo, Best = %s, want go", e.Name)
	}
	if calls != before+2 {
		t.Errorf("Lacks called %d times over two feature changes, want 2", calls-before)
	}

	// Register drops the cache.
	missing = false
	r.Register(Entry[int]{Name: "avx512", ISA: "avx512"})
	if e, _ := r.Best(); e.Name != "avx512" {
		t.Errorf("after Register, Best = %s", e.Name)
	}
}

// ByName: unknown names and unavailable entries are errors naming the value
// and the allowed list.
func TestByName(t *testing.T) {
	missing, calls := true, 0
	r := New[int]("kernels: isa")
	r.Register(Entry[int]{Name: "go", ISA: "go", Value: 1})
	r.Register(Entry[int]{Name: "avx512", ISA: "avx512", Lacks: lacking(&missing, &calls, "AVX512F")})
	if e, err := r.ByName("go"); err != nil || e.Value != 1 {
		t.Errorf("ByName(go) = %+v, %v", e, err)
	}
	_, err := r.ByName("sse9")
	if err == nil || err.Error() != `kernels: isa "sse9": unknown in this build (have go, avx512)` {
		t.Errorf("ByName(sse9) = %v", err)
	}
	_, err = r.ByName("avx512")
	if err == nil || err.Error() != `kernels: isa "avx512": unavailable: CPU lacks AVX512F (available: go)` {
		t.Errorf("ByName(avx512) = %v", err)
	}
	if e, ok := r.Lookup("avx512"); !ok || e.Unavailable() == "" {
		t.Errorf("Lookup(avx512) = %+v, %v: want the unavailable entry", e, ok)
	}
	if _, ok := r.Lookup("sse9"); ok {
		t.Error("Lookup(sse9) found it")
	}
}

// No available entry: Best says why for each.
func TestBestNone(t *testing.T) {
	r := New[int]("test: isa")
	if _, err := r.Best(); err == nil || !strings.Contains(err.Error(), "none registered") {
		t.Errorf("empty registry: Best = %v", err)
	}
	r.Register(Entry[int]{Name: "avx2", ISA: "avx2", Lacks: func() string { return "unavailable: CPU lacks AVX2" }})
	if _, err := r.Best(); err == nil || !strings.Contains(err.Error(), "avx2: unavailable: CPU lacks AVX2") {
		t.Errorf("Best = %v", err)
	}
	if _, err := r.BestWhere("fp32", func(Entry[int]) bool { return false }); err == nil || !strings.Contains(err.Error(), "(fp32)") {
		t.Errorf("BestWhere = %v", err)
	}
}

// Register refuses entries that would make a choice ambiguous.
func TestRegisterRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		e    Entry[int]
		want string
	}{
		{"no name", Entry[int]{ISA: "go"}, "without a name"},
		{"duplicate", Entry[int]{Name: "go", ISA: "go"}, "registered twice"},
		{"unknown ISA", Entry[int]{Name: "x", ISA: "mmx"}, `ISA "mmx" is not in the capability order`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := New[int]("test: isa")
			r.Register(Entry[int]{Name: "go", ISA: "go"})
			defer func() {
				if p := recover(); p == nil || !strings.Contains(p.(string), c.want) {
					t.Errorf("panic %v, want one containing %q", p, c.want)
				}
			}()
			r.Register(c.e)
		})
	}
}

// Best, BestWhere, ByName and All from several goroutines at once, as the
// engine's workers call kernels' package-level functions (run with -race).
func TestConcurrent(t *testing.T) {
	r := New[int]("test: isa")
	r.Register(Entry[int]{Name: "go", ISA: "go", Value: 1})
	r.Register(Entry[int]{Name: "avx2", ISA: "avx2", Value: 2})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				if e, err := r.Best(); err != nil || e.Value != 2 {
					t.Errorf("goroutine %d: Best = %+v, %v", g, e, err)
					return
				}
				key := []string{"go", "avx2"}[i%2]
				if e, err := r.BestWhere(key, func(e Entry[int]) bool { return e.Name == key }); err != nil || e.Name != key {
					t.Errorf("goroutine %d: BestWhere(%s) = %+v, %v", g, key, e, err)
					return
				}
				if _, err := r.ByName("go"); err != nil || len(r.All()) != 2 {
					t.Errorf("goroutine %d: ByName(go) = %v, All %d", g, err, len(r.All()))
					return
				}
				if i%50 == 0 {
					r.Reset()
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkBest is the cached choice, what kernels' package-level
// functions pay per call.
func BenchmarkBest(b *testing.B) {
	r := New[int]("bench: isa")
	r.Register(Entry[int]{Name: "go", ISA: "go"})
	r.Register(Entry[int]{Name: "avx2", ISA: "avx2", Lacks: func() string { return cpu.Lacks("AVX2", cpu.X86.HasAVX2) }})
	b.ReportAllocs()
	for b.Loop() {
		r.Best()
	}
}

// BestValue is Best's Value through the cache, a feature change, Reset
// and Register, without allocating; with nothing available, the
// fallback's value.
func TestBestValue(t *testing.T) {
	missing, calls := false, 0
	r := New[int]("test: isa")
	r.Register(Entry[int]{Name: "go", ISA: "go", Value: 1})
	r.Register(Entry[int]{Name: "avx2", ISA: "avx2", Lacks: lacking(&missing, &calls, "AVX2"), Value: 2})
	if v := r.BestValue("go"); v != 2 {
		t.Fatalf("BestValue = %d, want avx2's 2", v)
	}
	if allocs := testing.AllocsPerRun(100, func() { r.BestValue("go") }); allocs != 0 {
		t.Errorf("cached BestValue allocates %v times", allocs)
	}
	missing = true
	r.Reset()
	if v := r.BestValue("go"); v != 1 {
		t.Errorf("after Reset, BestValue = %d, want go's 1", v)
	}
	missing = false
	cpu.ARM64.HasSMEFA64 = !cpu.ARM64.HasSMEFA64 // a feature change chooses again
	defer func() { cpu.ARM64.HasSMEFA64 = !cpu.ARM64.HasSMEFA64 }()
	if v := r.BestValue("go"); v != 2 {
		t.Errorf("after a feature change, BestValue = %d, want 2", v)
	}
	r.Register(Entry[int]{Name: "avx512", ISA: "avx512", Value: 3})
	if v := r.BestValue("go"); v != 3 {
		t.Errorf("after Register, BestValue = %d, want 3", v)
	}

	none := New[int]("test: isa")
	none.Register(Entry[int]{Name: "go", ISA: "go", Value: 7, Lacks: func() string { return "unavailable: test" }})
	if v := none.BestValue("go"); v != 7 {
		t.Errorf("nothing available: BestValue = %d, want the fallback's 7", v)
	}
}
