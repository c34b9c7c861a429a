@drill:D5
Feature: D5 · Crash cleanup
  The course: throw inside the try and confirm the finally still destroys; then kill the process outright,
  find the residual sandbox with an inspection and clean it up under its TTL. The inspection is the
  submission's own (capstone.yaml: reap), run with the killed run's CAPSTONE_RUN_ID; its DELETE must be
  seen by the server from the reap command's own key.

  @fault
  Scenario: A subject killed mid-run leaves a sandbox that its TTL bounds and its own inspection removes
    When the subject is run on fixture "sales" and killed with SIGKILL once it has made progress in its sandbox
    Then the subject's sandbox, if still alive, has an expiry of at most 3600 seconds after its creation
    And the submission's reap command, given the killed run's id, removes the residual sandbox within its TTL
    And no sandbox of this run is left on the server
