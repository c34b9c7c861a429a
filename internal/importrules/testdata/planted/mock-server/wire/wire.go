// Package wire is clean.
package wire
