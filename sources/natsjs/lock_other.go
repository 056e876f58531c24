//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package natsjs

import (
	"fmt"
	"os"
	"path/filepath"
)

// lockStore records the server's URL in dir but cannot lock it on this
// platform: a second server on the same directory is not prevented.
func lockStore(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("jetstream: embedded.store_dir: %w", err)
	}
	return f, nil
}

func unlockStore(f *os.File) error {
	_ = f.Truncate(0)
	return f.Close()
}
