@milestone:M2
Feature: M2 · Analysis pipeline
  The course: upload the CSV, run the analysis script, produce report.md and chart.png, read both back to
  the host, and recompute at least two key numbers on the host with independent code. Acceptance: the
  numbers in the report match the host recomputation (floating-point error allowed), the chart opens, and
  stderr is visible when the script fails.

  @criterion:function
  Scenario: The subject turns a CSV and a question into a report, a chart and a run summary
    When the subject is run on fixture "sales"
    Then the subject exited 0
    And the subject wrote a non-empty report.md
    And the subject's chart.png decodes as a PNG of sensible size
    And the subject's summary.json validates against the schema

  @criterion:accuracy
  Scenario: The claimed key numbers match the harness's own recomputation
    When the subject is run on fixture "sales"
    Then the subject claims at least 2 key numbers
    And every number the subject claims matches the host recomputation
    And the claimed row count matches the host recomputation
    And every number the subject claims appears in report.md

  @criterion:accuracy @criterion:observability
  Scenario: The subject's claims are backed by the server's audit trail
    When the subject is run on fixture "sales"
    Then the sandbox id in the summary is one the subject created
    And the sandbox was deleted and a later GET answers 404
    And every step the summary claims ran in that sandbox with the claimed exit code
    And the input uploaded to the sandbox has the fixture's sha256

  @criterion:accuracy
  Scenario Outline: Awkward inputs are read correctly: <fixture>
    When the subject is run on fixture "<fixture>"
    Then the subject exited 0
    And every number the subject claims matches the host recomputation
    And the claimed row count matches the host recomputation

    Examples:
      | fixture        |
      | missing_values |
      | quoted_fields  |
      | bom_utf8       |
      | semicolon      |
      | latin1         |

  @criterion:observability
  Scenario Outline: A broken input is a visible failure, not a silent success: <fixture>
    When the subject is run on fixture "<fixture>"
    Then the subject exited non-zero or reported 0 rows
    And if it failed, the summary shows the sandbox's stderr and an error class

    Examples:
      | fixture     |
      | header_only |
      | empty       |
      | malformed   |

  @criterion:function @large
  Scenario: A 50 MB input goes through
    When the subject is run on a generated CSV of at least 50 MB
    Then the subject exited 0
    And the claimed row count matches the host recomputation
