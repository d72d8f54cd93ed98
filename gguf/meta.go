package gguf

// IntValue converts an integer metadata value (of key, for errors) to an
// int in [0, MaxInt]. Errors: an array (per-layer values), a value of
// another type, or one out of range.
func (f *File) IntValue(key string, v Value) (int, error) {
	switch v.Type {
	case Uint8, Uint16, Uint32, Uint64:
		if v.U <= MaxInt {
			return int(v.U), nil
		}
	case Int8, Int16, Int32, Int64:
		if v.I >= 0 && v.I <= MaxInt {
			return int(v.I), nil
		}
	case Array:
		return 0, f.Errorf("metadata %s: %s, want one integer (per-layer values are not supported)", key, v)
	default:
		return 0, f.Errorf("metadata %s: a %s (%s), want an integer", key, v.Type, v)
	}
	return 0, f.Errorf("metadata %s = %s: must be between 0 and %d", key, v, MaxInt)
}

// MetaInt returns the integer at key (see IntValue), or def when it is
// absent and not required.
func (f *File) MetaInt(key string, def int, required bool) (int, error) {
	v, ok := f.Meta[key]
	if !ok {
		if required {
			return 0, f.Errorf("missing metadata key %s", key)
		}
		return def, nil
	}
	return f.IntValue(key, v)
}

// MetaFloat returns the float32 or float64 at key, or def when absent and
// not required.
func (f *File) MetaFloat(key string, def float64, required bool) (float64, error) {
	v, ok := f.Meta[key]
	switch {
	case !ok && required:
		return 0, f.Errorf("missing metadata key %s", key)
	case !ok:
		return def, nil
	case v.Type != Float32 && v.Type != Float64:
		return 0, f.Errorf("metadata %s: a %s (%s), want a float", key, v.Type, v)
	}
	return v.F, nil
}

// MetaString returns the string at key ("" and false when absent).
func (f *File) MetaString(key string) (string, bool, error) {
	v, ok := f.Meta[key]
	if !ok {
		return "", false, nil
	}
	if v.Type != String {
		return "", false, f.Errorf("metadata %s: a %s (%s), want a string", key, v.Type, v)
	}
	return v.S, true, nil
}
