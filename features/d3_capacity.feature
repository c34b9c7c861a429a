@drill:D3
Feature: D3 · 429, insufficient capacity
  The course: shrink a Kubernetes pool to one and create concurrently; expect 429 with Retry-After, a
  bounded backoff, then "insufficient capacity". OpenSandbox 1.1.1 never sends 429 (an exhausted pool
  answers 504 POD_READY_TIMEOUT), and the bundled server has no pool. Without a cluster the course says
  to mark this drill "not actually measured".

  @criterion:budget
  Scenario: Capacity exhaustion is handled with bounded backoff
    Given the target can exhaust sandbox capacity on demand
    When the subject is run on fixture "sales"
    Then the subject's summary classifies the error as "capacity"
