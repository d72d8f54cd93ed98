// Package deps holds no code: its test, deps_test.go, checks the import
// graph of the whole module against the rules that each package's doc.go
// states ("imports only ...", "imports no other package of bench", "must
// not import ..."), as Go's own go/build deps_test.go does for the standard
// library. The rules are one table there; a new package needs a line in it,
// and its doc.go must name the packages its rule names.
//
// This package imports no other package of bench.
package deps
