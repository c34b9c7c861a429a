package main

import (
	"bytes"
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
	if code := run(strings.NewReader(in), &out, 1); code != 1 {
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
	if code := run(strings.NewReader(`{"Action":"pass","Package":"q","Test":"TestX","Elapsed":1}`+"\n"+`{"Action":"pass","Package":"q","Elapsed":1}`), &out, 20); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out.String())
	}
	out.Reset()
	if code := run(strings.NewReader(""), &out, 20); code != 1 {
		t.Fatalf("empty input: exit %d, want 1", code)
	}
	out.Reset()
	if code := run(strings.NewReader("# pkg\nbuild failed\n"), &out, 20); code != 1 || !strings.Contains(out.String(), "build failed") {
		t.Fatalf("plain-text build error: exit %d:\n%s", code, out.String())
	}
}
