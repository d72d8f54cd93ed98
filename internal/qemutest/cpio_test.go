package qemutest

import (
	"bytes"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// readNewc parses a newc archive (the inverse of writeCPIO), checking the
// magic and the 4-byte alignment of every header and data block.
func readNewc(t *testing.T, b []byte) []cpioEntry {
	t.Helper()
	var out []cpioEntry
	off := 0
	field := func(i int) uint32 {
		v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		if err != nil {
			t.Fatalf("header at %d, field %d: %v", off, i, err)
		}
		return uint32(v)
	}
	for {
		if off%4 != 0 || off+110 > len(b) {
			t.Fatalf("header at offset %d of %d: misaligned or truncated", off, len(b))
		}
		if m := string(b[off : off+6]); m != "070701" {
			t.Fatalf("header at %d: magic %q, want 070701", off, m)
		}
		e := cpioEntry{mode: field(1), rdevMajor: field(9), rdevMinor: field(10)}
		size, namesize := int(field(6)), int(field(11))
		name := b[off+110 : off+110+namesize]
		if name[namesize-1] != 0 {
			t.Fatalf("name at %d not NUL-terminated: %q", off, name)
		}
		e.name = string(name[:namesize-1])
		data := (off + 110 + namesize + 3) &^ 3
		e.data = b[data : data+size]
		off = (data + size + 3) &^ 3
		if e.name == "TRAILER!!!" {
			if off != len(b) {
				t.Fatalf("trailer ends at %d, archive at %d", off, len(b))
			}
			return out
		}
		out = append(out, e)
	}
}

func TestWriteCPIO(t *testing.T) {
	init := []byte("\x7fELF and then some") // 18 bytes: needs padding
	b, err := initramfs(init)
	if err != nil {
		t.Fatal(err)
	}
	got := readNewc(t, b)
	want := []cpioEntry{
		{name: "dev", mode: cpioDir | 0o755},
		{name: "dev/console", mode: cpioChar | 0o600, rdevMajor: 5, rdevMinor: 1},
		{name: "proc", mode: cpioDir | 0o755},
		{name: "sys", mode: cpioDir | 0o755},
		{name: "init", mode: cpioFile | 0o755, data: init},
	}
	if !slices.EqualFunc(got, want, func(a, b cpioEntry) bool {
		return a.name == b.name && a.mode == b.mode && a.rdevMajor == b.rdevMajor &&
			a.rdevMinor == b.rdevMinor && bytes.Equal(a.data, b.data)
	}) {
		t.Errorf("archive holds %+v\nwant %+v", got, want)
	}

	// GNU cpio, where installed, must read it too.
	cpio, err := exec.LookPath("cpio")
	if err != nil {
		t.Logf("no cpio command to cross-check with: %v", err)
		return
	}
	cmd := exec.Command(cpio, "-t", "--quiet")
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cpio -t: %v", err)
	}
	if names := strings.Fields(string(out)); !slices.Equal(names, []string{"dev", "dev/console", "proc", "sys", "init"}) {
		t.Errorf("cpio -t lists %q", names)
	}
}
