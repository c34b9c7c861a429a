@drill:D5
Feature: D5 · Crash cleanup
  The course: throw inside the try and confirm the finally still destroys; then kill the process outright,
  find the residual sandbox with an inspection and clean it up under its TTL.

  @criterion:isolation @fault
  Scenario: A subject killed mid-run leaves a sandbox that its TTL bounds and an inspection removes
    When the subject is run on fixture "sales" and killed with SIGKILL once its first command has finished
    Then the subject's sandbox, if still alive, has an expiry of at most 3600 seconds after its creation
    And an inspection lists the residual sandbox of this run and removes it
    And no sandbox of this run is left on the server
