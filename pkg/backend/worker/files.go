package worker

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/dynamo-go/dynamo/pkg/modelcard"
	"github.com/dynamo-go/dynamo/pkg/runtime"
)

// fileServer answers the files endpoint: the model files of the card this
// worker publishes, by checksum, in chunks (see modelcard.FileRequest).
type fileServer struct {
	files map[string][]byte // checksum -> contents
}

func newFileServer(card *modelcard.Card) *fileServer {
	s := &fileServer{files: map[string][]byte{}}
	for _, f := range card.Files() {
		s.files[f.Checksum] = f.Bytes()
	}
	return s
}

// serve serves the files endpoint of the worker's component until ctx
// ends.
func (s *fileServer) serve(ctx context.Context, rt *runtime.DistributedRuntime, ep runtime.EndpointID) error {
	ep.Name = modelcard.FilesEndpoint
	err := rt.Endpoint(ep).Serve(ctx, runtime.HandlerFunc(s.handle))
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// handle streams one file from the requested offset, a chunk per item.
func (s *fileServer) handle(rc *runtime.Context, payload []byte, emit func([]byte) error) error {
	var req modelcard.FileRequest
	if err := json.Unmarshal(payload, &req); err != nil {
		return runtime.NewError(runtime.TypeInvalidArgument, "bad file request: %v", err)
	}
	b, ok := s.files[req.Checksum]
	if !ok {
		return runtime.NewError(runtime.TypeInvalidArgument, "no model file with checksum %q here", req.Checksum)
	}
	if req.Offset < 0 || req.Offset > int64(len(b)) {
		return runtime.NewError(runtime.TypeInvalidArgument, "offset %d outside the file (%d bytes)", req.Offset, len(b))
	}
	for off := req.Offset; ; {
		end := min(off+modelcard.FileChunkSize, int64(len(b)))
		item, err := json.Marshal(modelcard.FileChunk{Offset: off, Size: int64(len(b)), Data: b[off:end]})
		if err != nil {
			return err
		}
		if err := emit(item); err != nil {
			return err
		}
		if off = end; off >= int64(len(b)) || rc.IsStopped() {
			return nil
		}
	}
}
