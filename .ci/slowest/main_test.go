package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

func TestRunReportsFailuresAndSlowest(t *testing.T) {
	in := strings.Join([]string{
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"a_test.go:3: boom\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestA","Elapsed":1.5}`,
		`{"Action":"pass","Package":"p","Test":"TestB","Elapsed":9}`,
		`{"Action":"pass","Package":"p","Test":"TestB/sub","Elapsed":8}`,
		`{"Action":"skip","Package":"p","Test":"TestC","Elapsed":0}`,
		`{"Action":"fail","Package":"p","Elapsed":11}`,
		`{"Action":"pass","Package":"q","Elapsed":2}`,
	}, "\n")
	var out bytes.Buffer
	if code := run(strings.NewReader(in), &out, 1, io.Discard); code != 1 {
		t.Fatalf("exit %d, want 1 (a test failed)\n%s", code, out.String())
	}
	s := out.String()
	for _, want := range []string{"--- FAIL: TestA (p)\na_test.go:3: boom", "FAIL\tp\t11.0s", "ok  \tq\t2.0s", "slowest 1 tests:\n     9.0s  TestB  p\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
}

func TestRunPassesAndRejectsEmptyInput(t *testing.T) {
	var out bytes.Buffer
	if code := run(strings.NewReader(`{"Action":"pass","Package":"q","Test":"TestX","Elapsed":1}`+"\n"+`{"Action":"pass","Package":"q","Elapsed":1}`), &out, 20, io.Discard); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	out.Reset()
	if code := run(strings.NewReader(""), &out, 20, io.Discard); code != 1 {
		t.Fatalf("empty input: exit %d, want 1", code)
	}
	out.Reset()
	if code := run(strings.NewReader("# pkg\nbuild failed\n"), &out, 20, io.Discard); code != 1 || !strings.Contains(out.String(), "build failed") {
		t.Fatalf("plain-text build error: exit %d:\n%s", code, out.String())
	}
}

// A theme that hits its -test.timeout: test2json files the panic under the test
// that was running and never gives that test a result; only the package fails.
// The list of what failed must still name the timeout and the running tests, and
// the dump must not bury the test's last lines.
func TestRunNamesATimedOutPackagesRunningTests(t *testing.T) {
	lines := []string{
		`{"Action":"run","Package":"p[e2e/calibration]","Test":"TestCalibration"}`,
		`{"Action":"output","Package":"p[e2e/calibration]","Test":"TestCalibration","Output":"grading member bad-x\n"}`,
		`{"Action":"run","Package":"p[e2e/calibration]","Test":"TestCalibration/bad-x"}`,
		`{"Action":"output","Package":"p[e2e/calibration]","Test":"TestCalibration/bad-x","Output":"last words\n"}`,
		`{"Action":"output","Package":"p[e2e/calibration]","Test":"TestCalibration/bad-x","Output":"panic: test timed out after 1h0m0s\n"}`,
		`{"Action":"output","Package":"p[e2e/calibration]","Test":"TestCalibration/bad-x","Output":"\trunning tests:\n"}`,
		`{"Action":"output","Package":"p[e2e/calibration]","Test":"TestCalibration/bad-x","Output":"\t\tTestCalibration (1h0m0s)\n"}`,
		`{"Action":"output","Package":"p[e2e/calibration]","Test":"TestCalibration/bad-x","Output":"\t\tTestCalibration/bad-x (3m0s)\n"}`,
		`{"Action":"output","Package":"p[e2e/calibration]","Test":"TestCalibration/bad-x","Output":"\n"}`,
	}
	for i := 0; i < 500; i++ {
		lines = append(lines, `{"Action":"output","Package":"p[e2e/calibration]","Test":"TestCalibration/bad-x","Output":"goroutine dump line\n"}`)
	}
	lines = append(lines,
		`{"Action":"output","Package":"p[e2e/calibration]","Output":"FAIL\tp 3600s\n"}`,
		`{"Action":"fail","Package":"p[e2e/calibration]","Elapsed":3600}`,
		`{"Action":"pass","Package":"q","Test":"TestY","Elapsed":1}`,
		`{"Action":"pass","Package":"q","Elapsed":1}`)
	var out, list bytes.Buffer
	if code := run(strings.NewReader(strings.Join(lines, "\n")), &out, 5, &list); code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out.String())
	}
	want := "what failed (1):\n  TIMEOUT p[e2e/calibration]: panic: test timed out after 1h0m0s; running TestCalibration (1h0m0s); running TestCalibration/bad-x (3m0s)\n"
	if list.String() != want {
		t.Errorf("list:\n%q\nwant\n%q", list.String(), want)
	}
	s := out.String()
	if !strings.HasSuffix(s, "\n"+want) {
		t.Errorf("the output does not end with the list:\n%s", s)
	}
	for _, w := range []string{"grading member bad-x\nlast words\npanic: test timed out", "FAIL\tp[e2e/calibration]\t3600.0s"} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	if strings.Contains(s, "goroutine dump line") {
		t.Errorf("the goroutine dump was printed:\n%s", s)
	}
}

func TestRunListsFailedTestsAndNothingWhenAllPass(t *testing.T) {
	var out, list bytes.Buffer
	in := `{"Action":"fail","Package":"github.com/osb-capstone/acceptance/harness/x","Test":"TestA","Elapsed":2}` + "\n" +
		`{"Action":"fail","Package":"github.com/osb-capstone/acceptance/harness/x","Elapsed":3}`
	run(strings.NewReader(in), &out, 5, &list)
	if want := "what failed (2):\n  FAIL TestA (harness/x, 2.0s)\n  FAIL package harness/x (3.0s)\n"; list.String() != want {
		t.Errorf("list %q, want %q", list.String(), want)
	}
	list.Reset()
	run(strings.NewReader(`{"Action":"pass","Package":"q","Test":"TestX","Elapsed":1}`), &out, 5, &list)
	if list.Len() != 0 {
		t.Errorf("nothing failed, yet the list is %q", list.String())
	}
}
