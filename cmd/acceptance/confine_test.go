package main

import (
	"os"
)

func isEmptyDir(d string) bool {
	e, err := os.ReadDir(d)
	return err == nil && len(e) == 0
}
