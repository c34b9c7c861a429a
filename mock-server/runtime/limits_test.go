package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/osb-capstone/acceptance/mock-server/runtime"
)

func TestParseLimits(t *testing.T) {
	cases := []struct {
		in      map[string]string
		want    runtime.Limits
		ignored []string
	}{
		{map[string]string{"cpu": "1", "memory": "512Mi"}, runtime.Limits{CPUMilli: 1000, MemoryBytes: 512 << 20}, nil},
		{map[string]string{"cpu": "500m", "memory": "2Gi", "pids": "128"}, runtime.Limits{CPUMilli: 500, MemoryBytes: 2 << 30, Pids: 128}, nil},
		{map[string]string{"cpu": "0.25", "memory": "1G"}, runtime.Limits{CPUMilli: 250, MemoryBytes: 1000000000}, nil},
		{map[string]string{"memory": "1.5Gi", "cpu": "1500m"}, runtime.Limits{MemoryBytes: 1610612736, CPUMilli: 1500}, nil},
		{map[string]string{"memory": "128974848"}, runtime.Limits{MemoryBytes: 128974848}, nil},
		{map[string]string{"memory": "129e6"}, runtime.Limits{MemoryBytes: 129000000}, nil},
		{map[string]string{"memory": "lots", "cpu": "2"}, runtime.Limits{CPUMilli: 2000}, []string{`memory="lots"`}},
		{map[string]string{"memory": "-1Gi", "cpu": "1/2", "gpu": "1"}, runtime.Limits{}, []string{"memory", "cpu", "gpu"}},
		{map[string]string{"memory": "0"}, runtime.Limits{}, []string{"memory"}},
		{map[string]string{"cpu": "1m"}, runtime.Limits{CPUMilli: 1}, nil},
		{nil, runtime.Limits{}, nil},
	}
	for _, c := range cases {
		got, err := runtime.ParseLimits(c.in)
		if got != c.want {
			t.Errorf("ParseLimits(%v) = %+v, want %+v", c.in, got, c.want)
		}
		if len(c.ignored) == 0 && err != nil {
			t.Errorf("ParseLimits(%v) error %v", c.in, err)
		}
		for _, k := range c.ignored {
			if err == nil || !strings.Contains(err.Error(), k) {
				t.Errorf("ParseLimits(%v) error %v does not name %q", c.in, err, k)
			}
		}
	}
}

func TestProfileFor(t *testing.T) {
	for img, want := range map[string]string{
		"python:3.12": "python", "python:3.11-slim": "python", "python": "python",
		"docker.io/library/python:3.11-slim-bookworm": "python", "library/python:latest": "python",
		"python@sha256:abcd": "python", "debian": "debian", "debian:bookworm": "debian",
		"ubuntu:22.04": "debian", "bash": "debian", "registry.local:5000/ubuntu:24.04": "debian",
	} {
		p, err := runtime.ProfileFor(img)
		if err != nil || p.Name != want {
			t.Errorf("ProfileFor(%q) = %+v, %v; want %s", img, p, err, want)
		}
	}
	p, _ := runtime.ProfileFor("python:3.12")
	if p.Env["PIP_BREAK_SYSTEM_PACKAGES"] != "1" || p.Env["PYTHONUNBUFFERED"] != "1" || p.Env["MPLBACKEND"] != "Agg" {
		t.Errorf("python profile env %v", p.Env)
	}
	p.Env["X"] = "y" // must not alter the next caller's profile
	if q, _ := runtime.ProfileFor("python:3.12"); q.Env["X"] != "" {
		t.Error("ProfileFor shares its env map")
	}
	for _, img := range []string{"node:20", "python:2.7", "nginx", "", "ghcr.io/acme/tool:1"} {
		_, err := runtime.ProfileFor(img)
		var unk runtime.ErrUnknownImage
		if !errors.As(err, &unk) {
			t.Errorf("ProfileFor(%q) error %v, want ErrUnknownImage", img, err)
		}
	}
}
