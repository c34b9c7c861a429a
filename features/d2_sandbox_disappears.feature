@drill:D2
Feature: D2 · The sandbox disappears during the analysis
  The course: destroy the sandbox while the analysis runs (or simulate TTL expiry). Expected: calls fail
  with 404 or a connection error, the orchestrator sees this as not retryable, and cleans up its handles.
  The fault fires mid-run: right after the subject's first successful execd or file call (an upload, a
  finished command) on a sandbox its key created, as observed, never on a clock. On the bundled server the
  platform then expires the sandbox, as a TTL would (a simulated fault through the admin API, recorded in the
  audit); against a real server the harness deletes it, as the course's "manually destroy the sandbox during
  the analysis", where the recording proxy sees the subject's execd calls (else: not measured, saying so), and
  the proxy answers that sandbox as an unknown one from the moment the DELETE is sent (a real DELETE is not
  atomic: Docker kills, then removes, and a GET meanwhile still finds the sandbox).
  Retries are counted from the same observations: the subject's calls to the vanished sandbox (its dead execd
  endpoint, which the bundled server keeps listening on and records, or the proxy's records, and lifecycle
  calls with the run's key) and the failed steps of its summary; at most 3 are allowed (the call that failed,
  a status check and one more; DELETEs that clean up handles are not counted).

  @criterion:observability @fault
  Scenario: The sandbox disappears mid-run and the subject stops without retrying
    Given the subject's sandbox will disappear while the subject is working in it
    When the subject is run on fixture "sales"
    Then the sandbox disappeared while the subject was running
    And the subject exited non-zero
    And the subject's summary classifies the error as "sandbox_gone"
    And the subject created no further sandbox after it disappeared
    And the subject made at most 3 calls to the vanished sandbox after it disappeared
