package steps

// Clean: an excepted file of steps-name-no-runner-and-no-server.
import _ "example.com/planted/harness/subject"
