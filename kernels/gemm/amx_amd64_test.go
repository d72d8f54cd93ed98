//go:build !purego

package gemm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/cpubench/bench/internal/amx"
	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/pool"
)

// TestAMXEncodings assembles every instruction that amx_amd64.s emits as
// BYTEs (the comment above each run of BYTEs gives its Intel mnemonic)
// with GNU as and compares the bytes. Skipped where as or objdump is
// missing or too old for AMX (binutils < 2.36).
func TestAMXEncodings(t *testing.T) {
	src, err := os.ReadFile("amx_amd64.s")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("amx_amd64.s not here: the test binary runs away from its source (e.g. the Bochs guest)")
	}
	if err != nil {
		t.Fatal(err)
	}
	type ins struct {
		intel string
		bytes []byte
	}
	var list []ins
	comment := regexp.MustCompile(`^\t// ([A-Z][A-Z0-9]+(?: .*)?)$`)
	byteRe := regexp.MustCompile(`^\tBYTE \$0x([0-9a-f]{2})$`)
	for _, l := range strings.Split(string(src), "\n") {
		if m := comment.FindStringSubmatch(l); m != nil {
			list = append(list, ins{intel: strings.ToLower(m[1])})
			continue
		}
		if m := byteRe.FindStringSubmatch(l); m != nil {
			if len(list) == 0 {
				t.Fatalf("BYTE before any mnemonic comment: %q", l)
			}
			var b byte
			fmt.Sscanf(m[1], "%02x", &b)
			list[len(list)-1].bytes = append(list[len(list)-1].bytes, b)
		}
	}
	// Per kernel: LDTILECFG, 4 TILELOADD of C, 4 TILEZERO, 4 TILELOADD of
	// A and B, 4 TDP*, 4 TILESTORED, TILERELEASE.
	if len(list) != 2*22 {
		t.Fatalf("found %d encoded instructions in amx_amd64.s, want 44", len(list))
	}
	for _, in := range list {
		if len(in.bytes) == 0 {
			t.Fatalf("%s: no BYTEs follow the comment", in.intel)
		}
	}
	as, err := exec.LookPath("as")
	if err != nil {
		t.Skip("GNU as not installed")
	}
	dir := t.TempDir()
	var s strings.Builder
	s.WriteString(".intel_syntax noprefix\n")
	for _, in := range list {
		s.WriteString(in.intel + "\n")
	}
	in, obj := filepath.Join(dir, "x.s"), filepath.Join(dir, "x.o")
	if err := os.WriteFile(in, []byte(s.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(as, "--64", "-o", obj, in).CombinedOutput(); err != nil {
		t.Skipf("as cannot assemble AMX (too old?): %v\n%s", err, out)
	}
	out, err := exec.Command("objdump", "-d", "-M", "intel", obj).Output()
	if err != nil {
		t.Skipf("objdump: %v", err)
	}
	re := regexp.MustCompile(`^\s*[0-9a-f]+:\t((?:[0-9a-f]{2} )+)\s*\t`)
	var want [][]byte
	for _, l := range strings.Split(string(out), "\n") {
		m := re.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var b []byte
		for _, h := range strings.Fields(m[1]) {
			var x byte
			fmt.Sscanf(h, "%02x", &x)
			b = append(b, x)
		}
		want = append(want, b)
	}
	if len(want) != len(list) {
		t.Fatalf("objdump gave %d instructions, want %d", len(want), len(list))
	}
	for i, in := range list {
		if !bytes.Equal(in.bytes, want[i]) {
			t.Errorf("%s: amx_amd64.s has % x, GNU as % x", in.intel, in.bytes, want[i])
		}
	}
}

// TestAMXBackendsRegistered: amx-bf16 and amx-int8 are matrix-unit
// backends with the never-executed mark, unavailable with a reason on a
// CPU without AMX.
func TestAMXBackendsRegistered(t *testing.T) {
	want := map[string]DType{"amx-bf16": BF16, "amx-int8": Int8}
	for _, b := range Backends() {
		dt, ok := want[b.Name]
		if !ok {
			if b.Verified != "" {
				t.Errorf("%s: Verified %q", b.Name, b.Verified)
			}
			continue
		}
		delete(want, b.Name)
		if b.DType != dt || b.Unit != MatrixUnit || b.ISA != "amx" || b.TileM != 32 || b.TileN != 32 {
			t.Errorf("%+v", b)
		}
		if b.Verified != amx.Verified {
			t.Errorf("%s: Verified = %q", b.Name, b.Verified)
		}
		if !cpu.X86.HasAMXTile && !strings.Contains(b.Unavailable, "AMX-TILE") {
			t.Errorf("%s on a CPU without AMX: Unavailable = %q", b.Name, b.Unavailable)
		}
		t.Logf("%s: %s", b.Name, map[bool]string{true: "available", false: b.Unavailable}[b.Unavailable == ""])
	}
	if len(want) > 0 {
		t.Errorf("missing: %v", want)
	}
}

// fakeAMXCPU makes internal/cpu report AMX-TILE, AMX-BF16 and AMX-INT8 and
// the permission and self-tests pass, as on a Sapphire Rapids Xeon that
// grants the tile data; it returns the undo.
func fakeAMXCPU() func() {
	x, ready := cpu.X86, amxReady
	cpu.X86.HasAMXTile, cpu.X86.HasAMXBF16, cpu.X86.HasAMXInt8 = true, true, true
	amxReady = func(*amxOp) string { return "" }
	return func() { cpu.X86, amxReady = x, ready }
}

// TestChoosePairAMXCPU: with a CPU that has AMX (faked), ChoosePair gives
// placement matrix amx-bf16 on the matrix unit, with no note, and
// placement cores the best fp32 backend on the cores' vector units; with
// AMX-BF16 missing, amx-int8; with AMX disabled, the cores' bf16 backend
// with a note naming why the AMX backends cannot run.
func TestChoosePairAMXCPU(t *testing.T) {
	defer fakeAMXCPU()()
	p, err := ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Matrix.Name != "amx-bf16" || p.Matrix.Unit != MatrixUnit || p.MatrixNote != "" {
		t.Errorf("matrix = %s", p.MatrixLabel())
	}
	if p.Cores.Unit != Cores || p.Cores.DType != FP32 || p.Cores.ISA == "amx" {
		t.Errorf("cores = %s", p.CoresLabel())
	}
	if want, _ := Best(FP32); p.Cores.Name != want.Name {
		t.Errorf("cores = %s, want Best(fp32) = %s", p.Cores.Name, want.Name)
	}
	if got := p.MatrixLabel(); got != "amx-bf16 (bf16 weights) on the matrix unit (amx)" {
		t.Errorf("MatrixLabel = %q", got)
	}
	if _, err := ChoosePair("amx-bf16", ""); err == nil || !strings.Contains(err.Error(), "runs on the matrix unit") {
		t.Errorf("amx-bf16 as the cores backend: err = %v", err)
	}
	if p, err := ChoosePair("", "amx-int8"); err != nil || p.Matrix.Name != "amx-int8" || p.MatrixNote != "" {
		t.Errorf("matrix named amx-int8: %s, %v", p.MatrixLabel(), err)
	}
	cpu.X86.HasAMXBF16 = false
	if p, _ := ChoosePair("", ""); p.Matrix.Name != "amx-int8" {
		t.Errorf("without AMX-BF16: matrix = %s, want amx-int8", p.MatrixLabel())
	}
	undo := cpu.DisableAVX512() // AMX goes with AVX-512
	defer undo()
	p, err = ChoosePair("", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Matrix.Unit != Cores || !strings.Contains(p.MatrixNote, "amx-bf16: unavailable: CPU lacks AMX-TILE") {
		t.Errorf("AMX disabled: matrix = %s", p.MatrixLabel())
	}
}

// TestAMXAssembly runs the assembly tile kernels where this machine can
// (AMX present, tile data granted; BENCH_AMX_FORCE=1 runs them anyway, to
// see what an emulator does: qemu-x86_64 7.2 -cpu max stops with SIGILL at
// the first LDTILECFG) on random inputs of several K steps: int8 bit
// for bit against the specification, bf16 within the fp32 bound of its
// sums (the order of the rounded updates inside TDPBF16PS is the SDM's
// pseudocode, which the exact self-test does not rely on).
func TestAMXAssembly(t *testing.T) {
	if os.Getenv("BENCH_AMX_FORCE") != "1" {
		if !cpu.X86.HasAMXTile {
			t.Skip("CPU lacks AMX-TILE: " + amx.Verified)
		}
		if err := amx.Permit(); err != nil {
			t.Skip(err)
		}
	} else {
		_ = amx.Permit()
	}
	for _, op := range []*amxOp{amxBF16Op, amxI8Op} {
		if op.bf16 && !cpu.X86.HasAMXBF16 && os.Getenv("BENCH_AMX_FORCE") != "1" {
			continue
		}
		if !op.bf16 && !cpu.X86.HasAMXInt8 && os.Getenv("BENCH_AMX_FORCE") != "1" {
			continue
		}
		// Three panels over five K steps, in two calls (two K steps, then
		// three loading C), against one call of the specification.
		const nkb, np = 5, 3
		parts := op.parts()
		a, b := make([]byte, nkb*parts*amxPart), make([]byte, np*nkb*amxBlock)
		r := uint32(99)
		for _, buf := range [][]byte{a, b} {
			for i := 0; i < len(buf); i += 2 {
				r = r*1664525 + 1013904223
				if op.bf16 {
					h := Float32ToBF16(float32(int32(r>>8)%2001-1000) / 256)
					buf[i], buf[i+1] = byte(h), byte(h>>8)
				} else {
					buf[i], buf[i+1] = byte(r>>8), byte(r>>20)
				}
			}
		}
		cfg := amxConfig()
		const bstride = nkb * amxBlock
		got, want := make([]float32, np*amxMR*amxNR), make([]float32, np*amxMR*amxNR)
		gp, wp := (*byte)(unsafePointer(&got[0])), (*byte)(unsafePointer(&want[0]))
		op.tile(&cfg[0], &a[0], &b[0], bstride, np, 2, parts, gp, 0)
		op.tile(&cfg[0], &a[2*parts*amxPart], &b[2*amxBlock], bstride, np, nkb-2, parts, gp, 1)
		amxTileSpec(op.bf16)(&cfg[0], &a[0], &b[0], bstride, np, nkb, parts, wp, 0)
		for i := range got {
			if op.bf16 {
				// 480 rounded updates of |partial sums| ≤ 480·3.91² < 7400:
				// each order is within 480·2^-24·7400 < 0.22 of the exact
				// sum, so two orders within 0.44.
				if d := float64(got[i] - want[i]); d > 0.44 || d < -0.44 {
					t.Fatalf("TDPBF16PS: element %d: %g, want %g", i, got[i], want[i])
				}
			} else if g, w := math.Float32bits(got[i]), math.Float32bits(want[i]); g != w {
				// int32 results held in float32 slots: compare the bits (a
				// negative int32 is a NaN pattern, never == itself).
				t.Fatalf("TDPBSSD: element %d: %d, want %d", i, int32(g), int32(w))
			}
		}
	}
}

func unsafePointer(p *float32) unsafe.Pointer { return unsafe.Pointer(p) }

// abi0Code returns the machine code of the assembly function whose Go
// wrapper is fn, up to and including its TILERELEASE; RET, read from
// memory: the wrapper's CALL rel32 gives the entry.
func abi0Code(fn any) ([]byte, error) {
	pc := reflect.ValueOf(fn).Pointer()
	wrapper := unsafe.Slice(*(**byte)(unsafe.Pointer(&pc)), 128)
	for i := 0; i+5 <= len(wrapper); i++ {
		if wrapper[i] != 0xe8 {
			continue
		}
		target := pc + uintptr(i) + 5 + uintptr(int32(binary.LittleEndian.Uint32(wrapper[i+1:])))
		f := runtime.FuncForPC(target)
		if f == nil || f.Entry() != target || !strings.Contains(f.Name(), "amxTile") {
			continue
		}
		code := unsafe.Slice(*(**byte)(unsafe.Pointer(&target)), 1024)
		end := bytes.Index(code, []byte{0xc4, 0xe2, 0x78, 0x49, 0xc0, 0xc3}) // TILERELEASE; RET
		if end < 0 {
			return nil, fmt.Errorf("%s: no TILERELEASE; RET in 1 KiB", f.Name())
		}
		return code[:end+6], nil
	}
	return nil, fmt.Errorf("no call to the ABI0 function in its wrapper")
}

// TestAMXDisassembly disassembles the tile kernels as loaded in this test
// binary with GNU objdump and compares the whole instruction stream (the
// Go assembler's moves and loop control between the BYTE-encoded AMX
// instructions included) with the sequence amxTileSpec specifies. Skipped
// where objdump is missing or cannot decode AMX.
func TestAMXDisassembly(t *testing.T) {
	if _, err := exec.LookPath("objdump"); err != nil {
		t.Skip("objdump not installed")
	}
	for _, c := range []struct {
		name string
		fn   any
		tdp  string
	}{{"amxTileBF16", amxTileBF16, "tdpbf16ps"}, {"amxTileI8", amxTileI8, "tdpbssd"}} {
		code, err := abi0Code(c.fn)
		if err != nil {
			t.Skip(err)
		}
		bin := filepath.Join(t.TempDir(), c.name+".bin")
		if err := os.WriteFile(bin, code, 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("objdump", "-D", "-b", "binary", "-m", "i386:x86-64", "-M", "intel", "--no-show-raw-insn", bin).Output()
		if err != nil {
			t.Skipf("objdump: %v", err)
		}
		var got []string
		ins := regexp.MustCompile(`^\s*[0-9a-f]+:\t(.*)$`)
		for _, l := range strings.Split(string(out), "\n") {
			if m := ins.FindStringSubmatch(l); m != nil {
				f := strings.Join(strings.Fields(m[1]), " ")
				if i := strings.Index(f, " <"); i >= 0 { // "jne 0x63 <.data+0x63>"
					f = f[:i]
				}
				got = append(got, f)
			}
		}
		if strings.Contains(strings.Join(got, "\n"), "(bad)") {
			t.Skipf("objdump cannot decode AMX:\n%s", strings.Join(got, "\n"))
		}
		want := []string{
			"mov rsi,QWORD PTR [rsp+0x8]", "ldtilecfg [rsi]",
			"mov rax,QWORD PTR [rsp+0x10]", "mov r9,QWORD PTR [rsp+0x18]", "mov r12,QWORD PTR [rsp+0x20]",
			"mov r13,QWORD PTR [rsp+0x28]", "mov r11,QWORD PTR [rsp+0x38]", "mov rdi,QWORD PTR [rsp+0x40]",
			// Panel loop (0x28): C loaded (load ≠ 0) or zeroed.
			"mov rdx,0x80", "cmp QWORD PTR [rsp+0x48],0x0", "je 0x66",
			"mov rsi,rdi", "tileloadd tmm0,[rsi+rdx*1]", "lea rsi,[rdi+0x40]", "tileloadd tmm1,[rsi+rdx*1]",
			"lea rsi,[rdi+0x800]", "tileloadd tmm2,[rsi+rdx*1]", "lea rsi,[rdi+0x840]", "tileloadd tmm3,[rsi+rdx*1]",
			"jmp 0x7a",
			"tilezero tmm0", "tilezero tmm1", "tilezero tmm2", "tilezero tmm3",
			"mov r8,rax", "mov r10,r9", "mov rcx,QWORD PTR [rsp+0x30]",
			// K step loop (0x85): B tiles, then parts × (A tiles, 4 products).
			"mov rdx,0x80", "mov rsi,r10", "tileloadd tmm6,[rsi+rdx*1]", "lea rsi,[r10+0x40]", "tileloadd tmm7,[rsi+rdx*1]",
			"mov rdx,0x40", "mov rbx,r11",
			"mov rsi,r8", "tileloadd tmm4,[rsi+rdx*1]", "lea rsi,[r8+0x400]", "tileloadd tmm5,[rsi+rdx*1]",
			c.tdp + " tmm0,tmm4,tmm6", c.tdp + " tmm1,tmm4,tmm7", c.tdp + " tmm2,tmm5,tmm6", c.tdp + " tmm3,tmm5,tmm7",
			"add r8,0x800", "dec rbx", "jne 0xa9",
			"add r10,0x800", "dec rcx", "jne 0x85",
			"mov rdx,0x80", "mov rsi,rdi", "tilestored [rsi+rdx*1],tmm0",
			"lea rsi,[rdi+0x40]", "tilestored [rsi+rdx*1],tmm1",
			"lea rsi,[rdi+0x800]", "tilestored [rsi+rdx*1],tmm2",
			"lea rsi,[rdi+0x840]", "tilestored [rsi+rdx*1],tmm3",
			"add rdi,0x1000", "add r9,r12", "dec r13", "jne 0x28",
			"tilerelease", "ret",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s disassembles to\n%s\nwant\n%s", c.name, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}

// BenchmarkAMXSchedule: the AMX backends' Run (N = K = 3072) on one
// thread (M 512 and 2048) and on every CPU (M 2048) under candidate
// schedules (amxSchedule), measured interleaved (benchAMXVariants) and
// printed as the median GFLOP/s (GOP/s for int8) over the rounds with the
// range, to choose amxDefaultSchedule on an AMX machine. kc=all/np=1/ms=1
// is the loop nest before schedules existed (the whole K per call, one
// panel, one sliver).
func BenchmarkAMXSchedule(b *testing.B) {
	var vs []amxVariant
	for _, sc := range amxCandidates {
		kcs := fmt.Sprint(sc.KC)
		if sc.KC == 1<<20 {
			kcs = "all"
		}
		vs = append(vs, amxVariant{fmt.Sprintf("kc=%s np=%d ms=%d", kcs, sc.NP, sc.MS), func(op *amxOp) func() {
			op.sched = sc
			return func() { op.sched = amxSchedule{} }
		}})
	}
	benchAMXBackends(b, vs)
}

// BenchmarkAMXConvert: the AMX backends' Run as BenchmarkAMXSchedule
// measures it, with X's conversions and the int8 scaling on their Go
// specifications against their AVX-512 kernels (convert_amd64.go),
// interleaved.
func BenchmarkAMXConvert(b *testing.B) {
	if !cpu.X86.HasAVX512F {
		b.Skip("CPU lacks AVX512F: the conversions run their Go specifications")
	}
	goConv := func(*amxOp) func() {
		q, sc, sp := quantizeRow, scaleTile, splitBF16Steps
		quantizeRow, scaleTile, splitBF16Steps = quantizeRowGo, scaleTileGo, splitBF16StepsGo
		return func() { quantizeRow, scaleTile, splitBF16Steps = q, sc, sp }
	}
	benchAMXBackends(b, []amxVariant{{"conversions go", goConv}, {"conversions avx512", func(*amxOp) func() { return func() {} }}})
}

// benchAMXBackends runs benchAMXVariants on each available AMX backend at
// N = K = 3072: one thread at M 512 and 2048, every CPU at M 2048.
func benchAMXBackends(b *testing.B, vs []amxVariant) {
	const n, k = 3072, 3072
	for _, be := range Backends() {
		if be.ISA != "amx" {
			continue
		}
		if be.Unavailable != "" {
			b.Logf("%s: %s", be.Name, be.Unavailable)
			continue
		}
		p := benchProblem(be.DType, 2048, n, k)
		benchAMXVariants(b, be.Name, p.pack(&testing.T{}, be), p.x, n, k, [][2]int{{1, 512}, {1, 2048}, {runtime.NumCPU(), 2048}}, 5, vs)
	}
}

// amxCandidates are the schedules BenchmarkAMXSchedule compares.
var amxCandidates = []amxSchedule{
	{KC: 1 << 20, NP: 1, MS: 1}, {KC: 1 << 20, NP: 16, MS: 4}, {KC: 4, NP: 8, MS: 4}, {KC: 8, NP: 8, MS: 4},
	{KC: 4, NP: 16, MS: 4}, {KC: 8, NP: 16, MS: 4}, {KC: 16, NP: 8, MS: 4}, {KC: 16, NP: 16, MS: 4},
}

// amxVariant is one configuration benchAMXVariants times: set applies it
// to the backend's op (or to the package) and returns its undo.
type amxVariant struct {
	name string
	set  func(op *amxOp) func()
}

// amxRoundCalls is the Run calls benchAMXVariants times per variant and
// round (0.1–0.5 s at the benchmarks' shapes on the Emerald Rapids VM).
const amxRoundCalls = 4

// benchAMXVariants times w.Run under each variant, interleaved over
// rounds (round 0 warms up; every round times amxRoundCalls calls of each
// variant inside Pool.Do, as bench gemm runs it), at each (threads, M) of
// runs (x: M×K for the largest M), and prints each variant's median
// GFLOP/s over the rounds with the range.
func benchAMXVariants(b *testing.B, name string, w *Weights, x []float32, n, k int, runs [][2]int, rounds int, vs []amxVariant) {
	op := w.im.amx
	for _, r := range runs {
		t, m := r[0], r[1]
		pl, all := benchPool(b, t)
		s := NewScratches(pl.Size(), w, Blocking{})
		y := make([]float32, m*n)
		rates := make([][]float64, len(vs))
		for round := 0; round <= rounds; round++ {
			for vi, v := range vs {
				undo := v.set(op)
				var el time.Duration
				err := pl.Do(func(mm *pool.Master) error {
					t0 := time.Now()
					for range amxRoundCalls {
						if err := w.Run(mm, all, y, x, m, s); err != nil {
							return err
						}
					}
					el = time.Since(t0)
					return nil
				})
				undo()
				if err != nil {
					b.Fatal(err)
				}
				if round > 0 {
					rates[vi] = append(rates[vi], Flops(m, n, k)*amxRoundCalls/el.Seconds()/1e9)
				}
			}
		}
		pl.Close()
		for vi, v := range vs {
			rs := rates[vi]
			slices.Sort(rs)
			fmt.Printf("%s threads=%d m=%d %s: %.1f GFLOP/s median (%.1f-%.1f, %d rounds)\n",
				name, t, m, v.name, rs[len(rs)/2], rs[0], rs[len(rs)-1], len(rs))
		}
	}
}

// benchPool starts t pool workers with the default spin, pinned round-robin
// over the machine's CPUs (roundRobinCPUs), and returns the pool (the
// caller closes it) and its group of all t workers.
func benchPool(b *testing.B, t int) (*pool.Pool, *pool.Group) {
	b.Helper()
	pl, err := pool.New(pool.Options{CPUs: roundRobinCPUs(t)})
	if err != nil {
		b.Fatal(err)
	}
	gs, err := pl.Groups(t)
	if err != nil {
		pl.Close()
		b.Fatal(err)
	}
	return pl, gs[0]
}

// BenchmarkAMXRun: the AMX backends' Run under the default schedule (N = K
// = 3072; M 512 on one thread, 2048 on every CPU), inside Pool.Do as bench
// gemm runs it, in GFLOP/s (GOP/s for int8).
func BenchmarkAMXRun(b *testing.B) {
	const n, k = 3072, 3072
	for _, be := range Backends() {
		if be.ISA != "amx" {
			continue
		}
		for _, r := range [][2]int{{1, 512}, {runtime.NumCPU(), 2048}} {
			t, m := r[0], r[1]
			b.Run(fmt.Sprintf("%s/threads=%d/m=%d", be.Name, t, m), func(b *testing.B) {
				if be.Unavailable != "" {
					b.Skip(be.Unavailable)
				}
				p := benchProblem(be.DType, m, n, k)
				w := p.pack(&testing.T{}, be)
				pl, all := benchPool(b, t)
				defer pl.Close()
				s := NewScratches(pl.Size(), w, Blocking{})
				y := make([]float32, m*n)
				err := pl.Do(func(mm *pool.Master) error {
					for b.Loop() {
						if err := w.Run(mm, all, y, p.x, m, s); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(Flops(m, n, k)/(b.Elapsed().Seconds()/float64(b.N))/1e9, "GFLOP/s")
			})
		}
	}
}
