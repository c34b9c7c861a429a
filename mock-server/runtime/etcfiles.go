package runtime

import (
	"os"
	"path/filepath"
)

// hostEtcFiles are host /etc entries a sandbox may read (bound read-only if present).
var hostEtcFiles = []string{
	"/etc/ssl", "/etc/fonts", "/etc/matplotlibrc", "/etc/alternatives", "/etc/ld.so.cache",
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
