package importrules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// ValueRule says that no file of the packages matched by From (minus Except)
// other than the files Only writes one of the numeric Literals (in any
// spelling: 0.005, 5e-3) or uses one of the Names declared by package Pkg
// (in Pkg's own files by name, elsewhere through Pkg's import): a value one
// computation owns stays in the file that computes with it, and everyone
// else calls that file's functions.
type ValueRule struct {
	Name     string
	From     []string
	Except   []string // From packages the rule does not apply to, each with its reason in Why
	Only     []string // module-relative files that own the values
	Pkg      string   // module-relative package declaring Names
	Names    []string
	Literals []float64
	Why      string
}

// ValueViolation is one use of an owned value outside its owner.
type ValueViolation struct {
	Rule string
	Pos  string // file:line, module-relative
	Use  string // the literal as written, or the name
}

func (v ValueViolation) String() string {
	return fmt.Sprintf("%s: %s uses %s", v.Rule, v.Pos, v.Use)
}

// CheckValues parses the files the rules cover and reports every use of an
// owned value outside its owning files.
func (g *Graph) CheckValues(root string, rules []ValueRule) ([]ValueViolation, error) {
	var out []ValueViolation
	names := make([]string, 0, len(g.Pkgs))
	for n := range g.Pkgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, r := range rules {
		if _, ok := g.Pkgs[r.Pkg]; !ok && len(r.Names) > 0 {
			return nil, fmt.Errorf("value rule %q: no package %s in the module", r.Name, r.Pkg)
		}
		only := map[string]bool{}
		for _, f := range r.Only {
			if _, ok := g.Pkgs[path.Dir(f)]; !ok {
				return nil, fmt.Errorf("value rule %q: owner %s is in no package of the module", r.Name, f)
			}
			only[f] = true
		}
		named := map[string]bool{}
		for _, n := range r.Names {
			named[n] = true
		}
		pkgPath := g.Module + "/" + r.Pkg
		for _, rel := range names {
			if !matchAny(r.From, rel) || matchAny(r.Except, rel) {
				continue
			}
			p := g.Pkgs[rel]
			for _, name := range p.GoFiles {
				file := path.Join(rel, name)
				if only[file] {
					continue
				}
				fset := token.NewFileSet()
				f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
				if err != nil {
					return nil, err
				}
				imported := "" // Pkg's name in this file, when it imports Pkg
				for _, imp := range f.Imports {
					if ip, _ := strconv.Unquote(imp.Path.Value); ip == pkgPath {
						imported = path.Base(ip)
						if imp.Name != nil {
							imported = imp.Name.Name
						}
					}
				}
				add := func(n ast.Node, use string) {
					out = append(out, ValueViolation{Rule: r.Name, Pos: fmt.Sprintf("%s:%d", file, fset.Position(n.Pos()).Line), Use: use})
				}
				var visit func(ast.Node) bool
				visit = func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.BasicLit:
						if x.Kind != token.FLOAT && x.Kind != token.INT {
							return true
						}
						v, err := strconv.ParseFloat(strings.ReplaceAll(x.Value, "_", ""), 64)
						if err != nil {
							return true
						}
						for _, l := range r.Literals {
							if v == l {
								add(x, x.Value)
							}
						}
					case *ast.SelectorExpr:
						if id, ok := x.X.(*ast.Ident); ok && imported != "" && id.Name == imported && named[x.Sel.Name] {
							add(x, id.Name+"."+x.Sel.Name)
						}
						ast.Inspect(x.X, visit)
						return false // x.Sel is never a name of Pkg's own files
					case *ast.Ident:
						if rel == r.Pkg && named[x.Name] {
							add(x, x.Name)
						}
					}
					return true
				}
				ast.Inspect(f, visit)
			}
		}
	}
	return out, nil
}
