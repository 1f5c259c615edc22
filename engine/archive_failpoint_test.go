package engine_test

import (
	"context"
	"os"
	"path/filepath"

	"github.com/parley-chat/parley/engine"
)

// Restores in the failpoint matrix: alice/1 backs up (her history holds
// bob's "hi" and her "hello"), carol/1 starts an import of that archive
// (ImportStart), and the target stores it (ImportRecords, one batch).
// After any failure carol's history from bob holds "hi" exactly once.

func (w fpWorld) archiveFile() string { return filepath.Join(w.root, "backup.parley") }

// archiveOp runs the archive operations of the matrix.
func archiveOp(ctx context.Context, w fpWorld, st engine.Store, c *engine.Client, name string) (bool, error) {
	switch name {
	case "backup":
		f, err := os.Create(w.archiveFile())
		if err != nil {
			return true, err
		}
		defer f.Close()
		_, err = c.Backup(ctx, f, archivePass, testArchiveKDF, nil)
		return true, err
	case "importstart", "import":
		f, err := os.Open(w.archiveFile())
		if err != nil {
			return true, err
		}
		defer f.Close()
		if name == "importstart" {
			chk, err := engine.CheckArchive(f, archivePass, testArchiveKDF)
			if err != nil {
				return true, err
			}
			_, err = st.Apply(ctx, engine.ImportStart{Archive: chk.ID, Next: 1, Total: chk.End.Records, At: realNow()})
			return true, err
		}
		ar, err := engine.OpenArchive(f, archivePass, testArchiveKDF)
		if err != nil {
			return true, err
		}
		_, err = engine.ImportArchive(ctx, st, ar, 0, nil)
		return true, err
	}
	return false, nil
}

func archiveScenarios() []fpScenario {
	abc := []string{"alice/1", "bob/1", "carol/1"}
	setup := append(established(),
		fpStep{"bob/1", "send:alice/1:hi"}, fpStep{"alice/1", "sync"}, fpStep{"alice/1", "commitall"}, fpStep{"bob/1", "sync"},
		fpStep{"alice/1", "backup"}, fpStep{"carol/1", "importstart"})
	want := map[string]map[string][]string{"bob/1": {"alice/1": {"hello"}}, "alice/1": {"bob/1": {"hi"}}, "carol/1": {"bob/1": {"hi"}}}
	return []fpScenario{
		{name: "import archive", devices: abc, setup: setup, target: fpStep{"carol/1", "import"}, want: want},
	}
}
