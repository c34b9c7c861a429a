// Package subject is clean.
package subject
