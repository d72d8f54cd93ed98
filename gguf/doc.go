// Package gguf reads the header of a GGUF file, llama.cpp's model format
// (specification: ggml-org/ggml docs/gguf.md; reader: llama.cpp
// ggml/src/gguf.cpp): the magic, version and counts, the metadata keys
// and values (Value; arrays keep only their element type and length), the
// tensor table (Tensor: name, shape, ggml type, absolute data offset and
// size), and ggml's tensor types with their block sizes (Type.Block).
// Parse checks what the format promises — a little-endian version 2 or 3
// file, counts and strings that fit the file, at most 4 dimensions of at
// least 1 element, data offsets aligned to general.alignment, every
// tensor's data inside the file and overlapping no other — and returns
// one error naming the file and what is wrong (ErrTruncated, wrapped,
// for a read past the end).
//
// It does not read or decode tensor data and knows no model: mapping
// tensors and metadata to a transformer (architectures, shapes, which
// tensors are used) and dequantizing them is package engine's
// (engine/gguf.go), and so is writing GGUF files (engine/ggufwrite.go,
// which encodes with this package's type tables).
//
// This package imports no other package of bench.
package gguf
