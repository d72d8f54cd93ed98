package gguf

import "fmt"

// Type is a tensor's element type (ggml.h enum ggml_type).
type Type uint32

// The tensor types Parse accepts.
const (
	F32   Type = 0
	F16   Type = 1
	Q4_0  Type = 2
	Q8_0  Type = 8
	Q4_K  Type = 12
	Q6_K  Type = 14
	BF16  Type = 30
	TQ1_0 Type = 34
	TQ2_0 Type = 35
)

// Supported lists the types Parse accepts, for messages.
const Supported = "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K, TQ2_0, TQ1_0"

// typeNames names ggml's types for messages (ggml.h; 4, 5 and 31–33,
// 36–38 were removed from ggml).
var typeNames = map[Type]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 6: "Q5_0", 7: "Q5_1", 8: "Q8_0", 9: "Q8_1",
	10: "Q2_K", 11: "Q3_K", 12: "Q4_K", 13: "Q5_K", 14: "Q6_K", 15: "Q8_K",
	16: "IQ2_XXS", 17: "IQ2_XS", 18: "IQ3_XXS", 19: "IQ1_S", 20: "IQ4_NL", 21: "IQ3_S", 22: "IQ2_S", 23: "IQ4_XS",
	24: "I8", 25: "I16", 26: "I32", 27: "I64", 28: "F64", 29: "IQ1_M", 30: "BF16",
	34: "TQ1_0", 35: "TQ2_0", 39: "MXFP4",
}

// Name is ggml's name of t ("Q8_0"), "" for a type ggml does not define.
func (t Type) Name() string { return typeNames[t] }

// String is t for messages: "Q8_0 (ggml type 8)", or "ggml type 99
// (unknown)".
func (t Type) String() string {
	if s, ok := typeNames[t]; ok {
		return fmt.Sprintf("%s (ggml type %d)", s, uint32(t))
	}
	return fmt.Sprintf("ggml type %d (unknown)", uint32(t))
}

// QK is the block length, in elements, of Q8_0 and Q4_0 (ggml-common.h
// QK8_0 = QK4_0): an fp16 scale d and 32 quants, each value d·q (Q8_0:
// int8 q; Q4_0: 4-bit q − 8).
const QK = 32

// QKK is the super-block length, in elements, of Q4_K, Q6_K, TQ2_0 and
// TQ1_0 (ggml-common.h QK_K).
const QKK = 256

// Block returns the elements and bytes of one block of t (1 element for
// the float types; ggml.c type_traits blck_size and type_size), ok false
// for a type Parse does not accept.
func (t Type) Block() (elems, nbytes int, ok bool) {
	switch t {
	case F32:
		return 1, 4, true
	case F16, BF16:
		return 1, 2, true
	case Q8_0:
		return QK, 2 + QK, true
	case Q4_0:
		return QK, 2 + QK/2, true
	case Q4_K:
		return QKK, 144, true // fp16 d, dmin; 12 bytes of 6-bit scales; 128 of 4-bit quants
	case Q6_K:
		return QKK, 210, true // 128 low nibbles, 64 high 2-bit pairs, 16 int8 scales, fp16 d
	case TQ2_0:
		return QKK, 66, true // 64 bytes of 2-bit quants, fp16 d
	case TQ1_0:
		return QKK, 54, true // 48 bytes base-3, 4 bytes of 2-bit quants, fp16 d
	}
	return 0, 0, false
}

// ValueType is a metadata value's type (gguf.md gguf_metadata_value_type).
type ValueType uint32

// The metadata value types.
const (
	Uint8 ValueType = iota
	Int8
	Uint16
	Int16
	Uint32
	Int32
	Float32
	Bool
	String
	Array
	Uint64
	Int64
	Float64
)

var valueTypeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool",
	"string", "array", "uint64", "int64", "float64"}

func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("value type %d", uint32(t))
}

// Size is the encoded size in bytes of a fixed-size value, 0 for String,
// Array and unknown types.
func (t ValueType) Size() int {
	switch t {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16:
		return 2
	case Uint32, Int32, Float32:
		return 4
	case Uint64, Int64, Float64:
		return 8
	}
	return 0
}

// Value is one metadata value; an array keeps only its element type and
// length (its elements are skipped).
type Value struct {
	Type ValueType
	U    uint64 // unsigned types and Bool (0 or 1)
	I    int64  // signed types
	F    float64
	S    string
	Elem ValueType // an Array's element type
	N    uint64    // an Array's length
}

// String is v for messages: a quoted string, a number, true/false, or
// "an array of N TYPE".
func (v Value) String() string {
	switch v.Type {
	case String:
		return fmt.Sprintf("%q", v.S)
	case Array:
		return fmt.Sprintf("an array of %d %s", v.N, v.Elem)
	case Float32, Float64:
		return fmt.Sprint(v.F)
	case Int8, Int16, Int32, Int64:
		return fmt.Sprint(v.I)
	case Bool:
		return fmt.Sprint(v.U != 0)
	}
	return fmt.Sprint(v.U)
}
