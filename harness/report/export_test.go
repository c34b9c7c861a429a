package report

// Internals the external tests (package report_test) check.

// RestsOnProvenance is restsOnProvenance.
var RestsOnProvenance = restsOnProvenance

// JournalKeyOf is the journal key kept for runID in keyDir.
func JournalKeyOf(keyDir, runID string) (string, error) {
	k, err := loadJournalKey(keyDir, runID)
	if err != nil {
		return "", err
	}
	return k.Key, nil
}

// MaxCallMarkers is maxCallMarkers.
const MaxCallMarkers = maxCallMarkers
