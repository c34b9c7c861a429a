@milestone:M4
Feature: M4 · Engineering
  The course: budgets (per-command timeout, maximum steps, wall clock, output limit), cleanup checked in a
  finally and after a simulated interruption, one structured record per tool call (sandbox id, command,
  exit code, duration, truncation flag), at least one unit and one integration test, and a one-page README.

  @criterion:budget
  Scenario: The run stays within its budgets and says why it stopped
    When the subject is run on fixture "sales"
    Then the subject's create request set a timeout of at most 3600 seconds
    And the summary names a stop reason
    And no step's recorded stdout or stderr exceeds 8192 bytes unless it is flagged truncated
    And the subject finished within the harness's wall-clock limit

  @criterion:observability
  Scenario: Every tool call leaves a structured record
    When the subject is run on fixture "sales"
    Then every step in the summary has a name, a command, an exit code, a duration and a truncation flag
    And the summary's sandbox id and duration are present

  @criterion:maintainability
  Scenario: Others can reproduce the run from the README and the tests
    Then a reviewer confirms the submission's README and test commands reproduce the run
