// Package importrules enforces the project's layering: which packages may
// depend on which (transitively), and that the report renderers call no
// scoring function. Rules are written relative to the module path; the
// package graph comes from `go list -deps -json`, so the check sees exactly
// what the build sees (build tags of the default build, test files excluded).
package importrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Rule says that the packages matched by From must not depend, directly or
// transitively, on any package matched by Deny unless it is matched by Allow.
// Patterns are module-relative: "harness/rubric" is that package,
// "harness/..." is it and everything under it, "..." is every package of the
// module.
type Rule struct {
	Name   string
	From   []string
	Except []string // From packages the rule does not apply to, each with its reason in Why
	Deny   []string
	Allow  []string
	// DenyExternal are import paths outside the module (a path and
	// everything under it) that From must not depend on, directly or through
	// the module's packages.
	DenyExternal []string
	// Direct: only From's own imports count, not what they import in turn
	// (what a package's own text names, e.g. steps/ names no runner even
	// though the command package it uses runs one).
	Direct bool
	// ExceptFiles are module-relative files of a Direct rule's From packages
	// whose imports the rule does not check, each with its reason in Why.
	ExceptFiles []string
	Why         string
}

// Violation is one package depending on a denied one, with the import chain
// that gets it there.
type Violation struct {
	Rule  string
	Pkg   string // module-relative
	Dep   string // module-relative
	Chain []string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s depends on %s (%s)", v.Rule, v.Pkg, v.Dep, strings.Join(v.Chain, " → "))
}

// Package is the part of `go list -json` the check uses.
type Package struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Error      *struct{ Err string }
}

// Graph is a module's packages keyed by module-relative path ("" is the root).
type Graph struct {
	Module string
	Pkgs   map[string]*Package
}

// Load lists every package of the module rooted at dir with the go command.
func Load(goCmd, dir string) (*Graph, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	mod, err := run(goCmd, dir, "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return nil, err
	}
	g := &Graph{Module: strings.TrimSpace(string(mod)), Pkgs: map[string]*Package{}}
	out, err := run(goCmd, dir, "list", "-e", "-json=ImportPath,Dir,GoFiles,Imports,Error", "./...")
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p Package
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("go list: %s: %s", p.ImportPath, p.Error.Err)
		}
		rel, ok := g.rel(p.ImportPath)
		if !ok {
			continue
		}
		pp := p
		g.Pkgs[rel] = &pp
	}
	if len(g.Pkgs) == 0 {
		return nil, fmt.Errorf("go list found no packages in %s", dir)
	}
	return g, nil
}

func run(goCmd, dir string, args ...string) ([]byte, error) {
	cmd := exec.Command(goCmd, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s in %s: %v: %s", goCmd, strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// rel maps an import path to its module-relative form; ok is false outside the module.
func (g *Graph) rel(imp string) (string, bool) {
	if imp == g.Module {
		return "", true
	}
	if r, ok := strings.CutPrefix(imp, g.Module+"/"); ok {
		return r, true
	}
	return "", false
}

// Match reports whether a module-relative package path matches a pattern.
func Match(pattern, pkg string) bool {
	if pattern == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pattern == pkg
}

func matchAny(patterns []string, pkg string) bool {
	for _, p := range patterns {
		if Match(p, pkg) {
			return true
		}
	}
	return false
}

// Check applies the rules to the graph. Each (rule, package, denied
// dependency) is reported once, with the shortest import chain.
func (g *Graph) Check(rules []Rule) []Violation {
	var out []Violation
	names := make([]string, 0, len(g.Pkgs))
	for n := range g.Pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, r := range rules {
		for _, from := range names {
			if !matchAny(r.From, from) || matchAny(r.Except, from) {
				continue
			}
			if r.Direct {
				out = append(out, g.checkDirect(r, from)...)
				continue
			}
			reach := g.reach(from)
			for dep, chain := range reach {
				if matchAny(r.Deny, dep) && !matchAny(r.Allow, dep) {
					out = append(out, Violation{Rule: r.Name, Pkg: from, Dep: dep, Chain: chain})
				}
			}
			reach[from] = []string{from}
			seenExt := map[string]bool{}
			for via, chain := range reach {
				p := g.Pkgs[via]
				if p == nil {
					continue
				}
				for _, imp := range p.Imports {
					if _, in := g.rel(imp); in || seenExt[imp] || !matchExternal(r.DenyExternal, imp) {
						continue
					}
					seenExt[imp] = true
					out = append(out, Violation{Rule: r.Name, Pkg: from, Dep: imp, Chain: append(append([]string{}, chain...), imp)})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Rule != out[j].Rule {
			return out[i].Rule < out[j].Rule
		}
		if out[i].Pkg != out[j].Pkg {
			return out[i].Pkg < out[j].Pkg
		}
		return out[i].Dep < out[j].Dep
	})
	return out
}

// checkDirect applies a Direct rule to package from: each of its files
// (but ExceptFiles) that imports a denied package is a violation, its chain
// the file and the import.
func (g *Graph) checkDirect(r Rule, from string) []Violation {
	p := g.Pkgs[from]
	if p == nil {
		return nil
	}
	var out []Violation
	seen := map[string]bool{}
	for _, name := range p.GoFiles {
		file := path.Join(from, name)
		if slices.Contains(r.ExceptFiles, file) {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			out = append(out, Violation{Rule: r.Name, Pkg: from, Dep: "(unreadable: " + err.Error() + ")", Chain: []string{file}})
			continue
		}
		for _, is := range f.Imports {
			imp := strings.Trim(is.Path.Value, `"`)
			dep, in := g.rel(imp)
			denied := (in && matchAny(r.Deny, dep) && !matchAny(r.Allow, dep)) || (!in && matchExternal(r.DenyExternal, imp))
			if !in {
				dep = imp
			}
			if denied && !seen[file+" "+dep] {
				seen[file+" "+dep] = true
				out = append(out, Violation{Rule: r.Name, Pkg: from, Dep: dep, Chain: []string{file, dep}})
			}
		}
	}
	return out
}

// matchExternal reports whether import path imp is one of paths or under one.
func matchExternal(paths []string, imp string) bool {
	for _, p := range paths {
		if imp == p || strings.HasPrefix(imp, p+"/") {
			return true
		}
	}
	return false
}

// reach is every module package from depends on (not itself), each with the
// shortest import chain from it (breadth first).
func (g *Graph) reach(from string) map[string][]string {
	seen := map[string][]string{from: {from}}
	queue := []string{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		p := g.Pkgs[cur]
		if p == nil {
			continue
		}
		for _, imp := range p.Imports {
			dep, ok := g.rel(imp)
			if !ok {
				continue
			}
			if _, done := seen[dep]; done {
				continue
			}
			seen[dep] = append(append([]string{}, seen[cur]...), dep)
			queue = append(queue, dep)
		}
	}
	delete(seen, from)
	return seen
}

// CallRule says that the files of package Pkg whose base names match Files
// (path.Match patterns) call none of the functions Funcs: names of the form
// "pkgname.Func" for a package-level function called through its import
// name, or "Func" for a function of Pkg itself.
type CallRule struct {
	Name  string
	Pkg   string
	Files []string
	Funcs []string
	// FuncsOf adds every package-level function declared in these
	// module-relative files (as "pkgname.Func", and "Func" when the file is
	// in Pkg itself): the rule follows the scoring code wherever it grows.
	FuncsOf []string
	Why     string
}

// CallViolation is one forbidden call.
type CallViolation struct {
	Rule string
	Pos  string // file:line, module-relative
	Call string
}

func (v CallViolation) String() string {
	return fmt.Sprintf("%s: %s calls %s", v.Rule, v.Pos, v.Call)
}

// CheckCalls parses the matched files and reports every forbidden call.
func (g *Graph) CheckCalls(root string, rules []CallRule) ([]CallViolation, error) {
	var out []CallViolation
	for _, r := range rules {
		p := g.Pkgs[r.Pkg]
		if p == nil {
			return nil, fmt.Errorf("call rule %q: no package %s in the module", r.Name, r.Pkg)
		}
		deny := map[string]bool{}
		for _, f := range r.Funcs {
			deny[f] = true
		}
		for _, file := range r.FuncsOf {
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(root, filepath.FromSlash(file)), nil, parser.SkipObjectResolution)
			if err != nil {
				return nil, fmt.Errorf("call rule %q: %w", r.Name, err)
			}
			same := path.Dir(file) == r.Pkg
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Recv != nil {
					continue
				}
				deny[f.Name.Name+"."+fd.Name.Name] = true
				if same {
					deny[fd.Name.Name] = true
				}
			}
		}
		matched := 0
		for _, name := range p.GoFiles {
			ok := false
			for _, pat := range r.Files {
				if m, _ := path.Match(pat, name); m {
					ok = true
				}
			}
			if !ok {
				continue
			}
			matched++
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				return nil, err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				var callee string
				switch fn := call.Fun.(type) {
				case *ast.Ident:
					callee = fn.Name
				case *ast.SelectorExpr:
					if x, ok := fn.X.(*ast.Ident); ok {
						callee = x.Name + "." + fn.Sel.Name
					}
				}
				if deny[callee] {
					pos := fset.Position(call.Pos())
					relFile, err := filepath.Rel(root, pos.Filename)
					if err != nil {
						relFile = pos.Filename
					}
					out = append(out, CallViolation{Rule: r.Name, Pos: fmt.Sprintf("%s:%d", filepath.ToSlash(relFile), pos.Line), Call: callee})
				}
				return true
			})
		}
		if matched == 0 {
			return nil, fmt.Errorf("call rule %q: no file of %s matches %v", r.Name, r.Pkg, r.Files)
		}
	}
	return out, nil
}
