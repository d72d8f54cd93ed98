package results

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// A second LockDir on a locked directory fails at once naming the
// holder's pid; Unlock removes the lock file and lets the next one in.
func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	l, err := LockDir(dir, "sweep.lock")
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockDir(dir, "sweep.lock")
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || !strings.Contains(err.Error(), "pid ") {
		t.Fatalf("second lock: %v", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "sweep.lock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file after Unlock: %v", err)
	}
	l2, err := LockDir(dir, "sweep.lock")
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	l2.Unlock()
	l2.Unlock() // twice is fine
}

// Of many goroutines racing for one lock (each its own open file, as
// separate processes have), at most one holds it at any time.
func TestLockDirRace(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	holders, maxHolders := 0, 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				l, err := LockDir(dir, "x.lock")
				var le *LockedError
				if errors.As(err, &le) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				holders++
				maxHolders = max(maxHolders, holders)
				mu.Unlock()
				mu.Lock()
				holders--
				mu.Unlock()
				l.Unlock()
			}
		})
	}
	wg.Wait()
	if maxHolders != 1 {
		t.Errorf("%d holders at once", maxHolders)
	}
}

func TestMkdirAllUndo(t *testing.T) {
	tmp := t.TempDir()
	deep := filepath.Join(tmp, "a", "b", "c")
	undo, err := MkdirAll(deep)
	if err != nil {
		t.Fatal(err)
	}
	undo()
	if _, err := os.Stat(filepath.Join(tmp, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("undo left %s: %v", filepath.Join(tmp, "a"), err)
	}
	// A directory that holds something stays.
	undo, _ = MkdirAll(deep)
	os.WriteFile(filepath.Join(tmp, "a", "keep"), nil, 0o644)
	undo()
	if _, err := os.Stat(filepath.Join(tmp, "a", "keep")); err != nil {
		t.Errorf("undo removed a non-empty directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "a", "b")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("undo left the empty %s", filepath.Join(tmp, "a", "b"))
	}
}

// Six directories asked for with one name in the same second are six
// directories.
func TestMkdirUnique(t *testing.T) {
	base := filepath.Join(t.TempDir(), "results", "host-20260101-120000")
	var mu sync.Mutex
	got := map[string]bool{}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			d, _, err := MkdirUnique(base)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[d] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(got) != 6 || !got[base] || !got[base+"-6"] {
		t.Errorf("directories %v", got)
	}
}

func TestCheckWritableFile(t *testing.T) {
	tmp := t.TempDir()
	if err := CheckWritableFile(filepath.Join(tmp, "p.json")); err != nil {
		t.Error(err)
	}
	if err := CheckWritableFile(tmp); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
	if err := CheckWritableFile(filepath.Join(tmp, "no", "p.json")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("a missing directory: %v", err)
	}
	f := filepath.Join(tmp, "file")
	os.WriteFile(f, nil, 0o644)
	if err := CheckWritableFile(filepath.Join(f, "p.json")); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("under a file: %v", err)
	}
	ents, _ := os.ReadDir(tmp)
	if len(ents) != 1 {
		t.Errorf("left files behind: %v", ents)
	}
}
