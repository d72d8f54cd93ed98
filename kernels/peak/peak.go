package peak

import (
	"encoding/binary"
	"math"
	"sync"

	"github.com/cpubench/bench/internal/cpu"
	"github.com/cpubench/bench/kernels/registry"
)

// Kernel is one compute-ceiling loop.
type Kernel struct {
	// Name is e.g. "avx512_fma_fp32", "avx512_bf16_dp", "amx_int8".
	Name string
	// ISA is "sse", "avx2", "avx512", "avx_vnni", "amx", "neon".
	ISA string
	// Instruction is the mnemonic and register width, e.g. "VFMADD231PS zmm".
	Instruction string
	// Precision of the inputs: "fp64", "fp32", "fp16", "bf16", "int8".
	Precision string
	// Unit is "GFLOP/s" for floating point, "GOP/s" for integers.
	Unit string
	// OpsPerInstruction counts a multiply-add as 2 ops per lane (a lone
	// multiply or add as 1).
	OpsPerInstruction int
	// Accumulators is the number of independent accumulator registers
	// (tiles for AMX) the loop updates per iteration.
	Accumulators int
	// IPC is the issue rate of the instruction per core per cycle assumed for
	// the theoretical peak, from the table in ipc.go for this CPU's
	// microarchitecture; 0 if unknown.
	IPC float64
	// Unavailable is "" if the kernel can run now, else e.g.
	// "unavailable: CPU lacks AVX512_BF16".
	Unavailable string
	// Run runs iters loop iterations and returns the checksum of the
	// accumulators (the sum of all their lanes). It is safe for concurrent
	// use and allocates nothing.
	Run func(iters int) float64
	// Model is Run's checksum computed in pure Go with the same arithmetic.
	// Run(iters) == Model(iters) exactly.
	Model func(iters int) float64
	// OpsPerIter is OpsPerInstruction x instructions per iteration.
	OpsPerIter int64
}

// build makes a registered loop's Kernel for microarchitecture m (its
// IPC), with availability evaluated now.
type build func(m Microarch) Kernel

// kernelRegistry is the registry of the loops compiled in for GOARCH, by name
// (registration order is Kernels' order; they are all measured, none is
// chosen over another), built on first use.
var kernelRegistry = sync.OnceValue(func() *registry.Registry[build] {
	r := registry.New[build]("peak: kernel")
	for _, e := range archKernels() {
		r.Register(e)
	}
	return r
})

// Kernels returns every compute kernel compiled in for GOARCH, with
// availability and IPC evaluated now.
func Kernels() []Kernel {
	m := DetectMicroarch()
	var out []Kernel
	for _, e := range kernelRegistry().All() {
		out = append(out, e.Value(m))
	}
	return out
}

// KernelByName returns the kernel named name and whether it exists in this
// build (it may still be unavailable).
func KernelByName(name string) (Kernel, bool) {
	e, ok := kernelRegistry().Lookup(name)
	if !ok {
		return Kernel{}, false
	}
	return e.Value(DetectMicroarch()), true
}

// AddChainLen is the number of dependent adds per iteration of AddChain.
const AddChainLen = 64

// AddChain runs iters iterations of AddChainLen dependent 1-cycle integer
// adds (ADD r64, r64 on amd64; ADD Xd, Xd, Xm on arm64) and returns their
// result, AddChainLen x iters; timing it gives the core clock. ok is false
// when this build has no assembly (purego or another GOARCH), because the
// Go compiler folds such a chain.
func AddChain(iters int) (adds uint64, ok bool) { return addChainImpl(iters) }

// lacks is cpu.Lacks: "" or "unavailable: CPU lacks F1, F2".
var lacks = cpu.Lacks

// The data of every vector loop: accumulator j starts with every lane equal
// to j+1; the two source registers a and b hold the values below in every
// lane. Per iteration each accumulator gets one instruction.
//
//	layout    instruction per accumulator          per-lane effect
//	f64FMA    acc = a*b + acc (fp64)               a = 1.5, b = 0.5: += 0.75
//	f32FMA    acc = a*b + acc (fp32)               same
//	f64MulAdd half the chains acc *= a, half += b  a = 1.0, b = 0.75
//	f32MulAdd same in fp32
//	f16FMA    acc = a*b + acc (fp16)               a = 0.5, b = 2: += 1, in
//	                                               fp16 (saturates at 2048)
//	bf16DP    acc += a[2i]*b[2i]; acc += a[2i+1]*b[2i+1] (fp32 acc, bf16 a, b)
//	                                               a = 1.5, b = 0.5: += 1.5
//	int8DP    acc += sum of 4 u8(a)*s8(b) (int32, wrapping)
//	                                               a = 3, b = -2: += -24
//
// All values are exact in their types for iters up to 1<<20 (and fp16
// saturates exactly), so the checksum is exact.
type layout int

const (
	f64FMA layout = iota
	f32FMA
	f64MulAdd
	f32MulAdd
	f16FMA
	bf16DP
	int8DP
)

// maxBuf is the largest vector-loop buffer: 24 accumulators + 2 sources of
// 64 bytes.
const maxBuf = 26 * 64

// fill writes the seeds and sources of l into buf, which holds nacc
// accumulators and two sources of vb bytes each.
func fill(l layout, buf []byte, nacc, vb int) {
	for j := 0; j < nacc+2; j++ {
		v := buf[j*vb : (j+1)*vb]
		src := j - nacc // 0 = a, 1 = b, < 0 accumulator
		seed := float64(j + 1)
		switch l {
		case f64FMA, f64MulAdd:
			x := seed
			if src >= 0 {
				x = srcVal(l, src)
			}
			for i := 0; i < vb; i += 8 {
				binary.LittleEndian.PutUint64(v[i:], math.Float64bits(x))
			}
		case f32FMA, f32MulAdd:
			x := seed
			if src >= 0 {
				x = srcVal(l, src)
			}
			for i := 0; i < vb; i += 4 {
				binary.LittleEndian.PutUint32(v[i:], math.Float32bits(float32(x)))
			}
		case f16FMA:
			x := seed
			if src >= 0 {
				x = srcVal(l, src)
			}
			for i := 0; i < vb; i += 2 {
				binary.LittleEndian.PutUint16(v[i:], f16bits(x))
			}
		case bf16DP:
			if src < 0 {
				for i := 0; i < vb; i += 4 {
					binary.LittleEndian.PutUint32(v[i:], math.Float32bits(float32(seed)))
				}
				continue
			}
			x := uint16(math.Float32bits(float32(srcVal(l, src))) >> 16) // exact
			for i := 0; i < vb; i += 2 {
				binary.LittleEndian.PutUint16(v[i:], x)
			}
		case int8DP:
			if src < 0 {
				for i := 0; i < vb; i += 4 {
					binary.LittleEndian.PutUint32(v[i:], uint32(int32(seed)))
				}
				continue
			}
			x := byte(int8(srcVal(l, src)))
			for i := range v {
				v[i] = x
			}
		}
	}
}

// srcVal is the value of source 0 (a) or 1 (b) of l.
func srcVal(l layout, src int) float64 {
	var v [2]float64
	switch l {
	case f64FMA, f32FMA, bf16DP:
		v = [2]float64{1.5, 0.5}
	case f64MulAdd, f32MulAdd:
		v = [2]float64{1, 0.75}
	case f16FMA:
		v = [2]float64{0.5, 2}
	case int8DP:
		v = [2]float64{3, -2}
	}
	return v[src]
}

// sum is the checksum: the sum of every lane of the nacc accumulators.
func sum(l layout, buf []byte, nacc, vb int) float64 {
	var s float64
	acc := buf[:nacc*vb]
	switch l {
	case f64FMA, f64MulAdd:
		for i := 0; i < len(acc); i += 8 {
			s += math.Float64frombits(binary.LittleEndian.Uint64(acc[i:]))
		}
	case f32FMA, f32MulAdd, bf16DP:
		for i := 0; i < len(acc); i += 4 {
			s += float64(math.Float32frombits(binary.LittleEndian.Uint32(acc[i:])))
		}
	case f16FMA:
		for i := 0; i < len(acc); i += 2 {
			s += f16val(binary.LittleEndian.Uint16(acc[i:]))
		}
	case int8DP:
		for i := 0; i < len(acc); i += 4 {
			s += float64(int32(binary.LittleEndian.Uint32(acc[i:])))
		}
	}
	return s
}

// model is the checksum of iters iterations of l over nacc accumulators of
// lanes lanes, computed lane by lane with the arithmetic of the instruction
// (all lanes of an accumulator are equal, so one lane is computed).
func model(l layout, nacc, lanes, iters int) float64 {
	var s float64
	for j := 0; j < nacc; j++ {
		seed := float64(j + 1)
		a, b := srcVal(l, 0), srcVal(l, 1)
		var x float64
		switch l {
		case f64FMA:
			x = seed
			for range iters {
				x = math.FMA(a, b, x)
			}
		case f32FMA:
			y := float32(seed)
			for range iters {
				// One rounding: a*b + y is exact in float64 here.
				y = float32(math.FMA(a, b, float64(y)))
			}
			x = float64(y)
		case f64MulAdd, f32MulAdd:
			// The first half of the chains multiply, the second half add
			// (see genLoop's SSE bodies); every value is exact in fp32.
			x = seed
			for range iters {
				if j < nacc/2 {
					x *= a
				} else {
					x += b
				}
			}
		case f16FMA:
			x = seed
			for range iters {
				x = roundF16(a*b + x)
			}
		case bf16DP:
			y := float32(seed)
			for range iters {
				y += float32(a) * float32(b)
				y += float32(a) * float32(b)
			}
			x = float64(y)
		case int8DP:
			y := int32(seed)
			for range iters {
				y += 4 * int32(a) * int32(b)
			}
			x = float64(y)
		}
		s += x * float64(lanes)
	}
	return s
}

// roundF16 rounds a non-negative x to the nearest IEEE binary16 value (ties
// to even), for normal magnitudes below 65520.
func roundF16(x float64) float64 {
	if x == 0 {
		return 0
	}
	_, e := math.Frexp(x) // x = f * 2^e, 0.5 <= f < 1
	scale := math.Ldexp(1, 11-e)
	return math.RoundToEven(x*scale) / scale
}

// f16bits encodes a value exactly representable in binary16 (normal, or 0).
func f16bits(x float64) uint16 {
	var sign uint16
	if x < 0 {
		sign, x = 0x8000, -x
	}
	if x == 0 {
		return sign
	}
	f, e := math.Frexp(x) // x = f * 2^e, f in [0.5, 1)
	mant := uint16((f*2 - 1) * 1024)
	return sign | uint16(e-1+15)<<10 | mant
}

// f16val decodes a binary16 value (normal, subnormal or 0; not Inf/NaN).
func f16val(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e := int(h>>10) & 31
	m := float64(h & 1023)
	if e == 0 {
		return sign * math.Ldexp(m, -24)
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

// amxModel is the checksum of iters iterations of the AMX loops (see
// amxFill in peak_amd64.go): four C tiles of 256 elements, each gaining one
// tile product per iteration, computed element by element as the K = 32
// bf16 pairs (fp32) or K = 64 int8 pairs (int32, wrapping) add up.
func amxModel(int8 bool, iters int) float64 {
	var s float64
	for c := 0; c < 4; c++ {
		if int8 {
			y := int32(c + 1)
			for range iters {
				for range 64 {
					y += 3 * -2
				}
			}
			s += 256 * float64(y)
		} else {
			y := float32(c + 1)
			for range iters {
				for range 32 {
					y += float32(1.5) * float32(0.5)
				}
			}
			s += 256 * float64(y)
		}
	}
	return s
}
