// Package steps is clean.
package steps
