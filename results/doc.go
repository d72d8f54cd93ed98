// Package results owns the on-disk formats of bench: the versioned machine
// profile (schema "bench.profile/v1", documented in docs/profile-schema.md and
// results/schema/profile.v1.schema.json), the summary statistics every
// measurement carries, and the file plumbing of results: atomic writes
// (WriteFileAtomic), output directories that leave nothing behind on
// failure (MkdirAll's undo) or are unique per run (MkdirUnique), checks
// that an output can be written before measuring (CheckWritableFile), and
// the exclusive lock of a directory one process writes (LockDir, flock(2)
// through golang.org/x/sys/unix). Its readers refuse a named pipe or a
// device and cap sizes (internal/regfile).
//
// results imports no measurement or report code (only internal/regfile of
// bench): probes write these types, reports and roofline read them.
package results
