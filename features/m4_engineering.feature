@milestone:M4
Feature: M4 · Engineering
  The course: budgets (per-command timeout, maximum steps, wall clock, output limit), cleanup checked in a
  finally and after a simulated interruption, one structured record per tool call (sandbox id, command,
  exit code, duration, truncation flag), at least one unit and one integration test, and a one-page README.
  The tests are the submission's own (capstone.yaml: test.unit, test.integration), run with the target's
  address and a fresh key, counted from JUnit XML in {out} or the runner's summary line. One page: at most
  80 lines and 6000 bytes; the README must name each declared command (its script, or its first two words).

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
  Scenario: The submission's own tests pass and its README fits one page and names its commands
    When the submission's unit and integration tests are run
    Then they passed with at least 1 unit test and 1 integration test
    And the submission's README exists, fits one page and names its commands

  @criterion:maintainability
  Scenario: Others can reproduce the run from the README and the tests
    Then a reviewer confirms the submission's README and test commands reproduce the run
