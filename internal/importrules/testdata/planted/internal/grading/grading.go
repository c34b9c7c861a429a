// Package grading is clean itself: an internal/ package not named neutral.
package grading
