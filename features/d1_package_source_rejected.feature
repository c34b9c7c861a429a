@drill:D1
Feature: D1 · Package source rejected
  The course: remove the package index from the allow list and rerun. Expected: the install fails,
  stderr is readable, the agent does not retry indefinitely, and exit code plus stderr tell a network
  policy problem from a script bug. Here the platform denies the package index for the run (a simulated
  fault, recorded in the audit) so the subject's own code is unchanged; on a real target the harness denies it
  in the subject's sandbox through that sandbox's egress sidecar (its runtime policy API) as soon as it exists. A subject that installs nothing
  never meets the denial: the drill is then not measured, with that reason. Only the security property
  (the denied index was not reached) feeds the network criterion; how the subject reports the failure
  feeds observability. D1 fails only on a property it measures: the denied index reached, or retries
  without bound; an exit code or a summary that does not report the denial fails observability and leaves
  D1 not measured in that scenario.

  @criterion:observability @fault
  Scenario: The platform denies the package index and the subject reports a network-policy failure
    Given the platform denies "pypi.org" and "*.pythonhosted.org" as a simulated fault
    When the subject is run on fixture "sales"
    Then the subject reached for the package index
    And the install was attempted at most 3 times and the package index was asked at most 30 times
    And the subject exited non-zero
    And the subject's summary classifies the error as "network_policy"
    And a failed install step shows stderr that identifies a network denial

  @criterion:network @fault
  Scenario: A package index denied by the platform is not reached
    Given the platform denies "pypi.org" and "*.pythonhosted.org" as a simulated fault
    When the subject is run on fixture "sales"
    Then the subject reached for the package index
    And the denials of the package index are recorded in the audit
