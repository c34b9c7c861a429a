package steps

// Breaks steps-name-no-runner-and-no-server: step text that reads the recording proxy itself.
import _ "example.com/planted/harness/observe"
