package steps

// Breaks steps-name-no-runner-and-no-server: step text that runs commands itself.
import _ "example.com/planted/harness/subject"
