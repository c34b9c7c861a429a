package main

import (
	"fmt"
	"os"
	"sync"

	"github.com/osb-capstone/acceptance/harness/confine"
)

// envConfinement is --confinement's default (auto when unset).
const envConfinement = "ACCEPTANCE_CONFINEMENT"

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// confineAvailable says why this machine cannot confine at level full (""
// when it can); a variable so tests can play a machine that cannot.
var confineAvailable = sync.OnceValue(func() string { return confine.Probe(confine.Config{}) })

// confineUIDAvailable says why this machine cannot confine at level uid.
var confineUIDAvailable = sync.OnceValue(func() string { return confine.ProbeUID(confine.Config{}) })

// confinementLevel is the level the submission's commands run at
// (docs/confinement.md, "Levels"), and why no stronger one is used ("" at
// full). A level asked for (--confinement) that this machine cannot give
// is an error.
func confinementLevel(cfg *runConfig) (confine.Level, string, error) {
	want, err := confine.ParseLevel(cfg.confinement)
	if err != nil {
		return "", "", err
	}
	if cfg.noConfinement {
		return confine.LevelNone, "--insecure-no-confinement was given", nil
	}
	switch want {
	case confine.LevelNone:
		return confine.LevelNone, "--confinement none was given", nil
	case confine.LevelFull:
		if why := confineAvailable(); why != "" {
			return "", "", fmt.Errorf("--confinement full: not available here: %s", why)
		}
		return confine.LevelFull, "", nil
	case confine.LevelUID:
		if why := confineUIDAvailable(); why != "" {
			return "", "", fmt.Errorf("--confinement uid: not available here: %s", why)
		}
		return confine.LevelUID, "--confinement uid was given", nil
	}
	full := confineAvailable()
	if full == "" {
		return confine.LevelFull, "", nil
	}
	if uid := confineUIDAvailable(); uid == "" {
		return confine.LevelUID, "level full is not available here: " + full, nil
	}
	return confine.LevelNone, full, nil
}

// confineConfig is the confinement of the submission's commands (nil: they
// run unconfined, unconfinedWhy says why).
func confineConfig(cfg *runConfig) *confine.Config {
	level, why, err := confinementLevel(cfg)
	switch {
	case err != nil || level == confine.LevelNone:
		return nil
	case level == confine.LevelUID:
		return &confine.Config{Level: confine.LevelUID, LevelWhy: why}
	}
	return &confine.Config{}
}

// unconfinedWhy says why the commands run unconfined ("" when they do not).
func unconfinedWhy(cfg *runConfig) string {
	level, why, err := confinementLevel(cfg)
	if err != nil {
		return err.Error()
	}
	if level != confine.LevelNone {
		return ""
	}
	return why
}

// classConfinement says why `grade` refuses to grade n submissions at the
// level this machine gives ("" when it does not): below
// confine.ClassMinimum, unless that level was asked for by name.
func classConfinement(cfg *runConfig, n int) string {
	level, why, err := confinementLevel(cfg)
	if err != nil {
		return err.Error()
	}
	if n <= 1 || !level.Below(confine.ClassMinimum) {
		return ""
	}
	switch {
	case level == confine.LevelNone && !cfg.noConfinement && cfg.confinement != string(confine.LevelNone):
		return fmt.Sprintf("the submissions' commands cannot be confined here (%s): one could read or change another's grade; grade them one at a time, or pass --insecure-no-confinement (docs/confinement.md)", why)
	case level == confine.LevelUID && cfg.confinement != string(confine.LevelUID):
		return fmt.Sprintf("the submissions' commands can be confined only at level uid here (%s): below level %s a command reaches every loopback port, so the bundled server's keyless proxy route and execd ports of a classmate's sandboxes; grade them one at a time (a container each), or pass --confinement uid (docs/confinement.md)", why, confine.ClassMinimum)
	}
	return ""
}

// closeOut closes the report directory out to other uids (0700) when the
// commands run at level uid: they are other uids on the same host, with no
// mount namespace to hide it.
func closeOut(cfg *runConfig, out string) error {
	if level, _, err := confinementLevel(cfg); err != nil || level != confine.LevelUID {
		return nil
	}
	if err := os.Chmod(out, 0o700); err != nil {
		return fmt.Errorf("--out: closing it to the commands' uids: %w", err)
	}
	return nil
}
