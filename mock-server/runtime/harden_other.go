//go:build !linux

package runtime

// HardenAgent does nothing outside Linux.
func HardenAgent() error { return nil }
