@drill:D2
Feature: D2 · The sandbox disappears during the analysis
  The course: destroy the sandbox while the analysis runs (or simulate TTL expiry). Expected: calls fail
  with 404 or a connection error, the orchestrator sees this as not retryable, and cleans up its handles.
  Here the platform expires the subject's sandbox as soon as its first command has finished, so the
  analysis finds it gone (a simulated fault through the bundled server's admin API, recorded in the audit).

  @criterion:observability @fault
  Scenario: The platform expires the sandbox mid-analysis and the subject stops without retrying
    Given the platform will expire the subject's sandbox once its first command has finished
    When the subject is run on fixture "sales"
    Then the subject exited non-zero
    And the subject's summary classifies the error as "sandbox_gone"
    And the subject created no further sandbox after the expiry
