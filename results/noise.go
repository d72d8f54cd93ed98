package results

import (
	"fmt"
	"reflect"
	"strings"
)

// NoiseSummary counts a profile's figures that carry a noise record and
// names the noisy ones.
type NoiseSummary struct {
	// Checked is the number of figures with a noise record; Noisy how many
	// of them are marked noisy.
	Checked, Noisy int
	// Figures are the noisy figures' JSON paths (e.g.
	// "memory.levels[2].gbps") with their reasons.
	Figures []string
}

// Noise walks every Stat of p (by reflection over the profile's sections)
// and summarizes their noise records (issue #16 part 3).
func (p *Profile) Noise() NoiseSummary {
	var s NoiseSummary
	walkStats(reflect.ValueOf(p), "", func(path string, st *Stat) {
		if st.Noise == nil {
			return
		}
		s.Checked++
		if st.Noise.Noisy {
			s.Noisy++
			s.Figures = append(s.Figures, fmt.Sprintf("%s: %s", path, st.Noise.Why))
		}
	})
	return s
}

// String is one line: "N of M figures noisy" (with the first few named).
func (s NoiseSummary) String() string {
	if s.Checked == 0 {
		return "no figure carries a noise record (profile written before the check)"
	}
	if s.Noisy == 0 {
		return fmt.Sprintf("noise check: 0 of %d figures noisy", s.Checked)
	}
	const show = 3
	names := s.Figures
	more := ""
	if len(names) > show {
		names, more = names[:show], fmt.Sprintf("; and %d more", len(s.Figures)-show)
	}
	return fmt.Sprintf("noise check: %d of %d figures noisy after repeats (%s%s)", s.Noisy, s.Checked, strings.Join(names, "; "), more)
}

var statType = reflect.TypeFor[Stat]()

// walkStats calls f on every Stat reachable from v, with its JSON path.
func walkStats(v reflect.Value, path string, f func(string, *Stat)) {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			walkStats(v.Elem(), path, f)
		}
	case reflect.Struct:
		if v.Type() == statType {
			if v.CanAddr() {
				f(path, v.Addr().Interface().(*Stat))
			}
			return
		}
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			walkStats(v.Field(i), join(path, name), f)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			walkStats(v.Index(i), fmt.Sprintf("%s[%d]", path, i), f)
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			// Map values are not addressable: copy out.
			e := reflect.New(iter.Value().Type()).Elem()
			e.Set(iter.Value())
			walkStats(e, fmt.Sprintf("%s[%v]", path, iter.Key()), f)
		}
	}
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// WalkStats calls f on every Stat of p (by reflection over the profile's
// sections) with its JSON path, e.g. "memory.levels[2].gbps".
func (p *Profile) WalkStats(f func(path string, st *Stat)) {
	walkStats(reflect.ValueOf(p), "", f)
}
