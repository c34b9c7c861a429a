module github.com/cucumber/godog

go 1.26.0
