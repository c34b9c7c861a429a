@milestone:M0
Feature: M0 · Contract verification over raw HTTP
  The course: over raw HTTP, no SDK, create a sandbox, resolve its endpoint and delete it, once each;
  create answers 202 and delete 204; without the API key the server answers 401. Acceptance: the request
  lines, status codes and key response fields of these requests are recorded. Without that record it is
  not complete. Measured on the submission's own contract check (capstone.yaml: contract), which writes
  {out}/contract.json; the server's audit (or the recording proxy) must have seen the same exchanges from
  that invocation. The harness's own contract check is the target preflight, never scored.

  @criterion:observability
  Scenario: The submission's contract check records create, endpoint, 401, delete and 404 as the server saw them
    When the submission's contract check is run
    Then its record holds create 202, endpoint 200 without a scheme, unauthorized 401, delete 204 and get after delete 404
    And every exchange in its record is one the server saw from that invocation
