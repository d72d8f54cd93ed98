package probes

import (
	"context"
	"strings"
	"testing"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels"
)

type nlProgress struct {
	steps []string
}

func (*nlProgress) Start(int)          {}
func (c *nlProgress) Step(desc string) { c.steps = append(c.steps, desc) }
func (*nlProgress) Finish()            {}

func TestNonlinearSection(t *testing.T) {
	r := newTestRunner(t, kernels.BestMem())
	prog := &nlProgress{}
	r.prog = prog
	nl, err := r.nonlinearSection(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(prog.steps) != r.nonlinearSteps() {
		t.Fatalf("%d progress steps, nonlinearSteps says %d", len(prog.steps), r.nonlinearSteps())
	}
	if nl.FastExpMaxULP < 1 || nl.FastExpMaxULP > kernels.FastExpMaxULPBound || !strings.Contains(nl.FastExpDomain, "-87.33") {
		t.Fatalf("fastexp error %v over %q", nl.FastExpMaxULP, nl.FastExpDomain)
	}
	backends := map[string]bool{}
	want := 0
	for _, m := range kernels.NonlinearImpls() {
		if m.Unavailable == "" {
			backends[m.ISA] = true
			want += len(nonlinearSpecs())
		}
	}
	// Every backend measured reports every kernel (rope on sve and sme
	// included: they have RoPE kernels of their own).
	kernelsOf := map[string]map[string]bool{}
	for _, p := range nl.Points {
		if kernelsOf[p.Backend] == nil {
			kernelsOf[p.Backend] = map[string]bool{}
		}
		kernelsOf[p.Backend][p.Kernel] = true
	}
	for b, ks := range kernelsOf {
		for _, spec := range nonlinearSpecs() {
			if !ks[spec.kernel] {
				t.Fatalf("%s: no %s point", b, spec.kernel)
			}
		}
	}
	if len(nl.Points) != want {
		t.Fatalf("%d points, want %d", len(nl.Points), want)
	}
	for _, p := range nl.Points {
		if !backends[p.Backend] || p.GElemsPerSec.N != 5 || !(p.GElemsPerSec.Median > 0) || p.Threads != 1 || p.Elems <= 0 || p.Checksum == 0 {
			t.Fatalf("point %+v", p)
		}
		if d := p.NSPerElem*p.GElemsPerSec.Median - 1; d > 1e-9 || d < -1e-9 {
			t.Fatalf("ns/elem %v is not 1/%v", p.NSPerElem, p.GElemsPerSec.Median)
		}
		t.Logf("%-9s %-6s row %5d: %6.3f Gelem/s (%.2f ns/elem)", p.Kernel, p.Backend, p.RowElems, p.GElemsPerSec.Median, p.NSPerElem)
	}
	for _, u := range nl.Unavailable {
		if !strings.HasPrefix(u.Why, "unavailable: CPU lacks") {
			t.Fatalf("unavailable %+v", u)
		}
	}
}

// A disabled ISA is listed as unavailable and not measured.
func TestNonlinearSectionDisabled(t *testing.T) {
	defer cpu.DisableSIMD()()
	r := newTestRunner(t, kernels.BestMem())
	nl, err := r.nonlinearSection(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range nl.Points {
		if p.Backend != "go" {
			t.Fatalf("%s measured with SIMD disabled", p.Backend)
		}
	}
	if len(kernels.NonlinearImpls()) > 1 && len(nl.Unavailable) == 0 {
		t.Fatal("no unavailable backend listed")
	}
}

// A wrong kernel fails the measurement through the checksum.
func TestNonlinearChecksumCatchesWrongKernel(t *testing.T) {
	r := newTestRunner(t, kernels.BestMem())
	impls := kernels.NonlinearImpls()
	good := kernels.BestNonlinear()
	bad := good
	bad.Softmax = func(dst, src []float32) {
		good.Softmax(dst, src)
		for i := 0; i < len(dst); i += 2 {
			dst[i] *= 1.01
		}
	}
	bad.Exp = func(dst, src []float32) { good.Exp(dst[1:], src[:len(src)-1]) } // off by one
	for _, spec := range []nlSpec{{"softmax", 4096, nlElems}, {"exp", 0, nlElems}} {
		_, err := r.measureNonlinear(context.Background(), r.pool.workers[0], spec, bad, impls[0])
		if err == nil || !strings.Contains(err.Error(), "checksum") {
			t.Fatalf("%s: err = %v, want a checksum error", spec.kernel, err)
		}
	}
}
