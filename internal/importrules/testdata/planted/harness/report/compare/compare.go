// Package compare is clean.
package compare
