// Package godog stands in for github.com/cucumber/godog in the planted module.
package godog
