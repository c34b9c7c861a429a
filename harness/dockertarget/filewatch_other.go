//go:build !linux

package dockertarget

import (
	"context"
	"errors"
	"time"
)

// FileCreated is a file that appeared in a watched directory of a sandbox
// (filewatch.go: Linux only).
type FileCreated struct {
	Path    string
	At      time.Time
	Present bool
}

// FileWatch is a host-side watch of a sandbox's directory (Linux only).
type FileWatch struct{ Armed time.Time }

// DirArmed is zero: nothing is watched here.
func (w *FileWatch) DirArmed() time.Time { return time.Time{} }

// Created is nothing: nothing is watched here.
func (w *FileWatch) Created() ([]FileCreated, error) { return nil, errors.New("not watched") }

// WatchCreates needs inotify (Linux).
func (t *Target) WatchCreates(ctx context.Context, sandboxID, dir string) (*FileWatch, error) {
	return nil, errors.New("watching a sandbox's files from the host needs Linux (inotify)")
}
