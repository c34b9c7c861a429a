@milestone:M5
Feature: M5 · Demonstration and review
  The course: demonstrate the normal path and at least two kinds of failure, trace the reported numbers
  to commands, exit codes and files, and give a rough estimate of cost and delay.

  @criterion:cost
  Scenario: The run's cost and delay figures are on record
    When the subject is run on fixture "sales"
    Then the run's measured figures are recorded as evidence for the cost estimate
    And a reviewer judges the submission's cost and delay estimate

  Scenario: The defense questions are answered
    Then a reviewer judges the answers to the defense questions
