// Package summary is clean.
package summary
