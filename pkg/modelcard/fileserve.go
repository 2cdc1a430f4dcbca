package modelcard

// FilesEndpoint is the name of the endpoint every worker serves, in its
// model's namespace and component, to hand out the files its cards name
// (by checksum). Frontends fetch model files from it.
const FilesEndpoint = "model_files"

// FileChunkSize is the largest piece of a file in one FileChunk.
const FileChunkSize = 1 << 20

// FileRequest asks a worker's files endpoint for one file by checksum,
// from Offset on.
type FileRequest struct {
	// Checksum is the file's "sha256:<hex>".
	Checksum string `json:"checksum"`
	// Offset is where to start, in bytes (0: the whole file).
	Offset int64 `json:"offset,omitempty"`
}

// FileChunk is one response item of the files endpoint: Data is the file
// from Offset on, at most FileChunkSize bytes; Size is the whole file's
// length. Chunks come in order and cover the file from the requested
// offset to its end. Error is set (and Data empty) when the worker does
// not have the file.
type FileChunk struct {
	Offset int64  `json:"offset"`
	Size   int64  `json:"size"`
	Data   []byte `json:"data,omitempty"`
	Error  string `json:"error,omitempty"`
}
