package steps

import (
	"fmt"
	"io"
	"path"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"unsafe"

	"github.com/cucumber/godog"
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

// Definitions lists every step definition InitializeScenario registers, in
// registration order (godog uses the first that matches a step). It asks
// godog to initialize a scenario context the way `godog -d` does (nothing
// runs) and reads the definitions godog keeps for it.
func Definitions() ([]Definition, error) {
	var defs []Definition
	var ferr error
	suite := godog.TestSuite{
		Name: "definitions",
		ScenarioInitializer: func(sc *godog.ScenarioContext) {
			(&Env{}).InitializeScenario(sc)
			defs, ferr = readDefinitions(sc)
		},
		Options: &godog.Options{ShowStepDefinitions: true, Format: "progress", Output: io.Discard, NoColors: true},
	}
	suite.Run()
	if ferr == nil && len(defs) == 0 {
		ferr = fmt.Errorf("steps: godog registered no step definitions")
	}
	return defs, ferr
}

// readDefinitions reads the step definitions godog (the version pinned in
// go.mod) keeps in the scenario context's unexported suite. A godog upgrade
// that moves them makes this an error, which TestDefinitions reports.
func readDefinitions(sc *godog.ScenarioContext) (out []Definition, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("steps: cannot read godog's step definitions (godog changed?): %v", r)
		}
	}()
	s := reflect.ValueOf(sc).Elem().FieldByName("suite")
	if !s.IsValid() || s.IsNil() {
		return nil, fmt.Errorf("steps: godog's scenario context has no suite")
	}
	f := s.Elem().FieldByName("steps")
	if !f.IsValid() || f.Kind() != reflect.Slice {
		return nil, fmt.Errorf("steps: godog's suite has no steps slice")
	}
	steps := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	root := moduleRoot()
	for i := range steps.Len() {
		d := steps.Index(i).Elem()
		re, ok := d.FieldByName("Expr").Interface().(*regexp.Regexp)
		if !ok || re == nil {
			return nil, fmt.Errorf("steps: definition %d has no expression", i)
		}
		hv, ok := d.FieldByName("HandlerValue").Interface().(reflect.Value)
		if !ok || hv.Kind() != reflect.Func {
			return nil, fmt.Errorf("steps: definition %s has no handler", re)
		}
		fn := runtime.FuncForPC(hv.Pointer())
		if fn == nil {
			return nil, fmt.Errorf("steps: definition %s: no function at its handler", re)
		}
		file, line := fn.FileLine(fn.Entry())
		out = append(out, Definition{Expr: re.String(), Func: shortFunc(fn.Name()), File: relTo(root, file), Line: line, re: re})
	}
	return out, nil
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
