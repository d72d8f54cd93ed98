package gguf

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// A minimal GGUF writer for tests: metadata (scalars, raw bytes or
// arrays) and a tensor table laid out as gguf-py writes it (each tensor
// at the next multiple of the alignment).

type kv struct {
	key string
	val any // a Go scalar of a GGUF type, a []string, a []int32, or raw
}

// raw is a metadata value written as is, its type included.
type raw []byte

type tensor struct {
	name string
	ne   []uint64
	typ  Type
	off  *uint64 // overrides the laid-out offset (relative to the data section)
}

type file struct {
	magic   string
	version uint32
	kvs     []kv
	tensors []tensor
}

func valueType(v any) ValueType {
	switch v.(type) {
	case uint8:
		return Uint8
	case int8:
		return Int8
	case uint16:
		return Uint16
	case int16:
		return Int16
	case uint32:
		return Uint32
	case int32:
		return Int32
	case float32:
		return Float32
	case bool:
		return Bool
	case string:
		return String
	case uint64:
		return Uint64
	case int64:
		return Int64
	case float64:
		return Float64
	}
	panic(fmt.Sprintf("no GGUF type for %T", v))
}

func putStr(b *bytes.Buffer, s string) {
	binary.Write(b, binary.LittleEndian, uint64(len(s)))
	b.WriteString(s)
}

func putValue(b *bytes.Buffer, v any) {
	le := binary.LittleEndian
	switch x := v.(type) {
	case raw:
		b.Write(x)
	case []string:
		binary.Write(b, le, uint32(Array))
		binary.Write(b, le, uint32(String))
		binary.Write(b, le, uint64(len(x)))
		for _, s := range x {
			putStr(b, s)
		}
	case []int32:
		binary.Write(b, le, uint32(Array))
		binary.Write(b, le, uint32(Int32))
		binary.Write(b, le, uint64(len(x)))
		binary.Write(b, le, x)
	case string:
		binary.Write(b, le, uint32(String))
		putStr(b, x)
	default:
		binary.Write(b, le, uint32(valueType(v)))
		binary.Write(b, le, v)
	}
}

// size is the data size of t (its shape must be whole blocks).
func (t tensor) size() uint64 {
	be, bb, _ := t.typ.Block()
	n := uint64(1)
	for _, d := range t.ne {
		n *= d
	}
	if be == 0 {
		return 0
	}
	return n / uint64(be) * uint64(bb)
}

func (g *file) bytes() []byte {
	le := binary.LittleEndian
	var b bytes.Buffer
	magic := g.magic
	if magic == "" {
		magic = "GGUF"
	}
	b.WriteString(magic)
	binary.Write(&b, le, g.version)
	binary.Write(&b, le, uint64(len(g.tensors)))
	binary.Write(&b, le, uint64(len(g.kvs)))
	align := uint64(DefaultAlignment)
	for _, x := range g.kvs {
		putStr(&b, x.key)
		putValue(&b, x.val)
		if x.key == "general.alignment" {
			if a, ok := x.val.(uint32); ok && a > 0 && a&(a-1) == 0 {
				align = uint64(a)
			}
		}
	}
	pad := func(n uint64) uint64 { return (n + align - 1) / align * align }
	next := uint64(0)
	for _, t := range g.tensors {
		off := pad(next)
		next = off + t.size()
		if t.off != nil {
			off = *t.off
		}
		putStr(&b, t.name)
		binary.Write(&b, le, uint32(len(t.ne)))
		binary.Write(&b, le, t.ne)
		binary.Write(&b, le, uint32(t.typ))
		binary.Write(&b, le, off)
	}
	out := make([]byte, pad(uint64(b.Len()))+next)
	copy(out, b.Bytes())
	return out
}

// sample is a valid file: every scalar value type, arrays, and tensors
// of several types and ranks.
func sample() *file {
	return &file{version: 3, kvs: []kv{
		{"general.architecture", "llama"},
		{"u8", uint8(200)}, {"i8", int8(-5)}, {"u16", uint16(60000)}, {"i16", int16(-300)},
		{"u32", uint32(7)}, {"i32", int32(-7)}, {"f32", float32(0.5)}, {"b", true},
		{"u64", uint64(1 << 40)}, {"i64", int64(-1 << 40)}, {"f64", 1e-6},
		{"tokens", []string{"a", "bc", ""}}, {"types", []int32{1, 2, 3}},
	}, tensors: []tensor{
		{name: "a", ne: []uint64{8}, typ: F32},
		{name: "b", ne: []uint64{64, 2}, typ: Q8_0},
		{name: "c", ne: []uint64{32, 3, 2}, typ: Q4_0},
		{name: "d", ne: []uint64{256, 1, 1, 2}, typ: Q6_K},
		{name: "e", ne: []uint64{5}, typ: BF16},
	}}
}

func parseBytes(data []byte) (*File, error) {
	return Parse(bytes.NewReader(data), int64(len(data)), "m.gguf")
}

func TestParse(t *testing.T) {
	data := sample().bytes()
	f, err := parseBytes(data)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != 3 || f.Name != "m.gguf" || len(f.Meta) != 14 || len(f.Order) != 5 {
		t.Fatalf("version %d, name %q, %d keys, %d tensors", f.Version, f.Name, len(f.Meta), len(f.Order))
	}
	for key, want := range map[string]string{"general.architecture": `"llama"`, "u8": "200", "i8": "-5", "u16": "60000",
		"i16": "-300", "u32": "7", "i32": "-7", "f32": "0.5", "b": "true", "u64": "1099511627776", "i64": "-1099511627776",
		"f64": "1e-06", "tokens": "an array of 3 string", "types": "an array of 3 int32"} {
		if got := f.Meta[key].String(); got != want {
			t.Errorf("metadata %s = %s, want %s", key, got, want)
		}
	}
	base := f.Order[0].Offset
	for i, want := range []struct {
		name  string
		off   int64 // from the data section
		size  int64
		elems int64
	}{{"a", 0, 32, 8}, {"b", 32, 136, 128}, {"c", 192, 108, 192}, {"d", 320, 420, 512}, {"e", 768, 10, 5}} {
		tn := f.Order[i]
		if tn.Name != want.name || tn.Offset-base != want.off || tn.Size != want.size || tn.Elements() != want.elems || f.Tensors[want.name] != tn {
			t.Errorf("tensor %d: %+v, want %+v", i, *tn, want)
		}
	}
	if base%32 != 0 || base+768+10 != int64(len(data)) {
		t.Errorf("data section at %d in a file of %d bytes, want aligned to 32 and %d bytes of data", base, len(data), 778)
	}
}
func TestParseErrors(t *testing.T) {
	edit := func(f func(g *file)) []byte {
		g := sample()
		f(g)
		return g.bytes()
	}
	off := func(n uint64) *uint64 { return &n }
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"magic", edit(func(g *file) { g.magic = "GGML" }), `m.gguf: not a GGUF file: magic "GGML", want "GGUF"`},
		{"big-endian magic", edit(func(g *file) { g.magic = "FUGG" }), "big-endian GGUF"},
		{"version 1", edit(func(g *file) { g.version = 1 }), "GGUF version 1 is not supported"},
		{"big-endian version", edit(func(g *file) { g.version = 3 << 24 }), "big-endian GGUF (version 3)"},
		{"version 4", edit(func(g *file) { g.version = 4 }), "GGUF version 4 is not supported (want 2 or 3)"},
		{"unknown value type", edit(func(g *file) { g.kvs = append(g.kvs, kv{"x", raw{13, 0, 0, 0}}) }), "metadata x: unknown value type 13"},
		{"nested array", edit(func(g *file) { g.kvs = append(g.kvs, kv{"x", raw{9, 0, 0, 0, 9, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0}}) }),
			"metadata x: arrays of arrays are not supported"},
		{"duplicate key", edit(func(g *file) { g.kvs = append(g.kvs, g.kvs[0]) }), "metadata general.architecture: duplicate key"},
		{"alignment", edit(func(g *file) { g.kvs = append(g.kvs, kv{"general.alignment", uint32(48)}) }),
			"metadata general.alignment = 48: must be a power of two"},
		{"alignment type", edit(func(g *file) { g.kvs = append(g.kvs, kv{"general.alignment", "32"}) }),
			`metadata general.alignment: a string ("32"), want an integer`},
		{"duplicate tensor", edit(func(g *file) { g.tensors = append(g.tensors, tensor{name: "a", ne: []uint64{8}, typ: F32}) }),
			"tensor a: duplicate name"},
		{"five dims", edit(func(g *file) { g.tensors[0].ne = []uint64{8, 1, 1, 1, 1} }), "tensor a: 5 dimensions: want 1 to 4"},
		{"zero dim", edit(func(g *file) { g.tensors[0].ne = []uint64{8, 0} }), "shape [8 0]: every dimension must be ≥ 1"},
		{"huge dims", edit(func(g *file) { g.tensors[0].ne = []uint64{1 << 32, 1 << 32} }), "element count below 2^60"},
		{"unknown type", edit(func(g *file) { g.tensors[0].typ = 99 }),
			"m.gguf: tensor a: ggml type 99 (unknown) is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, TQ2_0, TQ1_0)"},
		{"unsupported type", edit(func(g *file) { g.tensors[0].typ = 11 }), "tensor a: Q3_K (ggml type 11) is not supported"},
		{"block multiple", edit(func(g *file) { g.tensors[0].typ = Q4_K }), "tensor a: Q4_K (ggml type 12): ne[0] = 8 is not a multiple of the block size 256"},
		{"misaligned offset", edit(func(g *file) { g.tensors[1].off = off(4) }), "tensor b: data offset 4 is not a multiple of the alignment 32"},
		{"offset beyond file", edit(func(g *file) { g.tensors[1].off = off(1 << 40) }), "tensor b: 136 bytes of data at offset 1099511627776"},
		{"offset beyond any file", edit(func(g *file) { g.tensors[1].off = off(1 << 63) }), "is beyond any file"},
		{"overlap", edit(func(g *file) { g.tensors[1].off = off(0) }), "tensors a (bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parseBytes(tc.data)
			if f != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse = %v, %v\nwant an error containing %q", f != nil, err, tc.want)
			}
		})
	}
	if _, err := Parse(bytes.NewReader(nil), -1, "m.gguf"); err == nil || !strings.Contains(err.Error(), "size -1") {
		t.Errorf("Parse of size -1: %v", err)
	}
	// Cut anywhere, the file is reported truncated.
	good := sample().bytes()
	for n := range len(good) {
		if f, err := parseBytes(good[:n]); f != nil || !errors.Is(err, ErrTruncated) {
			t.Fatalf("file cut at %d of %d bytes: %v, want a truncated-file error", n, len(good), err)
		}
	}
}

func TestMeta(t *testing.T) {
	f, err := parseBytes(sample().bytes())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := f.MetaInt("u32", 0, true); n != 7 || err != nil {
		t.Errorf("MetaInt(u32) = %d, %v", n, err)
	}
	if n, err := f.MetaInt("absent", 3, false); n != 3 || err != nil {
		t.Errorf("MetaInt(absent) = %d, %v", n, err)
	}
	if x, err := f.MetaFloat("f64", 0, true); x != 1e-6 || err != nil {
		t.Errorf("MetaFloat(f64) = %v, %v", x, err)
	}
	if s, ok, err := f.MetaString("general.architecture"); s != "llama" || !ok || err != nil {
		t.Errorf("MetaString = %q, %v, %v", s, ok, err)
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{func() error { _, err := f.MetaInt("absent", 0, true); return err }(), "m.gguf: missing metadata key absent"},
		{func() error { _, err := f.MetaInt("i8", 0, true); return err }(), "m.gguf: metadata i8 = -5: must be between 0 and 1073741824"},
		{func() error { _, err := f.MetaInt("u64", 0, true); return err }(), "metadata u64 = 1099511627776: must be between 0 and"},
		{func() error { _, err := f.MetaInt("types", 0, true); return err }(), "metadata types: an array of 3 int32, want one integer (per-layer values are not supported)"},
		{func() error { _, err := f.MetaInt("f32", 0, true); return err }(), "metadata f32: a float32 (0.5), want an integer"},
		{func() error { _, err := f.MetaFloat("u32", 0, true); return err }(), "metadata u32: a uint32 (7), want a float"},
		{func() error { _, err := f.MetaFloat("absent", 0, true); return err }(), "missing metadata key absent"},
		{func() error { _, _, err := f.MetaString("b"); return err }(), "metadata b: a bool (true), want a string"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("error %v, want %q", tc.err, tc.want)
		}
	}
}

// heapAllocated runs f and returns the bytes it allocated on the heap.
func heapAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// FuzzParse: Parse on any bytes never panics, returns a file or an error
// (not both), allocates a heap linear in the input's size (a count or
// size in a corrupt header is refused before anything is allocated for
// it: 16 bytes per input byte for maps and slices of minimal entries,
// plus the 64 KiB bufio.Reader), and an accepted file's tensors lie
// inside it, aligned, apart.
//
//	go test -run='^$' -fuzz=FuzzParse -fuzztime=60s -fuzzminimizetime=1x ./gguf
func FuzzParse(f *testing.F) {
	f.Add(sample().bytes())
	small := &file{version: 2, kvs: []kv{{"general.alignment", uint32(8)}}, tensors: []tensor{{name: "t", ne: []uint64{4}, typ: F16}}}
	f.Add(small.bytes())
	f.Add(sample().bytes()[:200])
	f.Fuzz(func(t *testing.T, data []byte) {
		var g *File
		var err error
		if n := heapAllocated(func() { g, err = parseBytes(data) }); n > 64*uint64(len(data))+1<<20 {
			t.Fatalf("Parse of %d bytes allocated %d bytes; error %v", len(data), n, err)
		}
		if (g == nil) == (err == nil) {
			t.Fatalf("Parse = %v, %v: want a file or an error", g, err)
		}
		if err != nil {
			return
		}
		byOff := slices.Clone(g.Order)
		slices.SortFunc(byOff, func(a, b *Tensor) int { return cmp.Compare(a.Offset, b.Offset) })
		for i, tn := range byOff {
			be, bb, ok := tn.Type.Block()
			if !ok || tn.Offset < 0 || tn.Offset+tn.Size > int64(len(data)) || tn.Size != tn.Elements()/int64(be)*int64(bb) {
				t.Fatalf("tensor %s: %+v in a file of %d bytes", tn.Name, *tn, len(data))
			}
			if i > 0 && byOff[i-1].Offset+byOff[i-1].Size > tn.Offset {
				t.Fatalf("tensors %s and %s overlap", byOff[i-1].Name, tn.Name)
			}
		}
	})
}
