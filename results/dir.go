package results

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// MkdirAll creates dir and any missing parents (mode 0755), as os.MkdirAll
// does, and returns undo, which removes the directories this call created
// that are still empty, deepest first: a command that fails after
// creating its output directory calls it so that it leaves no empty
// directory behind. undo never removes a directory that holds anything.
func MkdirAll(dir string) (undo func(), err error) {
	var created []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || !errors.Is(err, fs.ErrNotExist) {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	undo = func() {
		for _, d := range created { // deepest first
			if os.Remove(d) != nil {
				return
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		undo()
		return func() {}, err
	}
	return undo, nil
}

// MkdirUnique creates a new directory named base, or base-2, base-3, ...
// when that exists (at most base-999), with os.Mkdir, which fails if the
// name exists: two processes choosing the same base never share the
// directory. The parent is created if missing (undo removes it again when
// empty, as MkdirAll's). It returns the directory created.
func MkdirUnique(base string) (dir string, undo func(), err error) {
	undoParent, err := MkdirAll(filepath.Dir(base))
	if err != nil {
		return "", func() {}, err
	}
	for n := 1; n < 1000; n++ {
		dir = base
		if n > 1 {
			dir = base + "-" + strconv.Itoa(n)
		}
		err = os.Mkdir(dir, 0o755)
		if err == nil {
			return dir, func() { os.Remove(dir); undoParent() }, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	undoParent()
	return "", func() {}, err
}

// CheckWritableDir reports whether a file can be created in dir: it
// creates and removes a temporary file there. The error says why not
// ("not writable: ...").
func CheckWritableDir(dir string) error {
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("not writable: %w", UnwrapPath(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// CheckWritableFile reports whether WriteFileAtomic(path, ...) can
// succeed as far as can be known before it: path is not a directory and
// its directory exists and is writable. Commands call it before they
// measure, so a result is not lost at the rename.
func CheckWritableFile(path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return errors.New("is a directory")
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("directory %s: %w", dir, UnwrapPath(err))
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: not a directory", dir)
	}
	if err := CheckWritableDir(dir); err != nil {
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	return nil
}

// UnwrapPath returns the error inside a *fs.PathError (err itself
// otherwise), for messages that name the path themselves.
func UnwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
