package registry

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cpubench/bench/internal/cpu"
)

// order is the ISA capability order, least capable first (see ISARank).
// Cross-architecture positions (neon against avx2) never compare two
// implementations that can both run.
var order = []string{"go", "sse", "neon", "sve", "avx2", "avx_vnni", "avx512", "avx512vnni", "sme", "amx"}

// Order returns the ISA capability order, least capable first: "go" (the
// portable Go loops), "sse", "neon", "sve", "avx2", "avx_vnni" (VEX
// VPDPBUSD on AVX2 registers), "avx512", "avx512vnni" (AVX-512 plus
// VPDPWSSD/VPDPBUSD), "sme", "amx" (the matrix units).
func Order() []string { return slices.Clone(order) }

// ISARank is the position of isa in Order; -1 for an ISA it does not list
// (Register refuses those).
func ISARank(isa string) int { return slices.Index(order, isa) }

// Entry is one implementation registered in a Registry.
type Entry[T any] struct {
	// Name is unique within its registry: "avx512" (memory), "avx512-fp32"
	// (gemm), "avx512_fma_fp32" (peak).
	Name string
	// ISA is the instruction set the implementation needs, one of Order.
	ISA string
	// Lacks returns "" when this CPU can run the implementation now, else
	// why not ("unavailable: CPU lacks AVX512F"); nil: always available.
	// It is called at every All, Available, ByName and uncached Best.
	Lacks func() string
	// Rank breaks ties between entries of one ISA: higher is chosen first.
	Rank int
	// MeasureOnly entries are listed, looked up and measured but never
	// chosen by Best or BestWhere (kernels' "sve" and "sme" non-linear
	// kernels, slower than NEON by design).
	MeasureOnly bool
	// Value is what the family computes with.
	Value T
}

// Unavailable is Lacks(): "" when the entry can run now, else why not.
func (e Entry[T]) Unavailable() string {
	if e.Lacks == nil {
		return ""
	}
	return e.Lacks()
}

// Better reports whether a ranks above b in Best's order: the higher
// ISARank, then the higher Rank, then the name first in byte order.
func Better[T any](a, b Entry[T]) bool {
	if ra, rb := ISARank(a.ISA), ISARank(b.ISA); ra != rb {
		return ra > rb
	}
	if a.Rank != b.Rank {
		return a.Rank > b.Rank
	}
	return a.Name < b.Name
}

// Registry holds the implementations of one kernel family. The zero value
// is not usable; make one with New.
type Registry[T any] struct {
	what    string
	mu      sync.Mutex                 // serializes Register and cache updates
	entries atomic.Pointer[[]Entry[T]] // copied on Register
	cache   atomic.Pointer[choices[T]]
}

// choices are the cached Best and BestWhere results for one feature set:
// Best's in top (the hot path: no map lookup), BestWhere's by key.
type choices[T any] struct {
	x86  cpu.X86Features
	arm  cpu.ARM64Features
	top  *choice[T]
	best map[string]choice[T]
}

type choice[T any] struct {
	e   Entry[T]
	err error
}

// New returns an empty registry; what starts its error messages and names
// what is looked up: New("kernels: isa") gives `kernels: isa "sse9":
// unknown in this build (have go, avx2, avx512)`.
func New[T any](what string) *Registry[T] {
	r := &Registry[T]{what: what}
	r.entries.Store(&[]Entry[T]{})
	return r
}

// Register adds e after the entries registered so far and drops the cached
// choices. It panics (a programming error, at package initialization) if
// e.Name is empty or already registered, or e.ISA is not in Order.
func (r *Registry[T]) Register(e Entry[T]) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := *r.entries.Load()
	if e.Name == "" {
		panic(fmt.Sprintf("registry: %s: an entry without a name (ISA %q)", r.what, e.ISA))
	}
	if ISARank(e.ISA) < 0 {
		panic(fmt.Sprintf("registry: %s %q: ISA %q is not in the capability order (%s)", r.what, e.Name, e.ISA, strings.Join(order, ", ")))
	}
	for _, o := range old {
		if o.Name == e.Name {
			panic(fmt.Sprintf("registry: %s %q registered twice", r.what, e.Name))
		}
	}
	next := append(slices.Clip(old), e)
	r.entries.Store(&next)
	r.cache.Store(nil)
}

// All returns every entry, in registration order (a copy).
func (r *Registry[T]) All() []Entry[T] { return slices.Clone(*r.entries.Load()) }

// Available returns the entries this CPU can run now (Lacks() == ""), in
// registration order; MeasureOnly ones included.
func (r *Registry[T]) Available() []Entry[T] {
	var out []Entry[T]
	for _, e := range *r.entries.Load() {
		if e.Unavailable() == "" {
			out = append(out, e)
		}
	}
	return out
}

// Lookup returns the entry called name, available or not, and whether it
// is registered.
func (r *Registry[T]) Lookup(name string) (Entry[T], bool) {
	for _, e := range *r.entries.Load() {
		if e.Name == name {
			return e, true
		}
	}
	return Entry[T]{}, false
}

// ByName returns the entry called name if this CPU can run it now. Errors
// name the value and the allowed ones: `WHAT "x": unknown in this build
// (have a, b, c)` or `WHAT "x": unavailable: CPU lacks F (available: a, b)`.
func (r *Registry[T]) ByName(name string) (Entry[T], error) {
	e, ok := r.Lookup(name)
	if !ok {
		return Entry[T]{}, fmt.Errorf("%s %q: unknown in this build (have %s)", r.what, name, r.names(false))
	}
	if u := e.Unavailable(); u != "" {
		return Entry[T]{}, fmt.Errorf("%s %q: %s (available: %s)", r.what, name, u, r.names(true))
	}
	return e, nil
}

// names lists the entries' names (only the available ones if available),
// "none" for none.
func (r *Registry[T]) names(available bool) string {
	var ns []string
	for _, e := range *r.entries.Load() {
		if !available || e.Unavailable() == "" {
			ns = append(ns, e.Name)
		}
	}
	if len(ns) == 0 {
		return "none"
	}
	return strings.Join(ns, ", ")
}

// Best returns the most capable entry available now (see Better), never a
// MeasureOnly one; cached for the current CPU features. Error: none is
// available, naming each entry and why.
func (r *Registry[T]) Best() (Entry[T], error) { return r.best("", nil) }

// BestValue is Best's Value, or fallback's when Best fails: the per-call
// hot path of a kernel family's package functions, which returns the
// cached choice's value without copying its Entry (a cached Best costs
// about 14 ns, this a feature-set comparison and a load).
func (r *Registry[T]) BestValue(fallback string) T {
	if c := r.cache.Load(); c != nil && c.top != nil && c.top.err == nil && c.x86 == cpu.X86 && c.arm == cpu.ARM64 {
		return c.top.e.Value
	}
	e, err := r.best("", nil)
	if err != nil {
		e, _ = r.Lookup(fallback)
	}
	return e.Value
}

// BestWhere is Best among the entries fit accepts; key names fit (its
// result is cached under key, so one key must always mean one fit) and
// must not be empty.
func (r *Registry[T]) BestWhere(key string, fit func(Entry[T]) bool) (Entry[T], error) {
	if key == "" {
		panic("registry: BestWhere with an empty key (Best's)")
	}
	return r.best(key, fit)
}

func (r *Registry[T]) best(key string, fit func(Entry[T]) bool) (Entry[T], error) {
	if c := r.cache.Load(); c != nil && c.x86 == cpu.X86 && c.arm == cpu.ARM64 {
		if key == "" && c.top != nil {
			return c.top.e, c.top.err
		}
		if ch, ok := c.best[key]; ok && key != "" {
			return ch.e, ch.err
		}
	}
	x86, arm := cpu.X86, cpu.ARM64 // the features the choice is made under
	ch := r.choose(key, fit)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.cache.Load()
	next := &choices[T]{x86: x86, arm: arm, best: map[string]choice[T]{}}
	if c != nil && c.x86 == x86 && c.arm == arm {
		next.top = c.top
		for k, v := range c.best {
			next.best[k] = v
		}
	}
	if key == "" {
		next.top = &ch
	} else {
		next.best[key] = ch
	}
	r.cache.Store(next)
	return ch.e, ch.err
}

func (r *Registry[T]) choose(key string, fit func(Entry[T]) bool) choice[T] {
	var best Entry[T]
	ok := false
	var why []string
	for _, e := range *r.entries.Load() {
		if e.MeasureOnly || (fit != nil && !fit(e)) {
			continue
		}
		if u := e.Unavailable(); u != "" {
			why = append(why, e.Name+": "+u)
			continue
		}
		if !ok || Better(e, best) {
			best, ok = e, true
		}
	}
	if ok {
		return choice[T]{e: best}
	}
	sel := ""
	if key != "" {
		sel = " (" + key + ")"
	}
	if len(why) == 0 {
		return choice[T]{err: fmt.Errorf("%s%s: none registered", r.what, sel)}
	}
	return choice[T]{err: fmt.Errorf("%s%s: none available (%s)", r.what, sel, strings.Join(why, "; "))}
}

// Reset drops the cached choices, for tests that change what an entry's
// Lacks reads other than internal/cpu's features (a self-test's result, a
// permission).
func (r *Registry[T]) Reset() {
	r.mu.Lock()
	r.cache.Store(nil)
	r.mu.Unlock()
}
