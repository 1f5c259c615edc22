package engine

import (
	"context"
	"time"

	"github.com/parley-chat/parley/wire"
)

// Upload is what survives a killed upload so that sending the same file
// again resumes it: the recipient (a device address, or "group:" and the
// group's ID in hex), the file (path, size and change time, to notice a
// changed file), the blob, the logical ID chosen for the manifest, the
// chunk size and the salt of the file key. The key itself is never stored:
// it is derived from the identity key and the salt, so the record holds no
// secret. The relay's BlobHeld is the upload's durable progress.
type Upload struct {
	Salt      [32]byte
	To        string
	Path      string
	Size      int64
	ModTime   int64 // Unix nanoseconds
	Blob      wire.BlobID
	ID        wire.LogicalID
	ChunkSize uint32
	At        time.Time
}

// UploadBegin records an upload before its first chunk.
type UploadBegin struct{ Upload Upload }

// UploadEnd forgets an upload: its manifest is stored, or it cannot go on
// (the file changed, the relay let the blob go). Forgetting one that is not
// there changes nothing.
type UploadEnd struct{ Salt [32]byte }

func (UploadBegin) plan() {}
func (UploadEnd) plan()   {}

// Kind implements Plan.
func (UploadBegin) Kind() string { return "upload-begin" }

// Kind implements Plan.
func (UploadEnd) Kind() string { return "upload-end" }

// Uploads lists the uploads a killed run left: sending the same file to
// the same recipient again resumes each.
func (c *Client) Uploads(ctx context.Context) ([]Upload, error) {
	return c.store.Uploads(ctx, "")
}

// findUpload returns the record of an interrupted upload of path to the
// recipient key to, if there is one.
func (c *Client) findUpload(ctx context.Context, to, path string) (*Upload, error) {
	ups, err := c.store.Uploads(ctx, to)
	if err != nil {
		return nil, err
	}
	for i := range ups {
		if ups[i].Path == path {
			return &ups[i], nil
		}
	}
	return nil, nil
}

// endUpload forgets an upload.
func (c *Client) endUpload(ctx context.Context, u *Upload) error {
	_, err := c.store.Apply(ctx, UploadEnd{Salt: u.Salt})
	return err
}
