package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cpubench/bench/internal/regfile"
)

// MaxProfileBytes is the largest profile.json ReadProfile reads (a full
// profile is under 1 MB).
const MaxProfileBytes = 64 << 20

// ReadProfile reads and validates a profile.json. Errors name the file and
// the problem: unreadable file, not a regular file (a named pipe or a
// device is refused, not read), larger than MaxProfileBytes, invalid JSON
// (with the byte offset), a missing or unsupported "schema", or a missing
// required key.
func ReadProfile(path string) (*Profile, error) {
	data, err := regfile.ReadFile(path, MaxProfileBytes)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	p, err := ParseProfile(data)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", path, err)
	}
	return p, nil
}

// ParseProfile decodes and validates profile JSON (see ReadProfile).
func ParseProfile(data []byte) (*Profile, error) {
	var head struct {
		Schema *string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, jsonError(data, err)
	}
	if head.Schema == nil {
		return nil, errors.New(`missing key "schema" (want "` + SchemaV1 + `")`)
	}
	if *head.Schema != SchemaV1 {
		if strings.HasPrefix(*head.Schema, "bench.profile/") {
			return nil, fmt.Errorf("schema %q is not supported by this bench (it reads %q)", *head.Schema, SchemaV1)
		}
		return nil, fmt.Errorf("schema %q is not a bench profile (want %q)", *head.Schema, SchemaV1)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, jsonError(data, err)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// Validate checks the keys a reader relies on.
func (p *Profile) Validate() error {
	if p.Schema != SchemaV1 {
		return fmt.Errorf("schema %q: want %q", p.Schema, SchemaV1)
	}
	if p.Host == "" {
		return errors.New(`missing key "host"`)
	}
	if p.CreatedAt.IsZero() {
		return errors.New(`missing key "created_at"`)
	}
	if t := p.Topology; t != nil {
		if t.Threads <= 0 {
			return fmt.Errorf(`topology.threads = %d: must be ≥ 1`, t.Threads)
		}
		if len(t.Distances) != len(t.Nodes) {
			return fmt.Errorf("topology.distances has %d rows for %d nodes", len(t.Distances), len(t.Nodes))
		}
	}
	if m := p.Memory; m != nil {
		for i, b := range m.WorkingSet {
			if b.Kernel == "" || b.Threads <= 0 || b.WorkingSetBytes <= 0 {
				return fmt.Errorf("memory.working_set[%d]: kernel, threads and working_set_bytes are required", i)
			}
		}
	}
	if c := p.Calibration; c != nil {
		if err := c.Validate(); err != nil {
			return err
		}
	}
	return nil
}

func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Errorf("invalid JSON at line %d (byte %d): %v", line, se.Offset, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("key %q: %s is not a valid %s", te.Field, te.Value, te.Type)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}
