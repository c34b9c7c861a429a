package mockserver

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	labelNameRe  = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

const reservedPrefix = "opensandbox.io/"

// checkLabelKey applies the Kubernetes label-key rules (CONTRACT §1.4).
func checkLabelKey(k string) error {
	name := k
	if i := strings.LastIndex(k, "/"); i >= 0 {
		prefix := k[:i]
		name = k[i+1:]
		if prefix == "" || len(prefix) > 253 || !dnsSubdomain.MatchString(prefix) {
			return fmt.Errorf("metadata key %q: prefix must be a DNS subdomain", k)
		}
	}
	if name == "" || len(name) > 63 || !labelNameRe.MatchString(name) {
		return fmt.Errorf("metadata key %q: name must be at most 63 characters matching [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", k)
	}
	return nil
}

// checkLabelValue applies the Kubernetes label-value rules.
func checkLabelValue(k, v string) error {
	if v == "" {
		return nil
	}
	if len(v) > 63 || !labelNameRe.MatchString(v) {
		return fmt.Errorf("metadata value for %q: must be at most 63 characters matching [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?", k)
	}
	return nil
}

func isReserved(k string) bool { return strings.HasPrefix(k, reservedPrefix) }
