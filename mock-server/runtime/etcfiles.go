package runtime

import (
	"os"
	"path/filepath"
)

// hostEtcFiles are host /etc entries a sandbox may read (bound read-only if
// present). /etc/os-release: every Debian-based image (python:3.x, debian)
// has one, and the host's Debian is what the profiles run.
var hostEtcFiles = []string{
	"/etc/ssl", "/etc/fonts", "/etc/matplotlibrc", "/etc/alternatives", "/etc/ld.so.cache", "/etc/os-release",
}

// pythonLocalBin are the commands a python:3.x image has in /usr/local/bin
// (its own build of Python lives there), as links to the host's Debian
// python the python profile runs: `python script.py` works as on the real
// image. Only links whose target exists on the host are made.
var pythonLocalBin = map[string]string{
	"python":         "/usr/bin/python3",
	"python3":        "/usr/bin/python3",
	"pip":            "/usr/bin/pip3",
	"pip3":           "/usr/bin/pip3",
	"pydoc":          "/usr/bin/pydoc3",
	"pydoc3":         "/usr/bin/pydoc3",
	"python-config":  "/usr/bin/python3-config",
	"python3-config": "/usr/bin/python3-config",
}

// writeLocalBin makes the directory bound over /usr/local/bin in a python
// sandbox: it replaces the host's /usr/local/bin (whose tools no image has).
func writeLocalBin(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, target := range pythonLocalBin {
		if _, err := os.Stat(target); err != nil {
			continue
		}
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// generatedEtc are the /etc files written per sandbox. resolv.conf points at
// the egress sidecar's DNS on 127.0.0.1 (absent sidecar: lookups fail fast).
func generatedEtc(home string) map[string]string {
	return map[string]string{
		"passwd":        "root:x:0:0:root:" + home + ":/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"group":         "root:x:0:\nnogroup:x:65534:\n",
		"hosts":         "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n",
		"resolv.conf":   "nameserver 127.0.0.1\noptions timeout:2 attempts:1\n",
		"nsswitch.conf": "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n",
		"hostname":      "sandbox\n",
	}
}

func writeEtc(dir, home string) (map[string]string, error) {
	out := map[string]string{}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	for name, content := range generatedEtc(home) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return nil, err
		}
		out["/etc/"+name] = p
	}
	return out, nil
}
