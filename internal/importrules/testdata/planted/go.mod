module example.com/planted

go 1.26.0

require github.com/cucumber/godog v0.0.0

replace github.com/cucumber/godog => ./third_party/godog
