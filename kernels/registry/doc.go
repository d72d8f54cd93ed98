// Package registry is the one kernel registry of bench: every kernel family
// (kernels' memory, non-linear and attention-dot kernels, kernels/gemm's
// backends, kernels/peak's compute-ceiling loops) registers its
// implementations in a Registry[T] and chooses among them by the same rule.
//
// It owns:
//
//   - Entry: one implementation, declaring its Name (unique in its
//     registry), its ISA (one field name in every family), whether this CPU
//     can run it now (Lacks, evaluated at each call, so cpu.Disable and
//     BENCH_CPU_DISABLE take effect), a Rank breaking ties within an ISA,
//     and MeasureOnly for an implementation that is measured but never
//     chosen.
//   - The ISA capability order shared by all families (Order, ISARank):
//     an ISA ranks above those whose registers are narrower, whose
//     instructions it extends, or which run on the vector units where it
//     has a matrix unit.
//   - Registry: Register, All and Available (registration order), ByName
//     and Lookup, and Best and BestWhere: the available entry of the highest
//     ISARank, then the highest Rank, then the first name in byte order,
//     never a MeasureOnly one. A choice is cached for the CPU features it
//     was made under (internal/cpu's X86 and ARM64, compared on every call,
//     so a changed feature set chooses again); Reset drops the cache for
//     tests that change what Lacks reads elsewhere.
//
// A Registry is safe for concurrent use; Best, BestWhere, ByName and
// Lookup read without locking or allocating once a choice is cached.
//
// This package imports only internal/cpu of bench; it must not import
// kernels, kernels/gemm, kernels/peak, probes or engine.
package registry
