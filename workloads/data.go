package workloads

import (
	"embed"
	"io/fs"
)

// dataFS holds the pools and the tokenizer; see data/SOURCE.md.
//
//go:embed data
var dataFS embed.FS

type fsOpener interface {
	Open(name string) (fs.File, error)
}
