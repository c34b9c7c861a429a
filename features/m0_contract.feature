@milestone:M0
Feature: M0 · Contract verification over raw HTTP
  The course: over raw HTTP, no SDK, create a sandbox, resolve its endpoint and delete it, once each;
  create answers 202 and delete 204; without the API key the server answers 401. Acceptance: the request
  lines, status codes and key response fields of these requests are recorded. Without that record it is
  not complete.

  @criterion:isolation @criterion:observability
  Scenario: Create, resolve, delete and the API key, recorded request by request
    When I create a sandbox over raw HTTP
    Then the response status is 202
    And the create response carries an id, a state and a createdAt
    When I resolve the sandbox's endpoint for port 44772
    Then the response status is 200
    And the endpoint carries no scheme
    And execd answers "/ping" on that endpoint
    When I send the same create request without the API key
    Then the response status is 401
    And the error code is "MISSING_API_KEY"
    When I delete the sandbox
    Then the response status is 204
    When I get the sandbox
    Then the response status is 404
    And the request lines, status codes and key fields are recorded as evidence
