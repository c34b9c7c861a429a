package report

import (
	"encoding/json"
	"os"
	"path/filepath"
)

// CucumberFile is godog's cucumber formatter output inside the bundle.
const CucumberFile = "cucumber.json"

// RepairCucumber makes sure a bundle's cucumber.json is valid JSON. godog
// creates the file when the run starts and writes it only when the run ends,
// so a killed run leaves it empty (or torn). An empty or invalid file is
// replaced by an empty cucumber report ("[]"); a torn one is kept beside it
// as cucumber.json.partial. It returns what it did ("" if nothing was needed).
func RepairCucumber(dir string) (string, error) {
	p := filepath.Join(dir, CucumberFile)
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if len(b) > 0 && json.Valid(b) {
		return "", nil
	}
	note := "cucumber.json was empty (the run was killed before godog wrote it); replaced by an empty cucumber report"
	if len(b) > 0 {
		if err := WriteFileAtomic(p+".partial", b); err != nil {
			return "", err
		}
		note = "cucumber.json was torn; kept as cucumber.json.partial and replaced by an empty cucumber report"
	}
	if err := WriteFileAtomic(p, []byte("[]\n")); err != nil {
		return "", err
	}
	return note, nil
}
