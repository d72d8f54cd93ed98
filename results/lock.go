package results

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// DirLock is an exclusive lock on a results directory, held by this
// process until Unlock (or until it exits: the kernel releases the lock of
// a process that dies, whatever killed it).
type DirLock struct {
	f    *os.File
	path string
}

// LockedError is LockDir's error when another process holds the lock.
type LockedError struct {
	Path string // the lock file
	PID  int    // the holder's process id, 0 when it could not be read
}

func (e *LockedError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("in use by another bench process (pid %d, lock %s)", e.PID, e.Path)
	}
	return fmt.Sprintf("in use by another bench process (lock %s)", e.Path)
}

// LockDir takes an exclusive, non-blocking lock (flock(2), LOCK_EX |
// LOCK_NB) on the file name in dir, creating it, and writes this process's
// id into it. If another process holds the lock it returns a *LockedError
// naming that process's id at once, without waiting. Unlock removes the
// file: a lock file is only ever present while a process holds it (or
// after a crash, when it is stale, unlocked and taken over by the next
// LockDir). Where flock is not available (not unix) it locks nothing.
func LockDir(dir, name string) (*DirLock, error) {
	path := dir + string(os.PathSeparator) + name
	// Each retry means another process took and released the lock between
	// our open and our check; 10 tries were used up by 8 goroutines
	// contending on a loaded 2-core machine (TestLockDirRace).
	for range lockTries {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, UnwrapPath(err))
		}
		held, err := flockExclusive(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if held {
			pid := readPID(f)
			f.Close()
			return nil, &LockedError{Path: path, PID: pid}
		}
		// The holder before us may have removed the file between our
		// open and our lock: then we hold a lock on a file no one else
		// sees, so start again on the path's current file.
		st1, err1 := f.Stat()
		st2, err2 := os.Stat(path)
		if err1 != nil || err2 != nil || !os.SameFile(st1, st2) {
			f.Close()
			continue
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, UnwrapPath(err))
		}
		if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, UnwrapPath(err))
		}
		return &DirLock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("lock %s: the lock file keeps being replaced", path)
}

// lockTries bounds LockDir's retries on a lock file replaced under it.
const lockTries = 1000

// Unlock removes the lock file and releases the lock. It may be called
// more than once.
func (l *DirLock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := os.Remove(l.path) // while still holding the lock
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	l.f = nil
	return err
}

// readPID reads the process id a lock file holds (0 if none).
func readPID(f *os.File) int {
	b := make([]byte, 32)
	n, _ := f.ReadAt(b, 0)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b[:n])))
	if err != nil {
		return 0
	}
	return pid
}
