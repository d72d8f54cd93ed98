package regfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is wrapped by the errors of Open and ReadFile for a path
// that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped by the error of ReadFile for a file larger than
// its limit.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading if it is a regular file (symbolic links
// followed). Anything else — a directory, a named pipe, a socket, a
// character or block device — gives an *fs.PathError wrapping
// ErrNotRegular whose message names the kind ("open /dev/zero: not a
// regular file (a character device)"). The check is made before the open,
// so a named pipe without a writer does not block, and again on the open
// file, so a path swapped in between is caught too. Errors of the open
// itself (missing file, permission) are returned as os.Open gives them.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(path, st); err != nil {
		return nil, err
	}
	f, err := openNonblock(path)
	if err != nil {
		return nil, err
	}
	st, err = f.Stat()
	if err == nil {
		err = regular(path, st)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadFile reads the whole regular file at path (see Open), at most limit
// bytes: a larger file gives an error wrapping ErrTooLarge that names its
// size and the limit, without reading it. limit ≤ 0 means no limit.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if limit > 0 && st.Size() > limit {
		return nil, tooLarge(path, st.Size(), limit)
	}
	r := io.Reader(f)
	if limit > 0 {
		r = io.LimitReader(f, limit+1) // the file may grow while it is read
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: path, Err: err}
	}
	if limit > 0 && int64(len(data)) > limit {
		return nil, tooLarge(path, int64(len(data)), limit)
	}
	return data, nil
}

func tooLarge(path string, size, limit int64) error {
	return &fs.PathError{Op: "read", Path: path,
		Err: fmt.Errorf("%w: %d bytes, more than the %d (%s) accepted here", ErrTooLarge, size, limit, human(limit))}
}

// human writes n bytes in binary units (64 MiB).
func human(n int64) string {
	const unit = 1024
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for n >= unit && n%unit == 0 && i < len(units)-1 {
		n /= unit
		i++
	}
	return fmt.Sprintf("%d %s", n, units[i])
}

// regular checks that st, the status of path, is a regular file.
func regular(path string, st fs.FileInfo) error {
	m := st.Mode()
	if m.IsRegular() {
		return nil
	}
	return &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w (%s)", ErrNotRegular, kind(m))}
}

// kind names a file type that is not regular.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m&fs.ModeIrregular != 0:
		return "an irregular file"
	}
	return "mode " + m.String()
}
