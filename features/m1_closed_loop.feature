@milestone:M1
Feature: M1 · Minimum closed loop
  The course: create a sandbox, run python -c "print(1+1)" and read the output back, write a file and read
  it back unchanged, destroy in a finally and confirm 404. Acceptance: three runs in a row leave no
  sandbox behind, and a run that fails midway still cleans up.

  @criterion:function @criterion:isolation
  Scenario: Three closed loops in a row leave nothing behind
    When I run the closed loop 3 times
    Then every run read "2" back from python3 -c "print(1+1)"
    And every run read back the file it wrote, byte for byte
    And every run's sandbox answered 404 after its deferred destroy
    And no sandbox of this run is left on the server

  @criterion:isolation
  Scenario: A run that fails midway still cleans up
    When I run the closed loop with a failure injected after the command step
    Then the run reported the injected failure
    And every run's sandbox answered 404 after its deferred destroy
    And no sandbox of this run is left on the server
