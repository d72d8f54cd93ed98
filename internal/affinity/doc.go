// Package affinity pins OS threads to CPUs (sched_setaffinity) and reports
// the process's allowed CPUs and the CPU a thread runs on (getcpu).
//
// A goroutine that pins must hold runtime.LockOSThread for as long as the pin
// matters. When it is done it should return without calling
// runtime.UnlockOSThread: the runtime then discards the thread, so the narrowed
// mask is not inherited by goroutines scheduled on it later.
//
// Only Linux is implemented; elsewhere every function returns an error saying
// so. This package imports no other package of bench.
package affinity
