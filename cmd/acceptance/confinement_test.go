package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/osb-capstone/acceptance/harness/confine"
	mockserver "github.com/osb-capstone/acceptance/mock-server"
)

// playMachine makes this test's machine give level full, uid or none.
func playMachine(t *testing.T, full, uid string) {
	old, oldUID := confineAvailable, confineUIDAvailable
	confineAvailable = func() string { return full }
	confineUIDAvailable = func() string { return uid }
	t.Cleanup(func() { confineAvailable, confineUIDAvailable = old, oldUID })
}

// The level is the strongest the machine allows; a class is refused below
// level full unless that level is asked for by name; a level asked for that
// the machine cannot give is an error.
func TestConfinementLevelChoice(t *testing.T) {
	for _, c := range []struct {
		name, full, uid, want string
		noConf                bool
		level                 confine.Level
		err                   string
		refused               string // of a class of two ("" = graded)
	}{
		{name: "full machine", want: "auto", level: confine.LevelFull},
		{name: "container", full: "no namespaces", want: "auto", level: confine.LevelUID, refused: "only at level uid here (level full is not available here: no namespaces)"},
		{name: "container, uid asked for", full: "no namespaces", want: "uid", level: confine.LevelUID},
		{name: "not root", full: "not root", uid: "not root", want: "auto", level: confine.LevelNone, refused: "cannot be confined here (not root)"},
		{name: "not root, insecure", full: "not root", uid: "not root", want: "auto", noConf: true, level: confine.LevelNone},
		{name: "none asked for", want: "none", level: confine.LevelNone},
		{name: "full asked for, absent", full: "no namespaces", want: "full", err: "--confinement full: not available here: no namespaces"},
		{name: "uid asked for, absent", full: "x", uid: "not root", want: "uid", err: "--confinement uid: not available here: not root"},
	} {
		t.Run(c.name, func(t *testing.T) {
			playMachine(t, c.full, c.uid)
			cfg := &runConfig{confinement: c.want, noConfinement: c.noConf}
			level, _, err := confinementLevel(cfg)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				assert.Contains(t, classConfinement(cfg, 2), c.err, "a class is refused with the reason")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.level, level)
			assert.Empty(t, classConfinement(cfg, 1), "one submission is graded at any level")
			if c.refused == "" {
				assert.Empty(t, classConfinement(cfg, 2))
			} else {
				assert.Contains(t, classConfinement(cfg, 2), c.refused)
			}
			conf := confineConfig(cfg)
			switch level {
			case confine.LevelNone:
				assert.Nil(t, conf)
				assert.NotEmpty(t, unconfinedWhy(cfg))
			case confine.LevelUID:
				require.NotNil(t, conf)
				assert.Equal(t, confine.LevelUID, conf.Level)
			default:
				require.NotNil(t, conf)
				assert.Equal(t, confine.Level(""), conf.Level)
			}
		})
	}
}

// Below level full the bundled server gives each sandbox's execd an access
// token of its own (the commands share its loopback); at level full it is
// left to the server's own choice (auto: only where its sandboxes have no
// namespaces), so a full grade's server is 1.1.1's.
func TestExecdTokenBelowLevelFull(t *testing.T) {
	for _, c := range []struct {
		name, full, uid, want string
		mode                  mockserver.ExecdTokenMode
	}{
		{"full machine", "", "", "auto", mockserver.ExecdTokenAuto},
		{"uid asked for", "", "", "uid", mockserver.ExecdTokenOn},
		{"container", "no namespaces", "", "auto", mockserver.ExecdTokenOn},
		{"none", "", "", "none", mockserver.ExecdTokenOn},
		{"not root", "not root", "not root", "auto", mockserver.ExecdTokenOn},
	} {
		t.Run(c.name, func(t *testing.T) {
			playMachine(t, c.full, c.uid)
			assert.Equal(t, c.mode, execdTokenMode(&runConfig{confinement: c.want}))
		})
	}
}
