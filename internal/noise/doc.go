// Package noise measures what the machine did while a figure was timed
// (issue #16 part 3), for the probe's figures (package probes) and the
// engine's runs (bench run, each sweep cell): thread and process CPU time
// (CLOCK_THREAD_CPUTIME_ID, CLOCK_PROCESS_CPUTIME_ID), the steal time of a
// set of CPUs (/proc/stat), the one-minute load average (/proc/loadavg),
// the coefficient of variation of a series whose level drifts (successive
// differences, SuccessiveCV), and the verdict against results'
// thresholds (Judge) into a results.Noise. Off Linux the clocks and files
// are unavailable and only the cv can mark a figure.
//
// It also measures where the host put a set of CPUs (MeasurePlacement:
// core-to-core round trips between pinned threads) and records in a Noise
// when that moved from a reference (RecordPlacement): a VM's host moving
// its vCPUs between dies changes the bandwidth of every figure on more
// than one CPU, which no other of these measures shows.
//
// It imports results (the Noise record and its thresholds) and
// internal/affinity (pinning the round trip's threads), and nothing else
// of bench; it must not import probes, engine, reports, kernels,
// roofline, models or a command.
package noise
