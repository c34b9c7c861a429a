@milestone:M1
Feature: M1 · Minimum closed loop
  The course: create a sandbox, run python -c "print(1+1)" and read the output back, write a file and read
  it back unchanged, destroy in a finally and confirm 404. Acceptance: three runs in a row leave no
  sandbox behind, and a run that fails midway still cleans up. Measured on the subject's own runs, each
  with its own API key: the server's audit shows what each run did (on a real server the recording proxy
  shows its creates, deletes and 404s).

  Scenario: Three runs in a row each close the loop and leave nothing behind
    When the subject is run 3 times in a row on fixture "sales"
    Then each run destroyed its sandbox and confirmed it gone with its own key
    And no sandbox of these runs is left on the server
    And each run created a sandbox, ran a command in it, wrote a file into it and read a file back

  @fault
  Scenario: A run hit by a platform fault midway still destroys its sandbox
    Given the platform fails the subject's execd operation 2 with 500 as a simulated fault
    When the subject is run on fixture "sales"
    Then the fault hit the subject's run
    And each run destroyed its sandbox and confirmed it gone with its own key
    And no sandbox of this run is left on the server

  @criterion:isolation
  Scenario: A sandbox the subject destroyed is out of reach
    When the subject is run on fixture "sales"
    Then the destroyed sandbox's execd endpoint no longer answers and the server lists none of it
