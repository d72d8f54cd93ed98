// Package regfile opens and reads input files that must be regular files,
// so that a path naming a FIFO, a terminal or a device such as /dev/zero
// gives one clear error at once instead of a read that blocks or never
// ends, and a regular file larger than its reader accepts is refused
// before it is read into memory.
//
// Every file bench reads as input (profiles, sweep results, llama-bench
// output, model configs, weight files) is opened through this package.
// It imports no other package of bench.
package regfile
