package workloads

import (
	"io/fs"
	"testing/fstest"
)

// memFS is an in-memory fsOpener for feeding corrupt data to the loaders.
type memFS map[string][]byte

func (m memFS) Open(name string) (fs.File, error) {
	mf := fstest.MapFS{}
	for k, v := range m {
		mf[k] = &fstest.MapFile{Data: v}
	}
	return mf.Open(name)
}
