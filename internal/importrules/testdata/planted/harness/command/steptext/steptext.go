// Package steptext imports godog (allowed here; command reaches it through this).
package steptext

import _ "github.com/cucumber/godog"
