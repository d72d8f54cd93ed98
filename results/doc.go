// Package results owns the on-disk formats of bench: the versioned machine
// profile (schema "bench.profile/v1", documented in docs/profile-schema.md and
// results/schema/profile.v1.schema.json), the summary statistics every
// measurement carries, and atomic file writing.
//
// results imports no measurement or report code: probes write these types,
// reports and roofline read them.
package results
