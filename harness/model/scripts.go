package model

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

// The suite's own scripts, one file per scenario (scripts/<name>.yaml).
//
//go:embed scripts/*.yaml
var scriptFS embed.FS

// Lookup loads a bundled script by name (its file name without .yaml).
func Lookup(name string) (*Script, error) {
	b, err := fs.ReadFile(scriptFS, "scripts/"+name+".yaml")
	if err != nil {
		return nil, fmt.Errorf("model: no bundled script %q (have: %s)", name, strings.Join(Names(), ", "))
	}
	return ParseScript(b)
}

// Names lists the bundled scripts.
func Names() []string {
	es, _ := fs.ReadDir(scriptFS, "scripts")
	var out []string
	for _, e := range es {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(out)
	return out
}
