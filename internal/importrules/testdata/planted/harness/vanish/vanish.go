// Package vanish breaks step-work-imports-no-godog: the steps' framework
// names godog itself.
package vanish

import _ "github.com/cucumber/godog"
