package qemutest

import (
	"bytes"
	"fmt"
	"io"
)

// File modes of cpio entries (the S_IF* bits of st_mode).
const (
	cpioDir  = 0o040000
	cpioChar = 0o020000
	cpioFile = 0o100000
)

// cpioEntry is one file of a newc archive: a directory, a character device
// (rdevMajor, rdevMinor) or a regular file (data).
type cpioEntry struct {
	name                 string
	mode                 uint32
	rdevMajor, rdevMinor uint32
	data                 []byte
}

// writeCPIO writes entries as a "newc" (SVR4, no CRC) cpio archive, the
// format the kernel unpacks as an initramfs, ending with the TRAILER!!!
// entry. Each header (110 bytes) plus the NUL-terminated name is padded to a
// multiple of 4 bytes, and so is each file's data.
func writeCPIO(w io.Writer, entries []cpioEntry) error {
	pad := func(n int) []byte { return make([]byte, (4-n%4)%4) }
	for i, e := range append(entries, cpioEntry{name: "TRAILER!!!"}) {
		nlink := 1
		if e.mode&0o170000 == cpioDir {
			nlink = 2
		}
		// magic, ino, mode, uid, gid, nlink, mtime, filesize, devmajor,
		// devminor, rdevmajor, rdevminor, namesize, check.
		hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
			i+1, e.mode, 0, 0, nlink, 0, len(e.data), 0, 0, e.rdevMajor, e.rdevMinor, len(e.name)+1, 0)
		var b bytes.Buffer
		b.WriteString(hdr)
		b.WriteString(e.name)
		b.WriteByte(0)
		b.Write(pad(b.Len()))
		if _, err := w.Write(b.Bytes()); err != nil {
			return err
		}
		if _, err := w.Write(e.data); err != nil {
			return err
		}
		if _, err := w.Write(pad(len(e.data))); err != nil {
			return err
		}
	}
	return nil
}

// initramfs returns the guest's root file system: /dev/console, the mount
// points /proc and /sys, and init as /init.
func initramfs(init []byte) ([]byte, error) {
	var b bytes.Buffer
	err := writeCPIO(&b, []cpioEntry{
		{name: "dev", mode: cpioDir | 0o755},
		{name: "dev/console", mode: cpioChar | 0o600, rdevMajor: 5, rdevMinor: 1},
		{name: "proc", mode: cpioDir | 0o755},
		{name: "sys", mode: cpioDir | 0o755},
		{name: "init", mode: cpioFile | 0o755, data: init},
	})
	return b.Bytes(), err
}
