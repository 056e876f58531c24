//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package natsjs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockStore takes an exclusive lock on dir's lock file, without waiting.
// The lock goes with the process, so a killed server leaves none behind.
func lockStore(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("jetstream: embedded.store_dir: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrStoreLocked, dir)
		}
		return nil, fmt.Errorf("jetstream: embedded.store_dir: lock %s: %w", path, err)
	}
	return f, nil
}

func unlockStore(f *os.File) error {
	_ = f.Truncate(0)
	return f.Close()
}
