// Package observe is clean.
package observe
