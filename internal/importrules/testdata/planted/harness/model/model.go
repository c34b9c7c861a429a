// Package model breaks harness-never-imports-steps.
package model

import _ "example.com/planted/steps"
