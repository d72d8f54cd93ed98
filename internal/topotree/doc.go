// Package topotree explores the service configurations of a machine as
// Sandwich does (§5): the TopoTree of the machine (built by
// internal/topology from /sys; §5.1), its group and remove transforms with
// the equivalence hashing of §5.2 (Tree.Apply, Tree.ApplySpec, Enumerate),
// and the sandwich-config cross-sections of §5.3 that turn a tree into
// service configurations (process count = TP degree, PUs and NUMA nodes
// per process) under the operator limits of §5.3 (TP must divide the
// query and KV heads; Configs, Limits). The named transform lists of
// ApplySpec are the core-location experiments of Fig. 3(a) (one idle core
// per L2/L3 cluster or node, SC-RM, NUMA-RM, fast NUMA). Phase
// configurations (phase.go; Sandwich §3.2–3.3: prefill and decode on
// configurations of their own) are parsed and resolved here to the CPUs
// a phase runs on (ParseConfigSpec, ResolveConfig: all, cpus=LIST,
// config=N, a transform list or preset), and Candidates lists the TP
// degree 1 configurations that `--configs auto` ranks.
//
// Not here: Sandwich's pruning by measured performance (EnumOptions.Keep
// takes the caller's judgement) and its early stopping, which need
// measurements of each configuration.
//
// This package imports results and internal/topology; it must not import
// probes, reports, kernels, engine, models, roofline or any command package.
package topotree
