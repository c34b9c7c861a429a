@milestone:M3
Feature: M3 · Security hardening
  The course: create with default deny, allowing only the package source and the APIs the task needs;
  show that a non-allowed host is denied; keep real keys out of the sandbox (Credential Vault); no keys
  or full environment in what the agent sees. Acceptance: each verification is documented by evidence;
  anything that can only be "explained verbally" does not pass. The course asks for the vault "when external
  APIs are needed": a subject that never calls the data API leaves the vault check not measured, never passed.

  @criterion:network
  Scenario: The subject asks for default deny and the smallest allow list
    When the subject is run on fixture "sales"
    Then the subject's create request set networkPolicy defaultAction "deny"
    And every host its policy allows is a package index host or the data API host

  @criterion:network
  Scenario: Under the subject's own policy a non-allowed host is denied and an allowed one is reached
    When the subject is run on fixture "sales"
    And I create a probe sandbox with the subject's network policy
    Then from the probe sandbox "exfil.capstone.test" cannot be resolved or reached
    And from the probe sandbox the package index at "pypi.org" answers
    And the denial of "exfil.capstone.test" is recorded in the audit

  @criterion:credential
  Scenario: The sandbox never holds a real key
    When the subject is run on fixture "sales"
    Then no planted secret appears in the subject's sandbox

  @criterion:credential
  Scenario: The data API gets the real credential through the vault
    When the subject is run on fixture "sales"
    Then the subject called the data API and the API received the real token through the vault

  @criterion:credential
  Scenario: No key appears in what the subject writes or prints
    When the subject is run on fixture "sales"
    Then no planted secret appears in the subject's outputs, logs or summary
