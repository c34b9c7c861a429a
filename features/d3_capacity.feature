@drill:D3
Feature: D3 · 429, insufficient capacity
  The course: shrink a Kubernetes pool to one and create concurrently; expect 429 with Retry-After, a
  bounded back-off, then "insufficient capacity" reported to the user. OpenSandbox 1.1.1 sends it only from a
  Kubernetes pool (429 KUBERNETES::POOL_CAPACITY_EXHAUSTED with Retry-After); Docker has no pools. The bundled
  server simulates it in that form: while the fault is on, every create of the run's key answers 429 with
  Retry-After. Against a real server the subject's recording proxy answers the run's creates itself in the same
  form, for the run's key only and never forwarded; every verdict then says "429 injected by the harness's
  recording proxy (OpenSandbox's docker runtime has no pools)", and the attempts are judged from the proxy's records.

  @criterion:budget @fault
  Scenario: Capacity exhaustion is met with a bounded back-off that respects Retry-After
    Given the platform answers every create with 429 and Retry-After 2 seconds as a simulated fault
    When the subject is run on fixture "sales"
    Then the subject exited non-zero
    And the subject's summary classifies the error as "capacity"
    And the subject tried to create at most 5 times
    And the subject waited at least the Retry-After between its create attempts
