package steps

import (
	"fmt"
	"path"
	"reflect"
	"regexp"
	"runtime"
	"strings"
)

// Definition is one step definition of the suite: the expression godog
// matches step text against and the Go function that implements it, with the
// file:line of the function (not of its registration), module-relative.
type Definition struct {
	Expr string
	Func string // "steps.scenarioStartsTheSubject" or "steps.registerContractSteps.func3"
	File string // "steps/subject_steps.go"
	Line int
	re   *regexp.Regexp
}

// Match reports whether step text is implemented by this definition.
func (d Definition) Match(text string) bool { return d.re.MatchString(text) }

// registrar is what every register…Steps function registers its steps
// with: godog's *ScenarioContext itself when the suite runs (godog then
// records each step at its own registration line, which `godog -d` and
// godog.log show), or a recorder when the rubric index lists the suite's
// step definitions (Definitions). Nothing wraps a step, so the index is read
// from the suite itself, never from godog's internals.
type registrar interface {
	Step(expr, fn any)
}

// recorder records each registration as a Definition.
type recorder struct {
	defs []Definition
	err  error // the first definition that cannot be recorded
}

// Step records expr → fn, checked as godog's ScenarioContext.Step checks it.
func (r *recorder) Step(expr, fn any) {
	d, err := definitionOf(expr, fn)
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		return
	}
	r.defs = append(r.defs, d)
}

// registerSteps registers every step of the suite, in the order godog tries
// them (the first definition that matches a step is used).
func registerSteps(sc registrar) {
	registerContractSteps(sc)
	registerClosedLoopSteps(sc)
	registerSubjectSteps(sc)
	registerAnalysisSteps(sc)
	registerSecuritySteps(sc)
	registerDrillSteps(sc)
	registerEngineeringSteps(sc)
	registerAgentSteps(sc)
}

// Definitions lists every step definition InitializeScenario registers, in
// registration order (godog uses the first that matches a step). Nothing is
// registered with godog and nothing runs.
func Definitions() ([]Definition, error) {
	r := &recorder{}
	registerSteps(r)
	if r.err == nil && len(r.defs) == 0 {
		r.err = fmt.Errorf("steps: no step definitions registered")
	}
	return r.defs, r.err
}

// definitionOf records one registration: the expression compiled as godog
// compiles it, and the function's name and source position (of our own
// function value: runtime.FuncForPC on its entry).
func definitionOf(expr, fn any) (Definition, error) {
	src, ok := expr.(string)
	if !ok {
		return Definition{}, fmt.Errorf("steps: step expression %v is %T, not a string", expr, expr)
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return Definition{}, fmt.Errorf("steps: step expression %q: %w", expr, err)
	}
	v := reflect.ValueOf(fn)
	if v.Kind() != reflect.Func || v.IsNil() {
		return Definition{}, fmt.Errorf("steps: step %q: handler is %T, not a function", expr, fn)
	}
	f := runtime.FuncForPC(v.Pointer())
	if f == nil {
		return Definition{}, fmt.Errorf("steps: step %q: no function at its handler", expr)
	}
	file, line := f.FileLine(f.Entry())
	return Definition{Expr: re.String(), Func: shortFunc(f.Name()), File: relTo(moduleRoot(), file), Line: line, re: re}, nil
}

// moduleRoot is the directory above this package's source (a path, or the
// module path under -trimpath).
func moduleRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return path.Dir(path.Dir(file))
}

func relTo(root, file string) string {
	if r, ok := strings.CutPrefix(file, root+"/"); ok {
		return r
	}
	return file
}

// shortFunc drops the module path: "github.com/…/steps.foo" → "steps.foo".
func shortFunc(name string) string {
	if i := strings.LastIndex(name, "/"); i >= 0 {
		return name[i+1:]
	}
	return name
}
