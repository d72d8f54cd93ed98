//go:build !linux

package probes

func adviseHuge([]byte) {}

func hugePagesAllowed() bool { return false }
