package engine

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/cpubench/bench/gguf"
	"github.com/cpubench/bench/kernels"
)

// Fuzzers for the model-file readers: no input makes them panic, an error
// comes with no weights, accepted weights pass Validate, and the heap they
// allocate stays linear in the input's size (a count or size in a corrupt
// header must be refused before anything is allocated for it).
//
//	go test -run='^$' -fuzz=FuzzReadGGUF -fuzztime=60s -fuzzminimizetime=1x ./engine
//	go test -run='^$' -fuzz=FuzzReadLlama2C -fuzztime=60s -fuzzminimizetime=1x ./engine
//
// (With the default -fuzzminimizetime of 60 s, minimizing each new
// interesting input of a few KiB takes most of a short run.)

// allocLimit bounds the heap a reader may allocate for n input bytes: at
// most 4 bytes of float32 per input byte (F16 gives 2, Q8_0 about 3.8),
// map and slice overhead for a header made of minimal entries, and fixed
// buffers (a 64 KiB bufio.Reader, a chunk of at most 1 MiB).
func allocLimit(n int) uint64 { return 64*uint64(n) + 8<<20 }

// heapAllocated runs f and returns the bytes it allocated on the heap.
func heapAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// fuzzGGUF is a small valid GGUF file of arch in typ: one layer, a
// vocabulary of 8, two experts, dims of 8 (of 32 for Q8_0 and Q4_0, whose
// blocks need them), so that the fuzzer's mutations and minimization stay
// fast.
func fuzzGGUF(arch string, typ gguf.Type) []byte {
	c := tinyConfig(arch)
	c.Layers, c.Vocab = 1, 8
	if _, quantized := quantFormat(typ); !quantized {
		c.Dim, c.Heads, c.KVHeads, c.HeadDim = 8, 2, 1, 4
	}
	switch arch {
	case "qwen3":
		c.Intermediate = 8
	case "qwen3moe":
		c.Experts, c.TopK, c.MoEIntermediate = 2, 1, min(c.Dim, 32)
	}
	return ggufFromWeights(tinyWeights(c, 5), arch, allAs(typ)).bytes()
}

// fuzzSuperGGUF is a one-layer qwen3 file with every matrix in a 256-weight
// type (rows of 256: the smallest such model, about 100 KiB in TQ1_0).
func fuzzSuperGGUF(typ gguf.Type) []byte {
	c := Config{Name: "fuzz-super", Dim: 256, Intermediate: 256, Layers: 1, Heads: 1, KVHeads: 1, HeadDim: 256, Vocab: 4, MaxSeq: 8,
		RoPETheta: 1e6, RoPELayout: kernels.RoPEHalf, RMSEps: 1e-6, QKNorm: true, TiedEmbeddings: true}
	return ggufFromWeights(tinyWeights(c, 5), "qwen3", allAs(typ)).bytes()
}

// allocSink keeps TestHeapAllocated's allocation alive.
var allocSink []byte

// TestHeapAllocated: the measurement the fuzzers rely on sees a large
// allocation.
func TestHeapAllocated(t *testing.T) {
	if n := heapAllocated(func() { allocSink = make([]byte, 64<<20) }); n < 64<<20 || n <= allocLimit(1000) {
		t.Errorf("64 MiB allocation measured as %d bytes (limit for 1000 input bytes %d)", n, allocLimit(1000))
	}
	allocSink = nil
}

// FuzzReadGGUF: ReadGGUF on any bytes, seeded with small valid files of
// each architecture and tensor type.
func FuzzReadGGUF(f *testing.F) {
	f.Add(fuzzGGUF("llama", gguf.F32))
	f.Add(fuzzGGUF("llama", gguf.F16))
	f.Add(fuzzGGUF("qwen3", gguf.BF16))
	f.Add(fuzzGGUF("qwen3moe", gguf.F32))
	f.Add(fuzzGGUF("qwen3moe", gguf.Q8_0))
	f.Add(fuzzGGUF("qwen3", gguf.Q4_0))
	f.Add(fuzzGGUF("qwen3moe", gguf.Q4_0))
	f.Add(fuzzGGUF("llama", gguf.F32)[:300])
	f.Add(fuzzSuperGGUF(gguf.Q4_K))
	f.Add(fuzzSuperGGUF(gguf.TQ1_0))
	f.Fuzz(func(t *testing.T, data []byte) {
		var w *Weights
		var err error
		if n := heapAllocated(func() { w, err = readGGUFBytes(data, "fuzz.gguf") }); n > allocLimit(len(data)) {
			t.Fatalf("ReadGGUF of %d bytes allocated %d bytes (limit %d); error %v", len(data), n, allocLimit(len(data)), err)
		}
		if err != nil {
			if w != nil {
				t.Fatal("weights with an error")
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("accepted weights fail Validate: %v", err)
		}
	})
}

// FuzzReadLlama2C complements FuzzLoadLlama2C (llama2c_test.go, which runs
// the engine on what the reader accepts) with the allocation limit.
func FuzzReadLlama2C(f *testing.F) {
	f.Add(tinyLlama2C(true))
	f.Add(tinyLlama2C(false))
	f.Add(tinyLlama2C(true)[:100])
	f.Fuzz(func(t *testing.T, data []byte) {
		var w *Weights
		var err error
		if n := heapAllocated(func() { w, err = ReadLlama2C(bytes.NewReader(data), "fuzz.bin") }); n > allocLimit(len(data)) {
			t.Fatalf("ReadLlama2C of %d bytes allocated %d bytes (limit %d); error %v", len(data), n, allocLimit(len(data)), err)
		}
		if err != nil {
			if w != nil {
				t.Fatal("weights with an error")
			}
			return
		}
		if err := w.Validate(); err != nil {
			t.Fatalf("accepted weights fail Validate: %v", err)
		}
	})
}
