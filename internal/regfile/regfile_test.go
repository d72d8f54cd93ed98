package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.json")
	if err := os.WriteFile(p, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := ReadFile(p, 10)
	if err != nil || string(data) != "0123456789" {
		t.Fatalf("ReadFile at the limit: %q, %v", data, err)
	}
	if data, err := ReadFile(p, 0); err != nil || len(data) != 10 {
		t.Fatalf("ReadFile without limit: %q, %v", data, err)
	}
	_, err = ReadFile(p, 9)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "10 bytes, more than the 9") {
		t.Fatalf("ReadFile over the limit: %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	_, err = ReadFile(dir, 0)
	if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "a directory") {
		t.Fatalf("directory: %v", err)
	}
}
