package gguf

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
)

// The layout Parse reads (little-endian):
//
//	"GGUF", uint32 version (2 or 3), uint64 tensor count, uint64 key count
//	keys:    string key, uint32 value type, value (strings are a uint64
//	         length and bytes; an array is uint32 element type, uint64
//	         count, elements)
//	tensors: string name, uint32 n_dims (≤ 4), uint64 ne[n_dims] (fastest-
//	         varying first), uint32 ggml type, uint64 offset (from the data
//	         section, a multiple of the alignment)
//	padding to general.alignment (default 32), then the data section.
//
// Version 3 only added big-endian files, which are rejected here; version
// 1 (32-bit counts) is too old to meet.
//
// The header and metadata reader is ours, not github.com/gpustack/
// gguf-parser-go (checked at v0.28.1): that package's import graph is 221
// packages, among them net/http, golang.org/x/crypto/ssh (Ollama registry
// auth), henvic/httpretty and json-iterator, and it adds 15 modules to
// go.mod; its only local entry point takes a path, not an io.ReaderAt
// (so no fuzzing over bytes), and it keeps every array element as an
// `any`. What the engine needs from the header (a dozen scalar keys, the
// tensor table, skipping the tokenizer arrays) is the small reader below;
// reading and dequantizing tensor data would be ours either way.

// Tensor is one entry of the tensor table.
type Tensor struct {
	Name   string
	Shape  []uint64 // ne: dimensions, fastest-varying first (1 to 4)
	Type   Type
	Offset int64 // absolute file offset of the data, bytes
	Size   int64 // bytes of data
}

// File is a parsed header: metadata and tensor table.
type File struct {
	Name    string // as given to Parse, used in errors
	Version uint32
	Meta    map[string]Value
	Tensors map[string]*Tensor
	Order   []*Tensor // file order
}

// Limits on what a header may declare, so that sizes computed from it fit
// an int and a corrupt header cannot ask for absurd allocations.
const (
	// MaxInt bounds any integer metadata used as a size (File.IntValue).
	MaxInt       = 1 << 30
	maxAlignment = 1 << 20
	// DefaultAlignment is the alignment without general.alignment.
	DefaultAlignment = 32
)

// Minimum encoded sizes, used to refuse counts the file cannot hold
// before anything is allocated for them.
const (
	minKVBytes     = 8 + 4 + 1         // empty key, type, 1-byte value
	minTensorBytes = 8 + 4 + 8 + 4 + 8 // empty name, n_dims, ne[0], type, offset
)

// ErrTruncated reports a read past the end of the file (wrapped in
// Parse's errors).
var ErrTruncated = errors.New("truncated file")

// Errorf formats an error about f: "NAME: " and the message (the caller
// adds its own prefix, as package engine's "engine: ").
func (f *File) Errorf(format string, args ...any) error {
	return fmt.Errorf("%s: "+format, append([]any{f.Name}, args...)...)
}

// reader reads the header sequentially, tracking the offset.
type reader struct {
	r    *bufio.Reader
	pos  int64
	size int64
	b    [8]byte
}

// need fails unless n more bytes remain.
func (g *reader) need(n uint64) error {
	if rem := uint64(g.size - g.pos); n > rem {
		return fmt.Errorf("%w: needs %d bytes at offset %d, only %d remain", ErrTruncated, n, g.pos, rem)
	}
	return nil
}

func (g *reader) read(n int) ([]byte, error) {
	if err := g.need(uint64(n)); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(g.r, g.b[:n]); err != nil {
		return nil, fmt.Errorf("at offset %d: %w", g.pos, err)
	}
	g.pos += int64(n)
	return g.b[:n], nil
}

func (g *reader) u32() (uint32, error) {
	b, err := g.read(4)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (g *reader) u64() (uint64, error) {
	b, err := g.read(8)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a length-prefixed string, refusing a length past the file.
func (g *reader) str() (string, error) {
	n, err := g.u64()
	if err != nil {
		return "", err
	}
	if err := g.need(n); err != nil {
		return "", fmt.Errorf("string of %d bytes: %w", n, err)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(g.r, b); err != nil {
		return "", fmt.Errorf("at offset %d: %w", g.pos, err)
	}
	g.pos += int64(n)
	return string(b), nil
}

// skip discards n bytes.
func (g *reader) skip(n uint64) error {
	if err := g.need(n); err != nil {
		return err
	}
	if _, err := g.r.Discard(int(n)); err != nil {
		return fmt.Errorf("at offset %d: %w", g.pos, err)
	}
	g.pos += int64(n)
	return nil
}

// value reads one metadata value of type t (arrays of arrays are refused,
// as llama.cpp's reader does).
func (g *reader) value(t ValueType) (Value, error) {
	v := Value{Type: t}
	switch t {
	case String:
		s, err := g.str()
		v.S = s
		return v, err
	case Array:
		et, err := g.u32()
		if err != nil {
			return v, err
		}
		v.Elem = ValueType(et)
		if v.N, err = g.u64(); err != nil {
			return v, err
		}
		switch sz := v.Elem.Size(); {
		case v.Elem == String:
			if v.N > uint64(g.size-g.pos)/8 {
				return v, fmt.Errorf("array of %d strings: %w: only %d bytes remain", v.N, ErrTruncated, g.size-g.pos)
			}
			for range v.N {
				n, err := g.u64()
				if err == nil {
					err = g.skip(n)
				}
				if err != nil {
					return v, fmt.Errorf("array of %d strings: %w", v.N, err)
				}
			}
		case sz > 0:
			if v.N > uint64(g.size-g.pos)/uint64(sz) {
				return v, fmt.Errorf("array of %d %s: %w: only %d bytes remain", v.N, v.Elem, ErrTruncated, g.size-g.pos)
			}
			if err := g.skip(v.N * uint64(sz)); err != nil {
				return v, err
			}
		case v.Elem == Array:
			return v, errors.New("arrays of arrays are not supported")
		default:
			return v, fmt.Errorf("array of unknown value type %d", et)
		}
		return v, nil
	}
	sz := t.Size()
	if sz == 0 {
		return v, fmt.Errorf("unknown value type %d", uint32(t))
	}
	b, err := g.read(sz)
	if err != nil {
		return v, err
	}
	var u uint64
	for i := sz - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	switch t {
	case Int8:
		v.I = int64(int8(u))
	case Int16:
		v.I = int64(int16(u))
	case Int32:
		v.I = int64(int32(u))
	case Int64:
		v.I = int64(u)
	case Float32:
		v.F = float64(math.Float32frombits(uint32(u)))
	case Float64:
		v.F = math.Float64frombits(u)
	default:
		v.U = u
	}
	return v, nil
}

// Parse reads the header, metadata and tensor table of the GGUF file of
// size bytes in r (name is used in errors) and checks that every
// tensor's data lies inside the file, aligned, and overlaps no other. It
// reads no tensor data. Errors ("NAME: ..."): a negative size, wrong
// magic, big-endian files, versions other than 2 and 3, counts, strings
// or arrays the file cannot hold (ErrTruncated), duplicate keys or
// tensor names, unknown value types, arrays of arrays, a general.alignment
// that is not a power of two up to 1 MiB, a tensor of 0 or more than 4
// dimensions, a zero dimension or 2^60 elements or more, a type not in
// Supported, a first dimension not a multiple of the type's block, and
// misaligned, out-of-file or overlapping data. Memory grows with the
// file: a count or size the file cannot hold is an error before anything
// is allocated for it.
func Parse(r io.ReaderAt, size int64, name string) (*File, error) {
	f := &File{Name: name, Meta: map[string]Value{}, Tensors: map[string]*Tensor{}}
	if size < 0 {
		return nil, f.Errorf("size %d: must be ≥ 0", size)
	}
	g := &reader{r: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), int(min(size, 1<<16))), size: size}
	magic, err := g.read(4)
	if err != nil {
		return nil, f.Errorf("not a GGUF file: %w", err)
	}
	if string(magic) == "FUGG" {
		return nil, f.Errorf("big-endian GGUF (magic \"FUGG\") is not supported")
	}
	if string(magic) != "GGUF" {
		return nil, f.Errorf("not a GGUF file: magic %q, want \"GGUF\"", magic)
	}
	if f.Version, err = g.u32(); err != nil {
		return nil, f.Errorf("header: %w", err)
	}
	switch v := f.Version; {
	case v == 2 || v == 3:
	case v == 1:
		return nil, f.Errorf("GGUF version 1 is not supported (want 2 or 3; version 1 had 32-bit counts: convert the model again)")
	case bits.ReverseBytes32(v) == 2 || bits.ReverseBytes32(v) == 3:
		return nil, f.Errorf("big-endian GGUF (version %d) is not supported", bits.ReverseBytes32(v))
	default:
		return nil, f.Errorf("GGUF version %d is not supported (want 2 or 3)", v)
	}
	nt, err := g.u64()
	if err != nil {
		return nil, f.Errorf("header: %w", err)
	}
	nkv, err := g.u64()
	if err != nil {
		return nil, f.Errorf("header: %w", err)
	}
	rem := uint64(size - g.pos)
	if nkv > rem/minKVBytes || nt > rem/minTensorBytes || nkv*minKVBytes+nt*minTensorBytes > rem {
		return nil, f.Errorf("header: %d metadata keys and %d tensors cannot fit in the %d bytes after the header: %w", nkv, nt, rem, ErrTruncated)
	}
	for i := range nkv {
		key, err := g.str()
		if err != nil {
			return nil, f.Errorf("metadata key %d of %d: %w", i, nkv, err)
		}
		t, err := g.u32()
		if err != nil {
			return nil, f.Errorf("metadata %s: %w", key, err)
		}
		v, err := g.value(ValueType(t))
		if err != nil {
			return nil, f.Errorf("metadata %s: %w", key, err)
		}
		if _, dup := f.Meta[key]; dup {
			return nil, f.Errorf("metadata %s: duplicate key", key)
		}
		f.Meta[key] = v
	}
	align := uint64(DefaultAlignment)
	if v, ok := f.Meta["general.alignment"]; ok {
		a, err := f.IntValue("general.alignment", v)
		if err != nil {
			return nil, err
		}
		if a == 0 || a&(a-1) != 0 || a > maxAlignment {
			return nil, f.Errorf("metadata general.alignment = %d: must be a power of two between 1 and %d", a, maxAlignment)
		}
		align = uint64(a)
	}
	for i := range nt {
		tname, err := g.str()
		if err != nil {
			return nil, f.Errorf("tensor info %d of %d: %w", i, nt, err)
		}
		t, err := g.tensorInfo(tname, align)
		if err != nil {
			return nil, f.Errorf("tensor %s: %w", tname, err)
		}
		if _, dup := f.Tensors[tname]; dup {
			return nil, f.Errorf("tensor %s: duplicate name", tname)
		}
		f.Tensors[tname] = t
		f.Order = append(f.Order, t)
	}
	// The data section starts at the next multiple of the alignment;
	// tensor offsets are relative to it.
	data := (uint64(g.pos) + align - 1) / align * align
	for _, t := range f.Order {
		rel := uint64(t.Offset)
		if rel > uint64(size) || data > uint64(size)-rel || uint64(t.Size) > uint64(size)-data-rel {
			return nil, f.Errorf("tensor %s: %d bytes of data at offset %d (data section at %d) run past the end of the file (%d bytes): %w",
				t.Name, t.Size, rel, data, size, ErrTruncated)
		}
		t.Offset = int64(data + rel)
	}
	byOff := slices.Clone(f.Order)
	slices.SortStableFunc(byOff, func(a, b *Tensor) int { return cmp.Compare(a.Offset, b.Offset) })
	for i := 1; i < len(byOff); i++ {
		if a, b := byOff[i-1], byOff[i]; a.Offset+a.Size > b.Offset {
			return nil, f.Errorf("tensors %s (bytes %d to %d) and %s (from byte %d) overlap", a.Name, a.Offset, a.Offset+a.Size, b.Name, b.Offset)
		}
	}
	return f, nil
}

// tensorInfo reads one tensor-table entry after its name; Offset is left
// relative to the data section.
func (g *reader) tensorInfo(name string, align uint64) (*Tensor, error) {
	nd, err := g.u32()
	if err != nil {
		return nil, err
	}
	if nd < 1 || nd > 4 {
		return nil, fmt.Errorf("%d dimensions: want 1 to 4", nd)
	}
	t := &Tensor{Name: name, Shape: make([]uint64, nd)}
	n := uint64(1)
	for i := range t.Shape {
		if t.Shape[i], err = g.u64(); err != nil {
			return nil, err
		}
		hi, lo := bits.Mul64(n, t.Shape[i])
		if t.Shape[i] == 0 || hi != 0 || lo > math.MaxInt64/8 {
			return nil, fmt.Errorf("shape %v: every dimension must be ≥ 1 and the element count below 2^60", t.Shape[:i+1])
		}
		n = lo
	}
	typ, err := g.u32()
	if err != nil {
		return nil, err
	}
	t.Type = Type(typ)
	off, err := g.u64()
	if err != nil {
		return nil, err
	}
	be, bb, ok := t.Type.Block()
	switch {
	case !ok:
		return nil, fmt.Errorf("%s is not supported (supported: %s)", t.Type, Supported)
	case t.Shape[0]%uint64(be) != 0:
		return nil, fmt.Errorf("%s: ne[0] = %d is not a multiple of the block size %d", t.Type, t.Shape[0], be)
	case off%align != 0:
		return nil, fmt.Errorf("data offset %d is not a multiple of the alignment %d", off, align)
	case off > math.MaxInt64:
		return nil, fmt.Errorf("data offset %d is beyond any file", off)
	}
	t.Size = int64(n / uint64(be) * uint64(bb))
	t.Offset = int64(off)
	return t, nil
}

// Elements is the number of elements of t (the product of its shape).
func (t *Tensor) Elements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= int64(d)
	}
	return n
}
